rule quatrains:
    input:
        corpus_input,
    output:
        quatrains="data/{lang}/quatrains.jsonl",
        report="data/{lang}/corpus_report.json",
    log:
        "logs/quatrains/{lang}.log",
    params:
        corpus=lambda wc: as_json(config["corpus"][wc.lang]),
        quatrains=as_json(config["quatrains"]),
    threads: 1
    shell:
        "poeval quatrains --lang {wildcards.lang} --corpus {params.corpus:q} --quatrains {params.quatrains:q}"
        " --out {output.quatrains} --report {output.report} > {log} 2>&1"


# Rhyme scheme and metre of every quatrain, labelled once per corpus: conditioned training reads them
# from the split files, and the rhyme metric takes the human distribution from them.
rule rhyme_labels:
    input:
        "data/{lang}/quatrains.jsonl",
    output:
        "data/{lang}/labelled.jsonl",
    log:
        "logs/rhyme_labels/{lang}.log",
    threads: 1
    shell:
        "poeval rhyme {input} --lang {wildcards.lang} --meter --out {output} > {log} 2>&1"


rule split:
    input:
        "data/{lang}/labelled.jsonl",
    output:
        train="data/{lang}/train.jsonl",
        dev="data/{lang}/dev.jsonl",
        human=expand("data/{{lang}}/human/{hid}.jsonl", hid=HUMAN_IDS),
        report="data/{lang}/split_report.json",
    log:
        "logs/split/{lang}.log",
    params:
        split=as_json(config["split"]),
        human=as_json(config["human"]),
    threads: 1
    shell:
        "poeval split --quatrains {input} --split {params.split:q} --human {params.human:q}"
        " --train {output.train} --dev {output.dev} --human-out {output.human} --report {output.report} > {log} 2>&1"


# Training data of the poetry-specific generators (deepspeare, sa): pseudo-sonnets of the train split,
# and of dev for Table 1 (the paper counts both), and word2vec vectors for their embeddings.
rule pseudo_sonnets:
    input:
        train="data/{lang}/train.jsonl",
        dev="data/{lang}/dev.jsonl",
    output:
        sonnets="data/{lang}/sonnets.jsonl",
        dev="data/{lang}/dev_sonnets.jsonl",
        report="data/{lang}/sonnets_report.json",
    log:
        "logs/pseudo_sonnets/{lang}.log",
    params:
        sonnets=as_json(config["poetic"]["sonnets"]),
    threads: 1
    shell:
        "poeval sonnets --train {input.train} --dev {input.dev} --sonnets {params.sonnets:q}"
        " --out {output.sonnets} --dev-out {output.dev} --report {output.report} > {log} 2>&1"


rule word2vec:
    input:
        "data/{lang}/train.jsonl",
    output:
        "data/{lang}/word2vec.txt",
    log:
        "logs/word2vec/{lang}.log",
    params:
        word2vec=as_json(config["poetic"]["word2vec"]),
    threads: 1
    shell:
        "poeval word2vec --train {input} --word2vec {params.word2vec:q} --out {output} > {log} 2>&1"
