# Style adherence (poeval.adherence): conditioned transformers prompted with each scheme token, labelled
# by the rhyme detector, against their baseline's unprompted sample. Targets only when there is a pair.
from poeval.adherence import pairs as adherence_pairs

ADHERENCE = poeval_config.merge(poeval_config.section_defaults("style_adherence"), config.get("style_adherence") or {})
ADHERENCE_PAIRS = adherence_pairs(config)


wildcard_constraints:
    scheme="[abcd]{4}",
    prompting="prompted|unprompted",


rule adherence_sample:
    input:
        "models/{lang}/{system}",
    output:
        samples="results/adherence/{lang}/{system}/samples/{scheme}.jsonl",
        stats="results/adherence/{lang}/{system}/samples/{scheme}.stats.json",
    log:
        "logs/adherence/{lang}/{system}/{scheme}.log",
    params:
        decoding=as_json(config["decoding"][ADHERENCE["decoding"]]),
        sampling=as_json(config["sampling"] | {"n": ADHERENCE["n"]}),
        prefix="{lang}-{system}-{scheme}-",
    threads: config["threads"]
    shell:
        "poeval sample {input} --decoding {params.decoding:q} --sampling {params.sampling:q} --style {wildcards.scheme}"
        " --out {output.samples} --stats {output.stats} --id-prefix {params.prefix} --threads {threads} > {log} 2>&1"


def adherence_samples(wildcards):
    """PROMPT=SAMPLES items of a cell: one sample per prompted scheme, or the system's main sample."""
    if wildcards.prompting == "unprompted":
        return {"none": f"results/samples/{wildcards.lang}/{wildcards.system}/{ADHERENCE['decoding']}.jsonl"}
    return {s: f"results/adherence/{wildcards.lang}/{wildcards.system}/samples/{s}.jsonl" for s in ADHERENCE["schemes"]}


rule adherence_cell:
    input:
        unpack(adherence_samples),
    output:
        "results/adherence/{lang}/{system}/{prompting}.json",
    log:
        "logs/adherence/{lang}/{system}/{prompting}.log",
    params:
        prompts=lambda wc, input: [f"{prompt}={path}" for prompt, path in input.items()],
        repetition=config["metrics"]["rhyme"]["repetition"],
    threads: 1
    shell:
        "poeval adherence cell {params.prompts} --lang {wildcards.lang} --system {wildcards.system}"
        " --repetition {params.repetition} --out {output} > {log} 2>&1"


def adherence_pair_cells():
    """CONDITIONED_CELL=BASELINE_CELL items, per language in params order of the pairs."""
    return [f"results/adherence/{lang}/{cond}/prompted.json=results/adherence/{lang}/{base}/unprompted.json"
            for lang in LANGS for cond, base in ADHERENCE_PAIRS.items()]


for _action, _out in (("table", "results/tables/style_adherence.tsv"), ("figure", "results/figures/style_adherence.png")):
    _name = f"style_adherence_{_action}"

    rule:
        name:
            _name
        input:
            [path for item in adherence_pair_cells() for path in item.split("=")],
        output:
            report(_out, caption=f"../report/{_name.removesuffix('_table')}.rst",
                   category="Tables" if _out.endswith(".tsv") else "Figures"),
        log:
            f"logs/adherence/{_name}.log",
        params:
            action=_action,
            pairs=adherence_pair_cells(),
            schemes=ADHERENCE["schemes"],
            shows=", ".join(f"{c} vs {b}" for c, b in ADHERENCE_PAIRS.items()) or "none",  # for the caption
        threads: 1
        shell:
            "poeval adherence {params.action} {params.pairs} --schemes {params.schemes} --out {output} > {log} 2>&1"


def adherence_targets():
    if not ADHERENCE_PAIRS:
        return []
    return ["results/tables/style_adherence.tsv", "results/figures/style_adherence.png"]
