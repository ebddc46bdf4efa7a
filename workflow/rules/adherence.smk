# Style adherence (poeval.metrics.adherence): conditioned transformers prompted with each scheme token, labelled
# by the rhyme detector, against their baseline's unprompted sample. Targets only when there is a pair.
from poeval.jobs import adherence as adherence_jobs
from poeval.metrics.adherence import pairs as adherence_pairs

ADHERENCE = P["style_adherence"]
ADHERENCE_PAIRS = adherence_pairs(config)


wildcard_constraints:
    scheme="[abcd]{4}",
    prompting="prompted|unprompted",


rule adherence_sample:
    input:
        paths.pattern(paths.model_dir),
    output:
        samples=paths.pattern(paths.adherence_samples),
        stats=paths.pattern(paths.adherence_stats),
    log:
        paths.log("adherence", "{lang}", "{system}", "{scheme}"),
    resources:
        endpoint_requests=endpoint_requests,
        **generator_resources("sample"),
    params:
        # the main sample's job (poeval.jobs.sample), prompted with the scheme, at the adherence sample size
        job=job_of("adherence_sample"),
    threads: P["threads"]
    shell:
        "poeval sample {input:q} --job {params.job:q}"
        " --out {output.samples:q} --stats {output.stats:q} --threads {threads} > {log:q} 2>&1"


def adherence_samples(wildcards):
    """The sample of each prompt of a cell's job, in its order: one per prompted scheme, or the system's main sample."""
    job = STEPS["adherence_cell"].build(P, **dict(wildcards.items()))
    return adherence_jobs.cell_samples(job, ADHERENCE["decoding"])


rule adherence_cell:
    input:
        unpack(adherence_samples),
    output:
        paths.pattern(paths.adherence_cell),
    log:
        paths.log("adherence", "{lang}", "{system}", "{prompting}"),
    params:
        job=job_of("adherence_cell"),   # the system, its language, the prompts in input order, the repetition rule
    threads: 1
    shell:
        "poeval adherence cell {input:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


def adherence_pair_cells():
    """CONDITIONED_CELL=BASELINE_CELL items, per language in params order of the pairs."""
    return [f"{paths.adherence_cell(lang, cond, 'prompted')}={paths.adherence_cell(lang, base, 'unprompted')}"
            for lang in LANGS for cond, base in ADHERENCE_PAIRS.items()]


for _action, _out in (("table", paths.table("style_adherence")), ("figure", paths.figure("style_adherence"))):
    _name = f"style_adherence_{_action}"

    rule:
        name:
            _name
        input:
            [path for item in adherence_pair_cells() for path in item.split("=")],
        output:
            report(_out, caption=f"../report/{_name.removesuffix('_table')}.rst",
                   **(report_place("style_adherence") if _out.endswith(".tsv") else figure_place("style_adherence"))),
        log:
            paths.log("adherence", _name),
        params:
            action=_action,
            job=job_of(_name),
            pairs=adherence_pair_cells(),
            shows=", ".join(f"{c} vs {b}" for c, b in ADHERENCE_PAIRS.items()) or "none",  # for the caption
        threads: 1
        shell:
            "poeval adherence {params.action:q} {params.pairs:q} --job {params.job:q} --out {output:q} > {log:q} 2>&1"


def adherence_targets():
    if not ADHERENCE_PAIRS:
        return []
    return [paths.table("style_adherence"), paths.figure("style_adherence")]
