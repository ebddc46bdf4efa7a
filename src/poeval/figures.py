"""Figures of the paper, drawn from the per-cell JSON files (the same cells as the tables).

Each figure groups cells by language; the HUMAN samples of a language are pooled into one
distribution. PNGs carry no timestamp or software version, so the same cells give the same bytes."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from .errors import PoevalError
from .io import atomic_write, read_json
from .tables import HUMAN


def _grouped(paths: list[str], family: str) -> dict[str, dict[str, list]]:
    """lang -> system label -> per-poem values pooled over that system's cells (input order kept)."""
    out: dict[str, dict[str, list]] = defaultdict(dict)
    for path in paths:
        cell = read_json(path)
        per_poem = cell.get(family, {}).get("per_poem") if "cell" in cell else None
        if per_poem is None:
            raise PoevalError(f"{path}: not a '{family}' metric cell with per-poem values")
        c = cell["cell"]
        label = HUMAN if c["system"] == HUMAN else f"{c['system']} ({c['decoding']})"
        values = out[c["lang"]].setdefault(label, [])
        values.append(per_poem)
    return out


def _save(fig, out: str) -> None:
    with atomic_write(out, mode="wb", encoding=None) as handle:
        fig.savefig(handle, format="png", dpi=110, metadata={"Software": None})


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 8})
    return plt


def figure1(paths: list[str], out: str) -> None:
    """Length histograms: every system's quatrain lengths (tokens) against the pooled HUMAN samples."""
    plt = _pyplot()
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
    fig.tight_layout()
    _save(fig, out)
    plt.close(fig)


def figure4(paths: list[str], out: str) -> None:
    """Max-cosine distributions per system: within the sample and across to the training set."""
    plt = _pyplot()
    groups = _grouped(paths, "semantic")
    langs = list(groups)
    fig, axes = plt.subplots(len(langs), 2, figsize=(7.5, 2.8 * len(langs)), squeeze=False)
    bins = np.linspace(-0.2, 1.0, 61)
    for row, lang in zip(axes, langs):
        for ax, kind in zip(row, ("within", "across")):
            for label, cells in groups[lang].items():
                values = np.asarray([x for cell in cells for x in (cell.get(kind) or [])], dtype=float)
                if values.size:
                    style = {"color": "black", "linewidth": 1.6} if label == HUMAN else {"linewidth": 1.0}
                    ax.hist(values, bins=bins, density=True, histtype="step", label=label, **style)
            ax.set_title(f"{lang}: max cosine {kind} {'the sample' if kind == 'within' else 'to train'}")
            ax.set_xlabel("max cosine similarity")
            ax.set_ylabel("density")
            if ax.has_data():
                ax.legend(frameon=False)
    fig.tight_layout()
    _save(fig, out)
    plt.close(fig)


FIGURES = {"figure1": ("length", figure1), "figure4": ("semantic", figure4)}
