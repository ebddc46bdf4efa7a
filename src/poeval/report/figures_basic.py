"""What every figure shares: reading per-poem cells, the panel grid and its letters, and the two figures of
per-poem values (1: lengths, 4: max similarities). :mod:`poeval.report.figures` holds the rest and the registry."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from poeval.errors import PoevalError
from poeval.io import read_json
from poeval.render import finish_figure, load_pyplot
from poeval.report.tables import HUMAN


def _load_per_poem(paths: list[str], family: str):
    """(cell header, per-poem values) of each cell, in input order."""
    for path in paths:
        cell = read_json(path)
        per_poem = cell.get(family, {}).get("per_poem") if "cell" in cell else None
        if per_poem is None:
            raise PoevalError(f"{path}: not a '{family}' metric cell with per-poem values")
        yield cell["cell"], per_poem


def _grouped(paths: list[str], family: str) -> dict[str, dict[str, list]]:
    """lang -> system label -> per-poem values pooled over that system's cells (input order kept)."""
    out: dict[str, dict[str, list]] = defaultdict(dict)
    for c, per_poem in _load_per_poem(paths, family):
        label = HUMAN if c["system"] == HUMAN else f"{c['system']} ({c['decoding']})"
        out[c["lang"]].setdefault(label, []).append(per_poem)
    return out


def figure1(paths: list[str], out: str) -> None:
    """Length histograms: every system's quatrain lengths (tokens) against the pooled HUMAN samples."""
    plt = load_pyplot()
    groups = _grouped(paths, "length")
    panels = [(lang, label) for lang, systems in groups.items() for label in systems if label != HUMAN]
    if not panels:
        raise PoevalError("figure1 needs at least one model cell")
    cols = min(4, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.4 * rows), squeeze=False)
    for ax, (lang, label) in zip(axes.flat, panels):
        model = np.concatenate([np.asarray(v, dtype=float) for v in groups[lang][label]] or [np.empty(0)])
        human = np.concatenate([np.asarray(v, dtype=float) for v in groups[lang].get(HUMAN, [])] or [np.empty(0)])
        top = max([1.0, *(a.max() for a in (model, human) if a.size)])
        bins = np.arange(0, top + 2) - 0.5
        if human.size:
            ax.hist(human, bins=bins, density=True, histtype="step", color="black", label="HUMAN")
        if model.size:
            ax.hist(model, bins=bins, density=True, alpha=0.6, color="tab:blue", label=label)
        ax.set_title(f"{lang}: {label} (n={model.size})")
        ax.set_xlabel("tokens per quatrain")
        ax.set_ylabel("share")
        ax.legend(frameon=False)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    finish_figure(plt, fig, out)


SIM_BINS = np.linspace(-0.2, 1.0, 61)


def _sim_hist(ax, values: np.ndarray, label: str, human: bool = False) -> None:
    style = {"color": "black", "linewidth": 1.6} if human else {"linewidth": 1.0}
    ax.hist(values, bins=SIM_BINS, density=True, histtype="step", label=label, **style)


def sim_limits(values: list[np.ndarray], step: float = 0.05) -> tuple[float, float]:
    """The x range of a similarity figure: its data's, widened to the next ``step``, within the bins (a fixed
    -0.2..1.0 leaves most of the axis empty: sentence-embedding similarities of quatrains lie in about 0.2-0.8)."""
    data = np.concatenate([np.asarray(v, dtype=float).ravel() for v in values] or [np.empty(0)])
    data = data[np.isfinite(data)]
    if not data.size:
        return float(SIM_BINS[0]), float(SIM_BINS[-1])
    lo = max(float(SIM_BINS[0]), round(math.floor(round(data.min() / step, 6)) * step, 6))
    hi = min(float(SIM_BINS[-1]), round(math.ceil(round(data.max() / step, 6)) * step, 6))
    return (lo, hi) if hi > lo else (max(float(SIM_BINS[0]), lo - step), min(float(SIM_BINS[-1]), hi + step))


def figure4(paths: list[str], out: str) -> None:
    """Max-cosine distributions per system: within the sample and across to the training set."""
    plt = load_pyplot()
    groups = _grouped(paths, "semantic")
    langs = list(groups)
    fig, axes = plt.subplots(len(langs), 2, figsize=(7.5, 2.8 * len(langs)), squeeze=False)
    drawn = []
    for row, lang in zip(axes, langs):
        for ax, kind in zip(row, ("within", "across")):
            for label, cells in groups[lang].items():
                values = np.asarray([x for cell in cells for x in (cell.get(kind) or [])], dtype=float)
                if values.size:
                    _sim_hist(ax, values, label, human=label == HUMAN)
                    drawn.append(values)
            _sim_axes(ax, lang, kind)
    for ax in axes.flat:   # one range for every panel, so that within and across compare
        ax.set_xlim(*sim_limits(drawn))
    finish_figure(plt, fig, out)


def _sim_axes(ax, lang: str, kind: str) -> None:
    ax.set_title(f"{lang}: max cosine {kind} {'the sample' if kind == 'within' else 'to train'}")
    ax.set_xlabel("max cosine similarity")
    ax.set_ylabel("density")
    if ax.has_data():
        ax.legend(frameon=False)


# --- Panels -----------------------------------------------------------------------------------------

BAR_COLOR = "#2ab0ff"          # the paper's code's bar colour
LANG_NAMES = {"en": "English", "de": "German"}


def _lang_name(lang: str | None) -> str:
    return LANG_NAMES.get(lang, f"'{lang}'")


def _panels(plt, n: int, title: str, ylabel: str):
    """A figure of ``n`` panels in rows of three (four panels: 2 x 2) sharing the y axis, titled (at
    least two panels wide, so the title fits); unused cells hidden, the y axis labelled on the left only."""
    cols = 2 if n == 4 else min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * max(cols, 2), 2.7 * rows + 0.5), squeeze=False, sharey=True)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel)
    fig.suptitle(title)
    return fig, list(axes.flat)[:n]


def _letter(i: int) -> str:
    """The paper's panel labels: (a), (b), ..."""
    return f"({chr(ord('a') + i)})" if i < 26 else f"({i + 1})"
