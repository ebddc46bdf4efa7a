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
        options=bpomp_corpus_options(),
    threads: 1
    shell:
        "poeval bpomp corpus {input} {params.options} --out {output.limericks} --report {output.report} > {log} 2>&1"


rule bpomp_pairs:
    input:
        unpack(bpomp_pairs_inputs),
    output:
        pairs=paths.pattern(paths.bpomp_pairs),
        report=paths.pattern(paths.bpomp_pairs_report),
    log:
        paths.log("bpomp", "pairs", "{task}"),
    params:
        options=bpomp_pairs_options,
    threads: 1
    shell:
        "poeval bpomp pairs {input.limericks} --task {wildcards.task} {params.options}"
        " --out {output.pairs} --report {output.report} > {log} 2>&1"


rule train_mlm:
    input:
        train=paths.train("en"),
        dev=paths.dev("en"),
    output:
        directory(paths.mlm_dir("en", "{mlm}")),
    log:
        paths.log("train_mlm", "en", "{mlm}"),
    params:
        mlm=lambda wc: as_json(BPOMP["mlm"][wc.mlm]),
    threads: config["threads"]
    shell:
        "poeval bpomp train-mlm --train {input.train} --dev {input.dev} --out {output} --config {params.mlm:q}"
        " --name {wildcards.mlm} --threads {threads} > {log} 2>&1"


rule bpomp_score:
    input:
        unpack(bpomp_score_inputs),
    output:
        scores=paths.pattern(paths.bpomp_scores),
        stats=paths.pattern(paths.bpomp_score_stats),
    log:
        paths.log("bpomp", "score", "{scorer}", "{task}"),
    params:
        model=bpomp_model,
        kind=lambda wc: BPOMP_SCORERS[wc.scorer]["kind"],
        variant=bpomp_variant,
        options=bpomp_score_options(),
    threads: config["threads"]
    shell:
        "poeval bpomp score {input.pairs} --model {params.model:q} --kind {params.kind} --variant {params.variant}"
        " {params.options} --threads {threads} --out {output.scores} --stats {output.stats} > {log} 2>&1"


rule bpomp_accuracy:
    input:
        paths.pattern(paths.bpomp_scores),
    output:
        paths.pattern(paths.bpomp_accuracy),
    log:
        paths.log("bpomp", "accuracy", "{scorer}", "{task}"),
    params:
        reps=BPOMP.get("bootstrap", {}).get("reps", 1000),
        seed=BPOMP.get("bootstrap", {}).get("seed", 1),
        kind=lambda wc: BPOMP_SCORERS[wc.scorer]["kind"],
        model=lambda wc: BPOMP_SCORERS[wc.scorer]["model"],
        variant=bpomp_variant,
    threads: 1
    shell:
        "poeval bpomp accuracy {input} --out {output} --bootstrap-reps {params.reps} --seed {params.seed}"
        " --scorer {wildcards.scorer} --kind {params.kind} --model-label {params.model:q}"
        " --variant {params.variant} > {log} 2>&1"


rule bpomp_bigrams:
    input:
        BPOMP.get("errors", {}).get("bigrams", paths.train("en")),
    output:
        paths.bpomp_bigrams(),
    log:
        paths.log("bpomp", "bigrams"),
    threads: 1
    shell:
        "poeval bpomp bigrams {input} --out {output} > {log} 2>&1"


rule bpomp_errors:
    input:
        scores=lambda wc: [paths.bpomp_scores(wc.scorer, task) for task in BPOMP_TASKS],
        bigrams=paths.bpomp_bigrams(),
    output:
        paths.pattern(paths.bpomp_errors),
    log:
        paths.log("bpomp", "errors", "{scorer}"),
    params:
        quantiles=" ".join(map(str, BPOMP.get("errors", {}).get("confidence_quantiles", [0.9, 0.75, 0.5, 0.25, 0.0]))),
    threads: 1
    shell:
        "poeval bpomp errors {input.scores} --bigrams {input.bigrams} --scorer {wildcards.scorer}"
        " --quantiles {params.quantiles} --out {output} --quiet > {log} 2>&1"


rule bpomp_accuracy_table:
    input:
        bpomp_accuracy_cells(),
    output:
        report(paths.table("bpomp_accuracy"), caption="../report/bpomp_accuracy.rst", category="BPoMP"),
    log:
        paths.log("tables", "bpomp_accuracy"),
    threads: 1
    shell:
        "poeval bpomp table accuracy {input} --out {output} > {log} 2>&1"


rule bpomp_errors_table:
    input:
        bpomp_error_cells(),
    output:
        report(paths.table("bpomp_errors"), caption="../report/bpomp_errors.rst", category="BPoMP"),
    log:
        paths.log("tables", "bpomp_errors"),
    threads: 1
    shell:
        "poeval bpomp table errors {input} --out {output} > {log} 2>&1"


rule bpomp_errors_figure:
    input:
        bpomp_error_cells(),
    output:
        report(paths.figure("bpomp_errors"), caption="../report/bpomp_errors_figure.rst", category="BPoMP"),
    log:
        paths.log("figures", "bpomp_errors"),
    threads: 1
    shell:
        "poeval bpomp table errors-figure {input} --out {output} > {log} 2>&1"
