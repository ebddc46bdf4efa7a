"""The quality frontier of the decoding grid (not in the paper): for each system of a run with several decoding
configs, one point per decoding config, a diversity measure of the diversity family (params
``metrics.quality.frontier_diversity``) against the quality family's fluency (first panel) and its share of
quatrains that rhyme and scan (second panel); the configs that no other config of the same system beats on
both axes (:func:`poeval.metrics.quality.pareto_front`) are its frontier, drawn as a line and flagged in the
table beside the figure. The HUMAN samples' mean is a reference point, never on a frontier.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from poeval.metrics.quality import pareto_front
from poeval.paths import HUMAN
from poeval.render import finish_figure, fmt, load_pyplot, write_tsv
from poeval.report.tables import load_table_cells

# the quality axes of the two panels: (key in the quality cell, header, scale)
QUALITY_AXES = (("fluency", "fluency", 1), ("rhymes_and_scans", "rhymes_and_scans_pct", 100))
# a diversity measure on its axis: (key in the diversity cell, header, transform); self-BLEU falls as
# diversity rises, so its axis is 100 - self-BLEU (sacrebleu points)
MEASURES = {"vendi": ("vendi", "vendi", lambda v: v), "self_bleu": ("self_bleu", "100_minus_self_bleu", lambda v: 100 - v),
            "distinct_2": ("distinct_2", "distinct_2", lambda v: v),
            "ngram_diversity": ("ngram_diversity", "ngram_diversity", lambda v: v)}
COLUMNS = ("quality:fluency", "quality:rhymes_and_scans", "quality:utility", "quality:own_model")
HEADER = ["lang", "system", "decoding", "n", None, "fluency", "rhymes_and_scans_pct", "utility",
          "front_fluency", "front_form", "own_model"]


def _value(section: dict, key: str):
    value = section.get(key)
    return None if value is None else float(value)


def points(paths: list[str], measure: str) -> list[dict]:
    """One point per cell (lang, system, decoding): its diversity, its quality axes, its utility and whether the
    reference LM is its own model; a language's HUMAN samples are averaged into one point."""
    key, _, transform = MEASURES[measure]
    columns = [(f"diversity:{key}", key, 3, 1)] + [(c, c, 3, 1) for c in COLUMNS]
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for cell in load_table_cells(paths, "quality", columns):
        c = cell["cell"]
        groups[(c["lang"], c["system"], "-" if c["system"] == HUMAN else c["decoding"])].append(cell)
    out = []
    for (lang, system, decoding), cells in groups.items():
        def mean(section, k):
            values = [_value(cell[section], k) for cell in cells if cell["n_poems"]]
            values = [v for v in values if v is not None]
            return float(np.mean(values)) if values else None

        div = mean("diversity", key)
        out.append({"lang": lang, "system": system, "decoding": decoding, "n": sum(c["n_poems"] for c in cells),
                    "diversity": None if div is None else transform(div), "fluency": mean("quality", "fluency"),
                    "rhymes_and_scans": mean("quality", "rhymes_and_scans"), "utility": mean("quality", "utility"),
                    "own_model": bool(mean("quality", "own_model"))})
    return out


def with_fronts(pts: list[dict]) -> list[dict]:
    """The points, each flagged ``front_<axis>`` when it is on its system's frontier (systems with several
    decoding configs; HUMAN never)."""
    by_system: dict[tuple, list[int]] = defaultdict(list)
    for i, p in enumerate(pts):
        if p["system"] != HUMAN:
            by_system[(p["lang"], p["system"])].append(i)
    out = [p | {"front_fluency": False, "front_rhymes_and_scans": False} for p in pts]
    for members in by_system.values():
        if len(members) < 2:
            continue
        for axis, _, _ in QUALITY_AXES:
            for j in pareto_front([(pts[i]["diversity"], pts[i][axis]) for i in members]):
                out[members[j]][f"front_{axis}"] = True
    return out


def frontier(paths: list[str], measure: str, out: str, figure_out: str | None = None) -> None:
    """The frontier table (TSV) of the quality and diversity cells at ``paths`` and, with ``figure_out``, its figure."""
    pts = with_fronts(points(paths, measure))
    header = [MEASURES[measure][1] if h is None else h for h in HEADER]
    rows = [[p["lang"], p["system"], p["decoding"], str(p["n"]), fmt(p["diversity"], 3), fmt(p["fluency"], 3),
             fmt(None if p["rhymes_and_scans"] is None else 100 * p["rhymes_and_scans"], 1), fmt(p["utility"], 2),
             "yes" if p["front_fluency"] else "no", "yes" if p["front_rhymes_and_scans"] else "no",
             "yes" if p["own_model"] else "no"] for p in pts]
    write_tsv(out, header, rows)
    if figure_out:
        figure(pts, MEASURES[measure][1], figure_out)


def figure(pts: list[dict], xlabel: str, out: str) -> None:
    """Two panels (fluency, rhymes and scans) against diversity: each system's configs as points, its frontier
    as a line, HUMAN as a star; a system scored by its own model is marked in the legend."""
    plt = load_pyplot()
    fig, axes = plt.subplots(1, len(QUALITY_AXES), figsize=(5.2 * len(QUALITY_AXES), 4.0), squeeze=False)
    systems = list(dict.fromkeys((p["lang"], p["system"]) for p in pts if p["system"] != HUMAN))
    colours = plt.get_cmap("tab10")
    for ax, (axis, header, scale) in zip(axes.flat, QUALITY_AXES):
        for s, (lang, system) in enumerate(systems):
            mine = [p for p in pts if (p["lang"], p["system"]) == (lang, system)
                    and p["diversity"] is not None and p[axis] is not None]
            label = f"{system} ({lang})" + (" [reference LM's own]" if any(p["own_model"] for p in mine) else "")
            colour = colours(s % 10)
            ax.scatter([p["diversity"] for p in mine], [p[axis] * scale for p in mine], color=colour, s=18, label=label)
            front = sorted((p for p in mine if p[f"front_{axis}"]), key=lambda p: p["diversity"])
            ax.plot([p["diversity"] for p in front], [p[axis] * scale for p in front], color=colour, linewidth=1)
            for p in mine:
                ax.annotate(p["decoding"], (p["diversity"], p[axis] * scale), fontsize=5, alpha=0.7)
        for p in pts:
            if p["system"] == HUMAN and p["diversity"] is not None and p[axis] is not None:
                ax.scatter([p["diversity"]], [p[axis] * scale], marker="*", s=90, color="black",
                           label=f"{HUMAN} ({p['lang']})")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(header)
    axes.flat[0].legend(fontsize=6)
    finish_figure(plt, fig, out)
