rule sample:
    input:
        paths.pattern(paths.model_dir),
    output:
        samples=paths.pattern(paths.samples),
        stats=paths.pattern(paths.stats),
    log:
        paths.log("sample", "{lang}", "{system}", "{decoding}"),
    priority: 1
    params:
        decoding=lambda wc: as_json(config["decoding"][wc.decoding]),
        sampling=lambda wc: as_json(registry.sampling_params(config["models"][wc.system], config["sampling"])),
        prefix="{lang}-{system}-{decoding}-",
    threads: P["threads"]
    shell:
        "poeval sample {input:q} --decoding {params.decoding:q} --sampling {params.sampling:q}"
        " --out {output.samples:q} --stats {output.stats:q} --id-prefix {params.prefix:q} --threads {threads} > {log:q} 2>&1"
