rule sample:
    input:
        paths.pattern(paths.model_dir),
    output:
        samples=paths.pattern(paths.samples),
        stats=paths.pattern(paths.stats),
    log:
        paths.log("sample", "{lang}", "{system}", "{decoding}"),
    wildcard_constraints:
        system=not_one_of(SUPPLIED),   # a samples system's files are imported (rule import_samples)
    priority: 1
    resources:
        endpoint_requests=endpoint_requests,
        **generator_resources("sample"),
    params:
        job=job_of("sample"),   # poeval.jobs.sample
    threads: P["threads"]
    shell:
        "poeval sample {input:q} --job {params.job:q}"
        " --out {output.samples:q} --stats {output.stats:q} --threads {threads} > {log:q} 2>&1"


# A samples system (arch: samples): the user's file for one language and decoding name, through the
# samplers' validity rule, into the same two files a sampled system gets (poeval.generators.supplied).
rule import_samples:
    input:
        supplied_input,
    output:
        samples=paths.pattern(paths.samples),
        stats=paths.pattern(paths.stats),
    log:
        paths.log("import_samples", "{lang}", "{system}", "{decoding}"),
    wildcard_constraints:
        system=one_of(SUPPLIED),
    params:
        job=job_of("import_samples"),   # poeval.jobs.data: the file as params give it, the ids' prefix
    threads: 1
    shell:
        "poeval import-samples --job {params.job:q} --out {output.samples:q} --stats {output.stats:q} > {log:q} 2>&1"
