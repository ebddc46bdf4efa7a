rule train:
    input:
        train="data/{lang}/train.jsonl",
        dev="data/{lang}/dev.jsonl",
    output:
        directory("models/{lang}/{system}"),
    log:
        "logs/train/{lang}/{system}.log",
    params:
        model=lambda wc: as_json(config["models"][wc.system]),
        training=as_json(config["training"]),
    threads: config["threads"]
    shell:
        "poeval train --train {input.train} --dev {input.dev} --out {output} --model {params.model:q}"
        " --training {params.training:q} --name {wildcards.system} --threads {threads} > {log} 2>&1"
