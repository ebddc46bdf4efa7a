# Similarity between rows (poeval.metrics.similarity; not in the paper): one cell per pair of rows of a language
# (HUMAN's first sample and each system under the first decoding config; HUMAN against its second sample is the
# baseline), then a table and a heatmap of every cell. Targets only when metrics.similarity.enabled.
from poeval.jobs import similarity as similarity_jobs

SIMILARITY_ENABLED = P["metrics"]["similarity"]["enabled"]


wildcard_constraints:
    row_a="[^/~]+",
    row_b="[^/~]+",


def similarity_inputs(wildcards):
    """The two rows' samples, the training split and its cached embeddings (HUMAN quatrains' embeddings)."""
    job = STEPS["similarity_cell"].build(P, **dict(wildcards.items()))
    a, b = similarity_jobs.samples_of(job)
    return {"a": a, "b": b, "reference": paths.train(wildcards.lang), "embeddings": paths.embeddings(wildcards.lang)}


rule similarity_cell:
    input:
        unpack(similarity_inputs),
    output:
        paths.pattern(paths.similarity_cell),
    log:
        paths.log("similarity", "{lang}", "{row_a}~{row_b}"),
    params:
        job=job_of("similarity_cell"),   # poeval.jobs.similarity: the two rows, the measures' params
    threads: 1
    shell:
        "poeval similarity cell {input.a:q} {input.b:q} --reference {input.reference:q}"
        " --embeddings {input.embeddings:q} --job {params.job:q} --threads {threads} --out {output:q} > {log:q} 2>&1"


SIMILARITY_CELLS = similarity_jobs.cells(P) if SIMILARITY_ENABLED else []


rule similarity_table:
    input:
        SIMILARITY_CELLS,
    output:
        table=report(paths.table("similarity"), caption="../report/similarity.rst", **report_place("similarity")),
        ci=report(paths.table_ci("similarity"), caption="../report/similarity.rst", **report_place("similarity", "intervals")),
    log:
        paths.log("tables", "similarity"),
    params:
        job=job_of("similarity_table"),
        similarity=P["metrics"]["similarity"],   # for the caption
        threshold=P["metrics"]["memorization"]["quatrain"],   # for the caption
        encoders=semantic_encoders(),   # for the caption
    threads: 1
    shell:
        "poeval similarity table {input:q} --job {params.job:q} --out {output.table:q} --ci-out {output.ci:q}"
        " > {log:q} 2>&1"


rule similarity_figure:
    input:
        SIMILARITY_CELLS,
    output:
        report(paths.figure("similarity"), caption="../report/similarity_figure.rst", **figure_place("similarity")),
    log:
        paths.log("figures", "similarity"),
    params:
        job=job_of("similarity_figure"),
        similarity=P["metrics"]["similarity"],   # for the caption
    threads: 1
    shell:
        "poeval similarity figure {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


def similarity_targets():
    if not SIMILARITY_ENABLED:
        return []
    return [paths.table("similarity"), paths.figure("similarity")]
