"""BPoMP accuracy against scorer size: each scorer's parameter count (counted on the loaded checkpoint by
:func:`.scoring.parameter_count` and recorded in its scores' ``.stats.json``) beside its accuracy per task.

* ``bpomp_by_size.tsv``: one row per scorer x task, scorers by parameter count (a scorer without one, scored
  through an endpoint, last), tasks in pairs order; raw accuracy with its interval, then the per-token and
  per-byte normalised accuracies (:func:`.analysis.accuracy`).
* ``bpomp_by_size.png``: accuracy (raw, with its 95 % interval) against parameters on a log axis, a line per
  task; scorers without a parameter count are left out of it.
"""

from __future__ import annotations

from poeval import io
from poeval.bpomp.report import read_cell, task_order
from poeval.errors import PoevalError
from poeval.render import fmt, write_tsv

HEADER = ["scorer", "kind", "model", "parameters", "task", "pairs", "accuracy", "ci_low", "ci_high",
          "acc_per_token", "acc_per_byte"]


def _parameters(path: str):
    stats = io.read_json(path)
    value = stats.get("parameters") if isinstance(stats, dict) else None
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise PoevalError(f"{path}: 'parameters' must be a positive integer (made by `poeval bpomp score --stats`?)")
    return value


def rows(cells: list[str], stats: list[str]) -> list[dict]:
    """One record per scorer x task: the accuracy cell ``cells[k]`` with the parameters of ``stats[k]`` (the
    scores' stats of the same scorer and task), sorted by parameters, then task."""
    if len(cells) != len(stats):
        raise PoevalError(f"--stats: {len(stats)} stats files for {len(cells)} accuracy cells; give one per cell, "
                          "in the cells' order")
    out = []
    for cell_path, stats_path in zip(cells, stats):
        cell, params = read_cell(cell_path, "tasks"), _parameters(stats_path)
        for task, r in cell["tasks"].items():
            out.append({"scorer": str(cell.get("scorer") or cell_path), "kind": cell.get("kind"),
                        "model": cell.get("model"), "parameters": params, "task": task, **r})
    # a scorer without a count sorts last; equal counts keep the cells' (params) order
    return sorted(out, key=lambda r: (r["parameters"] is None, r["parameters"] or 0, task_order(r["task"])))


def _acc(summary) -> str:
    return fmt(summary["accuracy"], 4) if summary else "NA"


def size_table(cells: list[str], stats: list[str], out: str) -> list[list[str]]:
    table = [[r["scorer"], str(r["kind"] or "NA"), str(r["model"] or "NA"),
              "NA" if r["parameters"] is None else str(r["parameters"]), r["task"], str(r["n"]),
              fmt(r["accuracy"], 4), fmt(r["ci95"][0], 4), fmt(r["ci95"][1], 4), _acc(r.get("per_token")),
              _acc(r.get("per_byte"))] for r in rows(cells, stats)]
    write_tsv(out, HEADER, table)
    return table


def size_figure(cells: list[str], stats: list[str], out: str) -> None:
    from poeval.render import finish_figure, load_pyplot

    plt = load_pyplot()
    counted = [r for r in rows(cells, stats) if r["parameters"] is not None]
    fig, ax = plt.subplots(figsize=(6, 4))
    for k, task in enumerate(sorted({r["task"] for r in counted}, key=task_order)):
        rs = [r for r in counted if r["task"] == task]
        x, y = [r["parameters"] for r in rs], [r["accuracy"] for r in rs]
        err = [[r["accuracy"] - r["ci95"][0] for r in rs], [r["ci95"][1] - r["accuracy"] for r in rs]]
        ax.errorbar(x, y, yerr=err, marker="o", capsize=3, color=f"C{k}", label=task)
    for r in counted:
        if r["task"] == counted[0]["task"]:   # name each scorer once, at its first task's point
            ax.annotate(r["scorer"], (r["parameters"], r["accuracy"]), fontsize=6, xytext=(3, 3),
                        textcoords="offset points")
    ax.axhline(0.5, color="grey", lw=0.5)
    ax.set(xscale="log", xlabel="scorer parameters", ylabel="accuracy (95 % interval)", ylim=(-0.02, 1.02),
           title="BPoMP accuracy against scorer size")
    ax.legend(fontsize=7)
    finish_figure(plt, fig, out)
