# Reference embeddings: computed once per (encoder, training split) and reused by every semantic cell.
rule embed_reference:
    input:
        paths.pattern(paths.train),
    output:
        npy=paths.pattern(paths.embeddings),
        meta=paths.pattern(paths.embeddings_meta),
    log:
        paths.log("embed", "{lang}"),
    params:
        job=job_of("embed_reference"),   # poeval.jobs.caches
    threads: P["threads"]
    shell:
        "poeval embed {input:q} --job {params.job:q} --out {output.npy:q} --threads {threads} > {log:q} 2>&1"


# Memorization index: the training split's units, deduplicated, sorted and projected once per language
# (poeval.metrics.memorization), reused by every memorization cell.
rule memorization_index:
    input:
        paths.pattern(paths.train),
    output:
        directory(paths.pattern(paths.memorization_index)),
    log:
        paths.log("index", "{lang}"),
    params:
        job=job_of("memorization_index"),
    shell:
        "poeval index {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


# Topic model (not in the paper): an LDA model of the training split, trained once per language
# (poeval.metrics.topics), reused by every topics cell; top_words.tsv beside it shows what the topics are.
rule topic_model:
    input:
        paths.pattern(paths.train),
    output:
        directory(paths.pattern(paths.topic_model)),
    log:
        paths.log("topics", "{lang}"),
    params:
        job=job_of("topic_model"),
    threads: 1
    shell:
        "poeval topics {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


# Creativity index (not in the paper): the language's whole corpus (params corpus.<lang>, every line, before
# the quatrain filters) as word ids sorted by their next metrics.creativity.max_n words
# (poeval.metrics.creativity), reused by every creativity cell.
rule creativity_index:
    input:
        corpus_input,
    output:
        directory(paths.pattern(paths.creativity_index)),
    log:
        paths.log("creativity_index", "{lang}"),
    params:
        job=job_of("creativity_index"),   # poeval.jobs.caches
    threads: 1
    shell:
        "poeval creativity-index --job {params.job:q} --out {output:q} > {log:q} 2>&1"


# `poeval evaluate` of a cell's job (metric_cell, metric_cell_at_n).
EVALUATE = ("poeval evaluate {input.samples:q} --reference {input.reference:q} --job {params.job:q} {params.cached}"
            " --threads {threads} --out {output:q} > {log:q} 2>&1")


# One file per table cell: a metric family of one sample (lang x system x decoding config). The command
# gets its typed job (poeval.jobs.cell: what it computes) and its paths; the family's record
# (poeval.metrics.families) names the caches it reads and whether it uses threads.
rule metric_cell:
    input:
        unpack(cell_inputs),
    output:
        paths.pattern(paths.cell),
    log:
        paths.log("metrics", "{lang}", "{system}", "{decoding}", "{family}"),
    params:
        job=job_of("metric_cell"),
        cached=cell_cached,
    threads: cell_threads
    shell:
        EVALUATE


# The cell of a common-n table (poeval.report.tables.common_n): the same family on n quatrains drawn from the
# sample (seed tables.common_n.seed), against the same reference.
rule metric_cell_at_n:
    input:
        unpack(cell_inputs),
    output:
        paths.pattern(paths.cell_at_n),
    log:
        paths.log("metrics", "{lang}", "{system}", "{decoding}", "{family}.n{n}"),
    params:
        job=job_of("metric_cell_at_n"),
        cached=cell_cached,
    wildcard_constraints:
        n=r"\d+",
    threads: cell_threads
    shell:
        EVALUATE


# The n-sensitivity curve of a family: its measures on seeded subsamples (tables.n_curve: sizes, draws) of the
# first HUMAN sample; rule n_sensitivity puts every family's in one table and figure.
rule n_curve:
    input:
        unpack(curve_inputs),
    output:
        paths.pattern(paths.n_curve),
    log:
        paths.log("metrics", "{lang}", "n_curve", "{family}"),
    params:
        job=job_of("n_curve"),
        cached=cell_cached,
    threads: cell_threads
    shell:
        EVALUATE
