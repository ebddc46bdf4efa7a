rule table1:
    input:
        [path for _, path in table_jobs.table1_items(P)],
    output:
        report(paths.table("table1"), caption="../report/table1.rst", **report_place("table1")),
    log:
        paths.log("tables", "table1"),
    params:
        # each row's language and split, in the order of the input files (poeval.report.table_jobs)
        job=job_of("table1"),
    threads: 1
    shell:
        "poeval table table1 {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


rule table4:
    input:
        [path for _, path in table_jobs.model_items(P)],
    output:
        report(paths.table("table4"), caption="../report/table4.rst", **report_place("table4")),
    log:
        paths.log("tables", "table4"),
    params:
        job=job_of("table4"),
    threads: 1
    shell:
        "poeval table table4 {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


# The samples' validity rate, distinct share and failure reasons, one row per sample (every decoding).
rule sampling_table:
    input:
        [path for _, path in table_jobs.sample_items(P)],
    output:
        report(paths.table("sampling"), caption="../report/sampling.rst", **report_place("sampling")),
    log:
        paths.log("tables", "sampling"),
    params:
        job=job_of("sampling_table"),
    threads: 1
    shell:
        "poeval table sampling {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


# Tables 2, 3, 5, 6 and memorization: one row per language x system (first decoding config; Tables 5
# and 6 also the whole training set, HUMAN (train)); Tables 7, 8, 9, 12: one row per language x system x
# decoding config; Table 10 the poetry-specific systems and Table 11 one system (tables.table11.system)
# under every decoding config. Each is assembled from the cell files (Table 8: semantic and memorization
# cells), with a long-form table of intervals and one of significance tests against HUMAN next to it. One rule per table (named after it),
# because a report caption path cannot hold a wildcard: each table gets its own caption file.
for _table in FAMILY_OF_TABLE:

    rule:
        name:
            _table
        input:
            table_cells(_table),
        output:
            # a family record's caption text goes in the generic caption (report_tables.caption_params)
            table=report(paths.table(_table), caption="../report/family.rst" if report_tables.caption_params(_table)
                         else f"../report/{_table}.rst", **report_place(_table)),
            ci=report(paths.table_ci(_table), caption="../report/ci.rst", **report_place(_table, "intervals")),
            tests=report(paths.table_tests(_table), caption="../report/tests.rst", **report_place(_table, "tests")),
        log:
            paths.log("tables", _table),
        params:
            job=job_of(_table),
            table=_table,
            # for the captions of the tables that embed (semantic, diversity); the others never rerun for it
            encoders=semantic_encoders() if {"semantic", "diversity"} & set(table_families(_table)) else "",
            # the sections the captions name switches of (Tables 2 and 5, the tests): only this table's families
            metrics=table_jobs.caption_metrics(P, _table),
            pooled=", ".join(pooled_columns(_table)) or "none",   # for the caption
            scope=report_tables.scope_note(_table, DECODINGS, table_systems(_table)),   # for the caption
            **report_tables.caption_params(_table),
        threads: 1
        shell:
            "poeval table {params.table:q} {input:q} --job {params.job:q} --out {output.table:q}"
            " --ci-out {output.ci:q} --tests-out {output.tests:q} > {log:q} 2>&1"


# The common-n companion of each family table (tables.common_n): the same rows, each recomputed on n quatrains
# drawn from its sample (a row configured to hold no more than n keeps its own cell), so that the pooled
# measures, which depend on n, compare across rows.
for _table, _n in COMMON_N_TABLES.items():

    rule:
        name:
            common_n_name(_table)
        input:
            table_cells(_table, _n),
        output:
            table=report(paths.table(common_n_name(_table)), caption="../report/common_n.rst",
                         **report_place(_table, "common n")),
            ci=report(paths.table_ci(common_n_name(_table)), caption="../report/ci.rst",
                      **report_place(_table, "common n intervals")),
        log:
            paths.log("tables", common_n_name(_table)),
        params:
            job=job_of(common_n_name(_table)),
            table=_table,
            n=_n,  # for the caption
            pooled=", ".join(pooled_columns(_table)) or "none",   # for the caption
        threads: 1
        shell:
            "poeval table {params.table:q} {input:q} --job {params.job:q} --out {output.table:q}"
            " --ci-out {output.ci:q} > {log:q} 2>&1"


# How far each measure moves with n: every family's curve on the first HUMAN sample of each language.
rule n_sensitivity:
    input:
        [paths.n_curve(lang, family) for lang in LANGS for family in P["metrics"]["families"]],
    output:
        table=report(paths.table("n_sensitivity"), caption="../report/n_sensitivity.rst",
                     **report_place("n_sensitivity")),
        figure=report(paths.figure("n_sensitivity"), caption="../report/n_sensitivity.rst",
                      **figure_place("n_sensitivity")),
    log:
        paths.log("tables", "n_sensitivity"),
    params:
        job=job_of("n_sensitivity_table"),
        curve=P["tables"]["n_curve"],  # for the caption
    threads: 1
    shell:
        "poeval n-sensitivity {input:q} --job {params.job:q} --out {output.table:q} --figure {output.figure:q}"
        " > {log:q} 2>&1"


# The quality frontier (not in the paper; when the quality and diversity families both run): per system, each
# decoding config's diversity against its quality, the configs on the frontier flagged (poeval.report.frontier).
rule quality_frontier:
    input:
        table_cells("quality_decodings") + table_cells("diversity_decodings"),
    output:
        table=report(paths.table("quality_frontier"), caption="../report/quality_frontier.rst",
                     **report_place("quality_frontier")),
        figure=report(paths.figure("quality_frontier"), caption="../report/quality_frontier.rst",
                      **figure_place("quality_frontier")),
    log:
        paths.log("tables", "quality_frontier"),
    params:
        job=job_of("quality_frontier_table"),
        quality=P["metrics"]["quality"],  # for the caption
    threads: 1
    shell:
        "poeval frontier {input:q} --job {params.job:q} --out {output.table:q} --figure {output.figure:q}"
        " > {log:q} 2>&1"


# Figures (poeval.report.figures.FIGURES has the numbering): one rule per figure, for the same reason.
# `rule all` makes only the figures with something to draw in this run (poeval.report.figures.has_panels); one
# of a language or system that is not configured, asked for by name, draws a "not in this run" panel.
for _figure, _spec in FIGURES.items():

    rule:
        name:
            _figure
        input:
            figure_cells(_figure),
        output:
            report(paths.figure(_figure), caption=f"../report/{_figure}.rst", **figure_place(_figure)),
        log:
            paths.log("figures", _figure),
        params:
            # the systems' kinds, or the one system, its panels and the figure it repeats (poeval.report.table_jobs)
            job=job_of(_figure),
            figure=_figure,
            shows=figure_shows(_figure),  # for the caption
        threads: 1
        shell:
            "poeval figure {params.figure:q} {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


# Training curves as flat TSVs, one per checkpoint: `dvc plots show` draws them (dvc.yaml `plots`).
rule training_curve:
    input:
        paths.pattern(paths.model_dir),
    output:
        report(paths.pattern(paths.curve), caption="../report/curve.rst", category=REPORT_CATEGORIES[5],
               subcategory="{lang}", labels={"system": "{system}"}),
    log:
        paths.log("curves", "{lang}", "{system}"),
    params:
        job=job_of("training_curve"),   # poeval.jobs.data
    threads: 1
    shell:
        "poeval curve {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"
