rule quatrains:
    input:
        corpus_input,
    output:
        quatrains=paths.pattern(paths.quatrains),
        report=paths.pattern(paths.corpus_report),
    log:
        paths.log("quatrains", "{lang}"),
    params:
        job=job_of("quatrains"),   # poeval.jobs.data
    threads: 1
    shell:
        "poeval quatrains --job {params.job:q} --out {output.quatrains:q} --report {output.report:q} > {log:q} 2>&1"


# Rhyme scheme and metre of every quatrain, labelled once per corpus: conditioned training reads them
# from the split files, and the rhyme metric takes the human distribution from them.
rule rhyme_labels:
    input:
        paths.pattern(paths.quatrains),
    output:
        paths.pattern(paths.labelled),
    log:
        paths.log("rhyme_labels", "{lang}"),
    params:
        job=job_of("rhyme_labels"),
    threads: 1
    shell:
        "poeval rhyme {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


rule split:
    input:
        paths.pattern(paths.labelled),
    output:
        train=paths.pattern(paths.train),
        dev=paths.pattern(paths.dev),
        human=[paths.human("{lang}", hid) for hid in HUMAN_IDS],
        report=paths.pattern(paths.split_report),
    log:
        paths.log("split", "{lang}"),
    params:
        job=job_of("split"),
    threads: 1
    shell:
        "poeval split --quatrains {input:q} --job {params.job:q}"
        " --train {output.train:q} --dev {output.dev:q} --human-out {output.human:q} --report {output.report:q} > {log:q} 2>&1"


# Training data of the poetry-specific generators (deepspeare, sa): pseudo-sonnets of the train split,
# and of dev for Table 1 (the paper counts both), and word2vec vectors for their embeddings
# (poetic.sonnets.recipe paper: the paper's sonnets, all of the train split, and word2vec on 70 % of them).
rule pseudo_sonnets:
    input:
        train=paths.pattern(paths.train),
        dev=paths.pattern(paths.dev),
    output:
        sonnets=paths.pattern(paths.sonnets),
        dev=paths.pattern(paths.dev_sonnets),
        report=paths.pattern(paths.sonnets_report),
    log:
        paths.log("pseudo_sonnets", "{lang}"),
    params:
        job=job_of("pseudo_sonnets"),
    threads: 1
    shell:
        "poeval sonnets --train {input.train:q} --dev {input.dev:q} --job {params.job:q}"
        " --out {output.sonnets:q} --dev-out {output.dev:q} --report {output.report:q} > {log:q} 2>&1"


rule word2vec:
    input:
        paths.pattern(paths.train),
    output:
        paths.pattern(paths.word2vec),
    log:
        paths.log("word2vec", "{lang}"),
    params:
        job=job_of("word2vec"),
    threads: 1
    shell:
        "poeval word2vec --train {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"
