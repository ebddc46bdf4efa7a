rule train:
    input:
        unpack(train_inputs),
    output:
        directory(paths.pattern(paths.model_dir)),
    log:
        paths.log("train", "{lang}", "{system}"),
    params:
        model=lambda wc: as_json(poeval_config.model_for_lang(config["models"][wc.system], wc.lang)),
        training=as_json(config["training"]),
        poetic=train_poetic_options,
    threads: config["threads"]
    shell:
        "poeval train --train {input.train} --dev {input.dev} --out {output} --model {params.model:q}"
        " --training {params.training:q} --name {wildcards.system} --threads {threads} {params.poetic}"
        " > {log} 2>&1"
