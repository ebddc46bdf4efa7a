# BPoMP: limerick corpus -> minimal pairs per task -> scores per (scorer, task) -> accuracy cells and
# error analysis -> results/tables/bpomp_accuracy.tsv, bpomp_errors.tsv and bpomp_by_size.tsv, results/figures/bpomp_errors.png
# and bpomp_by_size.png. rule all asks for the tables
# only when bpomp.enabled (params.yaml: false). Causal scorers reuse the generators' checkpoints
# models/en/<system> (rule train); masked scorers named under bpomp.mlm are trained by rule train_mlm
# into results/bpomp/models/en/<name> (inside results/bpomp, a DVC output of the tables stage, apart from the generators).


wildcard_constraints:
    task=bpomp_names_regex(BPOMP_TASKS),
    scorer=bpomp_names_regex(BPOMP_SCORERS),
    mlm=bpomp_names_regex(BPOMP_MLMS),


rule bpomp_corpus:
    input:
        bpomp_corpus_input,
    output:
        limericks=paths.limericks(),
        report=paths.limericks_report(),
    log:
        paths.log("bpomp", "corpus"),
    params:
        job=job_of("bpomp_corpus"),
    threads: 1
    shell:
        "poeval bpomp corpus {input:q} --job {params.job:q} --out {output.limericks:q} --report {output.report:q}"
        " > {log:q} 2>&1"


rule bpomp_pairs:
    input:
        unpack(bpomp_pairs_inputs),
    output:
        pairs=paths.pattern(paths.bpomp_pairs),
        report=paths.pattern(paths.bpomp_pairs_report),
    log:
        paths.log("bpomp", "pairs", "{task}"),
    params:
        job=job_of("bpomp_pairs"),
    threads: 1
    shell:
        "poeval bpomp pairs {input.limericks:q} --job {params.job:q}"
        " --out {output.pairs:q} --report {output.report:q} > {log:q} 2>&1"


rule train_mlm:
    input:
        train=paths.train("en"),
        dev=paths.dev("en"),
    output:
        directory(paths.mlm_dir("en", "{mlm}")),
    log:
        paths.log("train_mlm", "en", "{mlm}"),
    params:
        job=job_of("train_mlm", lang="en"),
    threads: P["threads"]
    shell:
        "poeval bpomp train-mlm --train {input.train:q} --dev {input.dev:q} --out {output:q} --job {params.job:q}"
        " --threads {threads} > {log:q} 2>&1"


rule bpomp_score:
    input:
        unpack(bpomp_score_inputs),
    output:
        scores=paths.pattern(paths.bpomp_scores),
        stats=paths.pattern(paths.bpomp_score_stats),
    log:
        paths.log("bpomp", "score", "{scorer}", "{task}"),
    params:
        job=job_of("bpomp_score"),
    threads: P["threads"]
    shell:
        "poeval bpomp score {input.pairs:q} --job {params.job:q} --threads {threads}"
        " --out {output.scores:q} --stats {output.stats:q} > {log:q} 2>&1"


rule bpomp_accuracy:
    input:
        paths.pattern(paths.bpomp_scores),
    output:
        paths.pattern(paths.bpomp_accuracy),
    log:
        paths.log("bpomp", "accuracy", "{scorer}", "{task}"),
    params:
        job=job_of("bpomp_accuracy"),
    threads: 1
    shell:
        "poeval bpomp accuracy {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


rule bpomp_bigrams:
    input:
        BPOMP["errors"]["bigrams"],
    output:
        paths.bpomp_bigrams(),
    log:
        paths.log("bpomp", "bigrams"),
    params:
        job=job_of("bpomp_bigrams"),
    threads: 1
    shell:
        "poeval bpomp bigrams {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


rule bpomp_errors:
    input:
        scores=lambda wc: [paths.bpomp_scores(wc.scorer, task) for task in BPOMP_TASKS],
        bigrams=paths.bpomp_bigrams(),
    output:
        paths.pattern(paths.bpomp_errors),
    log:
        paths.log("bpomp", "errors", "{scorer}"),
    params:
        job=job_of("bpomp_errors"),
    threads: 1
    shell:
        "poeval bpomp errors {input.scores:q} --bigrams {input.bigrams:q} --job {params.job:q}"
        " --out {output:q} --quiet > {log:q} 2>&1"


rule bpomp_accuracy_table:
    input:
        bpomp_accuracy_cells(),
    output:
        report(paths.table("bpomp_accuracy"), caption="../report/bpomp_accuracy.rst", category=REPORT_CATEGORIES[4]),
    log:
        paths.log("tables", "bpomp_accuracy"),
    params:
        job=job_of("bpomp_accuracy_table"),
    threads: 1
    shell:
        "poeval bpomp table accuracy {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


rule bpomp_errors_table:
    input:
        bpomp_error_cells(),
    output:
        report(paths.table("bpomp_errors"), caption="../report/bpomp_errors.rst", category=REPORT_CATEGORIES[4]),
    log:
        paths.log("tables", "bpomp_errors"),
    params:
        job=job_of("bpomp_errors_table"),
    threads: 1
    shell:
        "poeval bpomp table errors {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


rule bpomp_errors_figure:
    input:
        bpomp_error_cells(),
    output:
        report(paths.figure("bpomp_errors"), caption="../report/bpomp_errors_figure.rst", category=REPORT_CATEGORIES[4]),
    log:
        paths.log("figures", "bpomp_errors"),
    params:
        job=job_of("bpomp_errors_figure"),
    threads: 1
    shell:
        "poeval bpomp table errors-figure {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


rule bpomp_size_table:
    input:
        cells=bpomp_accuracy_cells(),
        stats=bpomp_score_stats(),
    output:
        report(paths.table("bpomp_by_size"), caption="../report/bpomp_by_size.rst", category=REPORT_CATEGORIES[4]),
    log:
        paths.log("tables", "bpomp_by_size"),
    params:
        job=job_of("bpomp_size_table"),
    threads: 1
    shell:
        "poeval bpomp table by-size {input.cells:q} --stats {input.stats:q} --job {params.job:q} --out {output:q}"
        " > {log:q} 2>&1"


rule bpomp_size_figure:
    input:
        cells=bpomp_accuracy_cells(),
        stats=bpomp_score_stats(),
    output:
        report(paths.figure("bpomp_by_size"), caption="../report/bpomp_by_size_figure.rst",
               category=REPORT_CATEGORIES[4]),
    log:
        paths.log("figures", "bpomp_by_size"),
    params:
        job=job_of("bpomp_size_figure"),
    threads: 1
    shell:
        "poeval bpomp table by-size-figure {input.cells:q} --stats {input.stats:q} --job {params.job:q}"
        " --out {output:q} > {log:q} 2>&1"
