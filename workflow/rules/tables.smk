rule table1:
    input:
        [item.split(":", 2)[2] for item in table1_args()],
    output:
        report("results/tables/table1.tsv", caption="../report/table1.rst", category="Tables"),
    log:
        "logs/tables/table1.log",
    params:
        splits=table1_args(),
    threads: 1
    shell:
        "poeval table table1 {params.splits} --out {output} > {log} 2>&1"


rule table4:
    input:
        [item.split(":", 2)[2] for item in model_items()],
    output:
        report("results/tables/table4.tsv", caption="../report/table4.rst", category="Tables"),
    log:
        "logs/tables/table4.log",
    params:
        models=model_items(),
    threads: 1
    shell:
        "poeval table table4 {params.models} --out {output} > {log} 2>&1"


# Tables 2, 3, 5, 6, 10 and memorization: one row per language x system (first decoding config);
# Tables 7, 8, 9, 12: one row per language x system x decoding config. Each is assembled from the
# cell files, with a long-form table of intervals next to it.
rule family_table:
    input:
        table_cells,
    output:
        table=report("results/tables/{table}.tsv", caption="../report/{table}.rst", category="Tables"),
        ci=report("results/tables/{table}.ci.tsv", caption="../report/ci.rst", category="Intervals"),
    log:
        "logs/tables/{table}.log",
    wildcard_constraints:
        table="|".join(FAMILY_OF_TABLE),
    threads: 1
    shell:
        "poeval table {wildcards.table} {input} --out {output.table} --ci-out {output.ci} > {log} 2>&1"


# Figures 1 and 4: per-poem values of the cells of the first decoding config, HUMAN pooled.
rule figure:
    input:
        lambda wc: cells(FIGURES[wc.figure][0]),
    output:
        report("results/figures/{figure}.png", caption="../report/{figure}.rst", category="Figures"),
    log:
        "logs/figures/{figure}.log",
    wildcard_constraints:
        figure="|".join(FIGURES),
    threads: 1
    shell:
        "poeval figure {wildcards.figure} {input} --out {output} > {log} 2>&1"
