rule sample:
    input:
        "models/{lang}/{system}",
    output:
        samples="results/samples/{lang}/{system}/{decoding}.jsonl",
        stats="results/samples/{lang}/{system}/{decoding}.stats.json",
    log:
        "logs/sample/{lang}/{system}/{decoding}.log",
    params:
        decoding=lambda wc: as_json(config["decoding"][wc.decoding]),
        sampling=as_json(config["sampling"]),
        prefix="{lang}-{system}-{decoding}-",
    threads: config["threads"]
    shell:
        "poeval sample {input} --decoding {params.decoding:q} --sampling {params.sampling:q}"
        " --out {output.samples} --stats {output.stats} --id-prefix {params.prefix} --threads {threads} > {log} 2>&1"
