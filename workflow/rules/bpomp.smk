# BPoMP: limerick corpus -> minimal pairs per task -> scores per (scorer, task) -> accuracy cells and
# error analysis -> results/tables/bpomp_accuracy.tsv and bpomp_errors.tsv, results/figures/bpomp_errors.png. rule all asks for the tables
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
        stamp=bpomp_stamp("bpomp_corpus"),
        options=bpomp_corpus_options(),
    threads: 1
    shell:
        "poeval bpomp corpus {input:q} {params.options} --out {output.limericks:q} --report {output.report:q}"
        " --stamp {params.stamp:q} > {log:q} 2>&1"


rule bpomp_pairs:
    input:
        unpack(bpomp_pairs_inputs),
    output:
        pairs=paths.pattern(paths.bpomp_pairs),
        report=paths.pattern(paths.bpomp_pairs_report),
    log:
        paths.log("bpomp", "pairs", "{task}"),
    params:
        stamp=bpomp_stamp("bpomp_pairs"),
        options=bpomp_pairs_options,
    threads: 1
    shell:
        "poeval bpomp pairs {input.limericks:q} --task {wildcards.task:q} {params.options}"
        " --out {output.pairs:q} --report {output.report:q} --stamp {params.stamp:q} > {log:q} 2>&1"


rule train_mlm:
    input:
        train=paths.train("en"),
        dev=paths.dev("en"),
    output:
        directory(paths.mlm_dir("en", "{mlm}")),
    log:
        paths.log("train_mlm", "en", "{mlm}"),
    params:
        mlm=lambda wc: as_json(config["bpomp"]["mlm"][wc.mlm]),   # as written, as every command line
    threads: P["threads"]
    shell:
        "poeval bpomp train-mlm --train {input.train:q} --dev {input.dev:q} --out {output:q} --config {params.mlm:q}"
        " --name {wildcards.mlm:q} --threads {threads} > {log:q} 2>&1"


rule bpomp_score:
    input:
        unpack(bpomp_score_inputs),
    output:
        scores=paths.pattern(paths.bpomp_scores),
        stats=paths.pattern(paths.bpomp_score_stats),
    log:
        paths.log("bpomp", "score", "{scorer}", "{task}"),
    params:
        stamp=bpomp_stamp("bpomp_score"),
        model=bpomp_model,
        model_param=bpomp_model_param,
        kind=lambda wc: BPOMP_SCORERS[wc.scorer]["kind"],
        variant=bpomp_variant,
        options=bpomp_score_options(),
    threads: P["threads"]
    shell:
        "poeval bpomp score {input.pairs:q} --model {params.model:q} --model-param {params.model_param:q}"
        " --kind {params.kind:q} --variant {params.variant:q}"
        " {params.options} --threads {threads} --out {output.scores:q} --stats {output.stats:q}"
        " --stamp {params.stamp:q} > {log:q} 2>&1"


rule bpomp_accuracy:
    input:
        paths.pattern(paths.bpomp_scores),
    output:
        paths.pattern(paths.bpomp_accuracy),
    log:
        paths.log("bpomp", "accuracy", "{scorer}", "{task}"),
    params:
        stamp=bpomp_stamp("bpomp_accuracy"),
        reps=BPOMP["bootstrap"]["reps"],
        seed=BPOMP["bootstrap"]["seed"],
        kind=lambda wc: BPOMP_SCORERS[wc.scorer]["kind"],
        model=lambda wc: BPOMP_SCORERS[wc.scorer]["model"],
        variant=bpomp_variant,
    threads: 1
    shell:
        "poeval bpomp accuracy {input:q} --out {output:q} --bootstrap-reps {params.reps:q} --seed {params.seed:q}"
        " --scorer {wildcards.scorer:q} --kind {params.kind:q} --model-label {params.model:q}"
        " --variant {params.variant:q} --stamp {params.stamp:q} > {log:q} 2>&1"


rule bpomp_bigrams:
    input:
        BPOMP["errors"]["bigrams"],
    output:
        paths.bpomp_bigrams(),
    log:
        paths.log("bpomp", "bigrams"),
    threads: 1
    shell:
        "poeval bpomp bigrams {input:q} --out {output:q} > {log:q} 2>&1"


rule bpomp_errors:
    input:
        scores=lambda wc: [paths.bpomp_scores(wc.scorer, task) for task in BPOMP_TASKS],
        bigrams=paths.bpomp_bigrams(),
    output:
        paths.pattern(paths.bpomp_errors),
    log:
        paths.log("bpomp", "errors", "{scorer}"),
    params:
        stamp=bpomp_stamp("bpomp_errors"),
        quantiles=BPOMP["errors"]["confidence_quantiles"],
    threads: 1
    shell:
        "poeval bpomp errors {input.scores:q} --bigrams {input.bigrams:q} --scorer {wildcards.scorer:q}"
        " --quantiles {params.quantiles:q} --out {output:q} --quiet --stamp {params.stamp:q} > {log:q} 2>&1"


rule bpomp_accuracy_table:
    input:
        bpomp_accuracy_cells(),
    output:
        report(paths.table("bpomp_accuracy"), caption="../report/bpomp_accuracy.rst", category=REPORT_CATEGORIES[4]),
    log:
        paths.log("tables", "bpomp_accuracy"),
    threads: 1
    shell:
        "poeval bpomp table accuracy {input:q} --out {output:q} > {log:q} 2>&1"


rule bpomp_errors_table:
    input:
        bpomp_error_cells(),
    output:
        report(paths.table("bpomp_errors"), caption="../report/bpomp_errors.rst", category=REPORT_CATEGORIES[4]),
    log:
        paths.log("tables", "bpomp_errors"),
    threads: 1
    shell:
        "poeval bpomp table errors {input:q} --out {output:q} > {log:q} 2>&1"


rule bpomp_errors_figure:
    input:
        bpomp_error_cells(),
    output:
        report(paths.figure("bpomp_errors"), caption="../report/bpomp_errors_figure.rst", category=REPORT_CATEGORIES[4]),
    log:
        paths.log("figures", "bpomp_errors"),
    threads: 1
    shell:
        "poeval bpomp table errors-figure {input:q} --out {output:q} > {log:q} 2>&1"
