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


# Tables 2, 3, 5 and the memorization table: one row per language x system x decoding config,
# assembled from the cell files, plus a long-form table of intervals next to each.
rule family_table:
    input:
        lambda wc: cells(FAMILY_OF_TABLE[wc.table]),
    output:
        table=report("results/tables/{table}.tsv", caption="../report/{table}.rst", category="Tables"),
        ci=report("results/tables/{table}.ci.tsv", caption="../report/ci.rst", category="Intervals"),
    log:
        "logs/tables/{table}.log",
    wildcard_constraints:
        table="|".join(t for t in FAMILY_OF_TABLE if t != "table1"),
    threads: 1
    shell:
        "poeval table {wildcards.table} {input} --out {output.table} --ci-out {output.ci} > {log} 2>&1"
