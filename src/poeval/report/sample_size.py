"""How much a table's numbers depend on the sample size n: the n-sensitivity table and figure, drawn from the
curves of :func:`poeval.metrics.evaluate.n_curve` (each family's measures on seeded subsamples of a HUMAN
sample, n = 50 ... 1000). A pooled column (its family record's ``present.pooled``) that moves along the curve more
than its draws spread cannot be compared across rows of different n; the common-n companion tables are for that.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from poeval.errors import PoevalError
from poeval.io import read_json
from poeval.render import fmt, finish_figure, load_pyplot, write_tsv
from poeval.metrics.families import family as family_record
from poeval.report.tables import dotted_get, family_key, is_pooled, own_columns

HEADER = ["lang", "family", "measure", "pooled", "n", "draws", "mean", "min", "max", "shift"]


def _load(path: str) -> dict:
    curve = read_json(path)
    if not isinstance(curve, dict) or "points" not in curve or "families" not in curve:
        raise PoevalError(f"{path}: not an n-sensitivity curve (`poeval evaluate --n-curve`)")
    return curve


def _value(point: dict, family: str, key: str, scale: float):
    section, key = family_key(key, family)
    try:
        value = dotted_get(point[section], key)
    except (KeyError, TypeError):
        return None
    return None if value is None else value * scale


def measures(curve: dict) -> list[tuple[str, str, str, int, float]]:
    """(family, key, column name, digits, scale) of every table column of the curve's families (those their
    records show)."""
    return [(family, key, name, digits, scale) for family in curve["families"] if family_record(family).present
            for key, name, digits, scale in own_columns(family)]


def series(curve: dict, family: str, key: str, scale: float) -> dict[int, list[float]]:
    """n -> the column's values over the draws at that n (draws without a value left out)."""
    out: dict[int, list[float]] = defaultdict(list)
    for point in curve["points"]:
        value = _value(point, family, key, scale)
        if value is not None:
            out[point["n"]].append(value)
    return dict(sorted(out.items()))


def curve_rows(curve: dict) -> list[list[str]]:
    """The table's rows of one curve: per column and n, the mean, min and max over the draws and the shift, the
    mean minus the whole sample's value (how far a row of that n sits from one of the whole sample's n)."""
    rows = []
    for family, key, name, digits, scale in measures(curve):
        by_n = series(curve, family, key, scale)
        whole = by_n.get(max(by_n), [None])[0] if by_n else None
        pooled = "yes" if is_pooled(key, family) else "no"
        for n, values in by_n.items():
            mean = float(np.mean(values))
            rows.append([curve["lang"], family, name, pooled, str(n), str(len(values)), fmt(mean, digits),
                         fmt(min(values), digits), fmt(max(values), digits),
                         fmt(None if whole is None else mean - whole, digits)])
    return rows


def n_sensitivity(paths: list[str], out: str, figure_out: str | None = None) -> None:
    """The n-sensitivity table (TSV, :data:`HEADER`) of the curves at ``paths`` (one per language and family) and,
    with ``figure_out``, its figure: one panel per pooled column, each language's mean with its draws' range."""
    curves = [_load(path) for path in paths]
    write_tsv(out, HEADER, [row for curve in curves for row in curve_rows(curve)])
    if figure_out:
        figure(curves, figure_out)


def figure(curves: list[dict], out: str) -> None:
    """One panel per pooled column of the curves' families: the column against n (log scale) for each language,
    a line through the draws' means with their min-max range."""
    panels: dict[tuple[str, str], list[tuple[dict, str, float]]] = {}
    for curve in curves:
        for family, key, name, _, scale in measures(curve):
            if is_pooled(key, family):
                panels.setdefault((family, name), []).append((curve, key, scale))
    if not panels:
        raise PoevalError("n-sensitivity figure: no pooled column among the curves' families")
    plt = load_pyplot()
    cols = min(5, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols, 2.0 * rows), squeeze=False)
    for ax, ((family, name), lines) in zip(axes.flat, panels.items()):
        for curve, key, scale in lines:
            by_n = series(curve, family, key, scale)
            ns = np.array(list(by_n), dtype=float)
            means = np.array([np.mean(v) for v in by_n.values()])
            low = means - np.array([min(v) for v in by_n.values()])
            high = np.array([max(v) for v in by_n.values()]) - means
            ax.errorbar(ns, means, yerr=[low, high], marker="o", markersize=3, capsize=2, label=curve["lang"])
        ax.set_xscale("log")
        ax.set_title(f"{family}: {name}")
        ax.set_xlabel("n (quatrains)")
        if len(lines) > 1:
            ax.legend(frameon=False)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    finish_figure(plt, fig, out)
