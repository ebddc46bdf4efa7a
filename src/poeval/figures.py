"""Figures of the paper, drawn from the per-cell JSON files (the same cells as the tables).

Each figure groups cells by language; the HUMAN samples of a language are pooled into one
distribution (rhyme schemes: the mean of their shares, as in Table 6). PNGs carry no timestamp or
software version, so the same cells give the same bytes. :data:`FIGURES` maps the paper's figure
numbers to what poeval draws; the workflow (rules/tables.smk) builds one rule per entry.

Figure numbers (Chen et al. 2024, main text and appendix):

* 1: length histograms; 4: max-similarity distributions (first decoding config);
* 2, 3: rhyme schemes of HUMAN and of the best, worst and average model by rhyme cross-entropy
  (English, German);
* 5-9: rhyme schemes per generator family (gpt2, gptneo, llama, bygpt5, poetry-specific);
* 10: max-similarity distributions per decoding config, pooled over the systems;
* 11-15: rhyme schemes per decoding config, per generator family (same order as 5-9)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from .errors import PoevalError
from .io import atomic_write, read_json
from .rhyme import SCHEMES_4
from .tables import HUMAN, fmt, write_tsv


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


def _save(fig, out: str) -> None:
    with atomic_write(out, mode="wb", encoding=None) as handle:
        fig.savefig(handle, format="png", dpi=110, metadata={"Software": None})


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 8})
    return plt


def _finish(plt, fig, out: str) -> None:
    fig.tight_layout()
    _save(fig, out)
    plt.close(fig)


def _many_colors(plt) -> list:
    """tab10, then the light half of tab20: distinct colours for up to 20 series (the grid has 11 decodings)."""
    return list(plt.get_cmap("tab10").colors) + list(plt.get_cmap("tab20").colors[1::2])


def _note(ax, text: str) -> None:
    """A panel-wide message (an empty family, a language not in the run), so a figure always builds."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=10,
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "grey"})


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
    _finish(plt, fig, out)


SIM_BINS = np.linspace(-0.2, 1.0, 61)


def _sim_hist(ax, values: np.ndarray, label: str, human: bool = False, color=None) -> None:
    style = {"color": "black", "linewidth": 1.6} if human else {"linewidth": 1.0, "color": color}
    ax.hist(values, bins=SIM_BINS, density=True, histtype="step", label=label, **style)


def figure4(paths: list[str], out: str) -> None:
    """Max-cosine distributions per system: within the sample and across to the training set."""
    plt = _pyplot()
    groups = _grouped(paths, "semantic")
    langs = list(groups)
    fig, axes = plt.subplots(len(langs), 2, figsize=(7.5, 2.8 * len(langs)), squeeze=False)
    for row, lang in zip(axes, langs):
        for ax, kind in zip(row, ("within", "across")):
            for label, cells in groups[lang].items():
                values = np.asarray([x for cell in cells for x in (cell.get(kind) or [])], dtype=float)
                if values.size:
                    _sim_hist(ax, values, label, human=label == HUMAN)
            _sim_axes(ax, lang, kind)
    _finish(plt, fig, out)


def _sim_axes(ax, lang: str, kind: str, legend_outside: bool = False) -> None:
    ax.set_title(f"{lang}: max cosine {kind} {'the sample' if kind == 'within' else 'to train'}")
    ax.set_xlabel("max cosine similarity")
    ax.set_ylabel("density")
    if ax.has_data() and legend_outside:   # up to 11 decoding configs: beside the panel, not over the data
        ax.legend(frameon=False, fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    elif ax.has_data():
        ax.legend(frameon=False)


# --- Figure 10: max similarity per decoding config -------------------------------------------------

def similarity_by_decoding(paths: list[str]) -> dict[str, dict[str, dict[str, np.ndarray]]]:
    """lang -> kind (within, across) -> HUMAN or decoding config -> per-poem max cosines, pooled over
    the systems (and over the HUMAN samples), in input order."""
    out: dict = {}
    for c, per_poem in _load_per_poem(paths, "semantic"):
        label = HUMAN if c["system"] == HUMAN else c["decoding"]
        for kind in ("within", "across"):
            pooled = out.setdefault(c["lang"], {}).setdefault(kind, {}).setdefault(label, [])
            pooled.extend(per_poem.get(kind) or [])
    return {lang: {kind: {label: np.asarray(v, dtype=float) for label, v in by_label.items()}
                   for kind, by_label in kinds.items()} for lang, kinds in out.items()}


def similarity_decoding_figure(paths: list[str], out: str, spec: "Figure", arch_of: dict | None = None) -> dict:
    """Figure 10: one step histogram per decoding config (all systems pooled) against HUMAN."""
    plt = _pyplot()
    data = similarity_by_decoding(paths)
    langs = list(data) or ["(no cells)"]
    fig, axes = plt.subplots(len(langs), 2, figsize=(11.0, 3.0 * len(langs)), squeeze=False)
    colors = _many_colors(plt)
    for row, lang in zip(axes, langs):
        for ax, kind in zip(row, ("within", "across")):
            series = data.get(lang, {}).get(kind, {})
            models = [label for label in series if label != HUMAN]
            for label, values in series.items():
                if values.size:
                    color = None if label == HUMAN else colors[models.index(label) % len(colors)]
                    _sim_hist(ax, values, f"{label} (n={values.size})", human=label == HUMAN, color=color)
            _sim_axes(ax, lang, kind, legend_outside=True)
            if not ax.has_data():
                _note(ax, "no similarities in this run")
    _finish(plt, fig, out)
    return data


# --- Rhyme-scheme figures (2, 3, 5-9, 11-15) ---------------------------------------------------------

@dataclass(frozen=True)
class SchemeSeries:
    """One bar series: a model cell, or the HUMAN samples of a language averaged."""

    lang: str
    system: str
    decoding: str          # "-" for HUMAN
    shares: np.ndarray     # over SCHEMES_4, fractions
    cross_entropy: float | None
    n: float               # valid quatrains (mean over the HUMAN samples)

    @property
    def label(self) -> str:
        return HUMAN if self.system == HUMAN else f"{self.system} ({self.decoding})"


def _rhyme_cell(path: str) -> dict:
    cell = read_json(path)
    rhyme = cell.get("rhyme") if isinstance(cell, dict) else None
    if "cell" not in cell or not isinstance(rhyme, dict) or not isinstance(rhyme.get("distribution"), dict):
        raise PoevalError(f"{path}: not a 'rhyme' metric cell (no rhyme.distribution)")
    unknown = sorted(set(rhyme["distribution"]) - set(SCHEMES_4))
    if unknown:
        raise PoevalError(f"{path}: unknown rhyme scheme {unknown[0]!r} in rhyme.distribution")
    return cell


def _mean_or_none(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def scheme_series(paths: list[str]) -> list[SchemeSeries]:
    """One series per (lang, system, decoding) in input order; a language's HUMAN cells are averaged."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for path in paths:
        cell = _rhyme_cell(path)
        c = cell["cell"]
        groups[(c["lang"], c["system"], "-" if c["system"] == HUMAN else c["decoding"])].append(cell)
    out = []
    for (lang, system, decoding), cells in groups.items():
        shares = np.mean([[cell["rhyme"]["distribution"].get(s, 0.0) for s in SCHEMES_4] for cell in cells], axis=0)
        ce = _mean_or_none([cell["rhyme"].get("cross_entropy") for cell in cells])
        n = float(np.mean([cell.get("n_poems", 0) for cell in cells]))
        out.append(SchemeSeries(lang, system, decoding, shares, ce, n))
    return out


def extremes(series: list[SchemeSeries]) -> dict[str, SchemeSeries]:
    """The best (lowest cross-entropy to the human distribution), worst (highest) and average model
    (closest to the models' mean cross-entropy, chosen among the others when there are at least three).
    Ties go to the earlier series (params order); cells without a cross-entropy (no valid quatrain) are
    not ranked."""
    ranked = [s for s in series if s.system != HUMAN and s.cross_entropy is not None]
    if not ranked:
        return {}
    best = min(ranked, key=lambda s: s.cross_entropy)
    worst = max(ranked, key=lambda s: s.cross_entropy)
    mean = float(np.mean([s.cross_entropy for s in ranked]))
    middle = [s for s in ranked if s is not best and s is not worst] or ranked
    average = min(middle, key=lambda s: abs(s.cross_entropy - mean))
    return {"best": best, "worst": worst, "average": average}


def _scheme_bars(ax, entries: list[tuple[str, np.ndarray, object]]) -> None:
    """Grouped bars: one group per scheme, one bar per entry (label, shares, colour), in percent."""
    x = np.arange(len(SCHEMES_4))
    width = 0.8 / max(1, len(entries))
    for i, (label, shares, color) in enumerate(entries):
        ax.bar(x + (i - (len(entries) - 1) / 2) * width, 100 * shares, width, label=label, color=color)
    ax.set_xticks(x, SCHEMES_4, rotation=90)
    ax.set_xlim(-0.6, len(SCHEMES_4) - 0.4)
    ax.set_ylabel("share of quatrains (%)")
    if entries:
        ax.legend(frameon=False, fontsize=7)
    else:
        ax.set_ylim(0, 100)


def _human_entry(series: list[SchemeSeries]) -> list[tuple]:
    return [(f"HUMAN (n={s.n:.0f})", s.shares, "black") for s in series if s.system == HUMAN]


def _check_lang(series: list[SchemeSeries], lang: str | None) -> None:
    wrong = [s for s in series if lang is not None and s.lang != lang]
    if wrong:
        raise PoevalError(f"a cell of language '{wrong[0].lang}' ({wrong[0].label}) given to a figure of '{lang}'")


def rhyme_extremes_figure(paths: list[str], out: str, spec: "Figure", arch_of: dict | None = None) -> dict:
    """Figures 2 and 3: HUMAN next to the best, worst and average model of one language."""
    plt = _pyplot()
    series = scheme_series(paths)
    _check_lang(series, spec.lang)
    picks = extremes(series)
    entries = _human_entry(series)
    for role, color in (("best", "tab:green"), ("worst", "tab:red"), ("average", "tab:blue")):
        if role in picks:
            s = picks[role]
            entries.append((f"{role}: {s.label}, CE {s.cross_entropy:.3f} bits, n={s.n:.0f}", s.shares, color))
    fig, ax = plt.subplots(figsize=(8.0, 3.4))
    _scheme_bars(ax, entries)
    ax.set_title(f"{spec.lang}: rhyme schemes of HUMAN and of the best, worst and average model\n"
                 "by rhyme cross-entropy to the human distribution")
    if not series:
        _note(ax, f"language '{spec.lang}' not in this run")
    elif not picks:
        _note(ax, "no model cell with valid quatrains")
    _finish(plt, fig, out)
    return {label: shares for label, shares, _ in entries}


def _check_family(series: list[SchemeSeries], spec: "Figure", arch_of: dict) -> None:
    for s in series:
        if s.system == HUMAN:
            continue
        if s.system not in arch_of:
            raise PoevalError(f"system '{s.system}' has no arch (pass every system's arch with --arch-of)")
        if arch_family(arch_of[s.system]) != spec.arch_family:
            raise PoevalError(f"system '{s.system}' (arch {arch_of[s.system]}) is not of the "
                              f"{FAMILIES[spec.arch_family][0]} family that this figure shows")


def _by_lang(series: list[SchemeSeries]) -> dict[str, list[SchemeSeries]]:
    out: dict[str, list[SchemeSeries]] = {}
    for s in series:
        out.setdefault(s.lang, []).append(s)
    return out


def rhyme_family_figure(paths: list[str], out: str, spec: "Figure", arch_of: dict | None = None) -> dict:
    """Figures 5-9: per language, HUMAN and every system of one generator family (first decoding config)."""
    plt = _pyplot()
    series = scheme_series(paths)
    _check_family(series, spec, arch_of or {})
    by_lang = _by_lang(series) or {"(no cells)": []}
    fig, axes = plt.subplots(len(by_lang), 1, figsize=(9.0, 3.4 * len(by_lang)), squeeze=False)
    colors = _many_colors(plt)
    data = {}
    for ax, (lang, lang_series) in zip(axes.flat, by_lang.items()):
        models = [s for s in lang_series if s.system != HUMAN]
        entries = _human_entry(lang_series) + [(f"{s.label}, n={s.n:.0f}", s.shares, colors[i % len(colors)])
                                               for i, s in enumerate(models)]
        _scheme_bars(ax, entries)
        ax.set_title(f"{lang}: rhyme schemes, {FAMILIES[spec.arch_family][0]}")
        if not models:
            _note(ax, "no systems of this family in this run")
        data[lang] = {label: shares for label, shares, _ in entries}
    _finish(plt, fig, out)
    return data


def _decoding_panels(series: list[SchemeSeries]) -> list[tuple[str, str | None, list[SchemeSeries]]]:
    """(lang, system or None, [HUMAN, the system's decoding configs...]) per language and system."""
    panels = []
    for lang, lang_series in _by_lang(series).items():
        human = [s for s in lang_series if s.system == HUMAN]
        systems = list(dict.fromkeys(s.system for s in lang_series if s.system != HUMAN))
        panels += [(lang, system, human + [s for s in lang_series if s.system == system]) for system in systems]
        if not systems:
            panels.append((lang, None, human))
    return panels or [("(no cells)", None, [])]


def rhyme_decoding_figure(paths: list[str], out: str, spec: "Figure", arch_of: dict | None = None) -> dict:
    """Figures 11-15: per language and system of one family, a heatmap of scheme shares (columns) per
    decoding config (rows), HUMAN first."""
    plt = _pyplot()
    series = scheme_series(paths)
    _check_family(series, spec, arch_of or {})
    panels = _decoding_panels(series)
    cols = 2 if len(panels) > 1 else 1
    rows = math.ceil(len(panels) / cols)
    top = max([0.01, *(float(s.shares.max()) for s in series)])
    height = 1.3 + 0.22 * max(2, *(len(r) for _, _, r in panels))
    fig, axes = plt.subplots(rows, cols, figsize=(6.4 * cols, height * rows), squeeze=False)
    data = {}
    for ax, (lang, system, rows_) in zip(axes.flat, panels):
        data[(lang, system)] = _heatmap(ax, rows_, top)
        ax.set_title(f"{lang}: {system or FAMILIES[spec.arch_family][0]}, rhyme schemes (%) per decoding config")
        if system is None:
            _note(ax, "no systems of this family in this run")
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    _finish(plt, fig, out)
    return data


def _heatmap(ax, rows: list[SchemeSeries], top: float) -> dict:
    labels = [("HUMAN" if s.system == HUMAN else s.decoding) + f" (n={s.n:.0f})" for s in rows]
    # a config without valid quatrains has no shares (NaN: blank, "-"), not 0 % of every scheme
    values = np.array([100 * s.shares if s.n else np.full(len(SCHEMES_4), np.nan) for s in rows]) if rows \
        else np.zeros((0, len(SCHEMES_4)))
    ax.imshow(values if rows else np.full((1, len(SCHEMES_4)), np.nan), aspect="auto", cmap="viridis",
              vmin=0, vmax=100 * top)
    for (i, j), v in np.ndenumerate(values):
        text, dark = ("-", False) if np.isnan(v) else (f"{v:.0f}", v < 60 * top)
        ax.text(j, i, text, ha="center", va="center", fontsize=6, color="white" if dark else "black")
    ax.set_xticks(range(len(SCHEMES_4)), SCHEMES_4, rotation=90)
    ax.set_yticks(range(len(labels)), labels)
    return dict(zip(labels, values))


# --- The registry -----------------------------------------------------------------------------------

# Generator families of the appendix figures: key -> (label, archs). An arch of no family here (a new
# one) is drawn with the poetry-specific family, so every system appears in some figure.
FAMILIES = {
    "gpt2": ("GPT-2 family (arch gpt2)", ("gpt2",)),
    "gptneo": ("GPT-Neo family (arch gptneo)", ("gptneo",)),
    "llama": ("LLaMA family (arch llama)", ("llama",)),
    "bygpt5": ("ByGPT5 family (arch bygpt5)", ("bygpt5",)),
    "poetic": ("poetry-specific (archs deepspeare, sa; and any other arch)", ("deepspeare", "sa")),
}
OTHER_FAMILY = "poetic"


def arch_family(arch: str | None) -> str:
    for key, (_, archs) in FAMILIES.items():
        if arch in archs:
            return key
    return OTHER_FAMILY


@dataclass(frozen=True)
class Figure:
    """What a figure reads: cells of ``family`` under the first (or every) decoding config, of one
    language (``lang``) or all, of the systems of one generator family (``arch_family``) or all."""

    family: str
    draw: Callable
    group: str                       # report subcategory
    all_decodings: bool = False
    lang: str | None = None
    arch_family: str | None = None

    def systems(self, arch_of: dict[str, str | None]) -> list[str]:
        """The systems (in ``arch_of`` order) whose cells this figure reads."""
        return [s for s, arch in arch_of.items() if self.arch_family in (None, arch_family(arch))]


def _plain(draw: Callable) -> Callable:
    """Adapter for the figures that need neither the spec nor the archs."""
    return lambda paths, out, spec=None, arch_of=None: draw(paths, out)


FIGURES: dict[str, Figure] = {
    "figure1": Figure("length", _plain(figure1), "Length"),
    "figure2": Figure("rhyme", rhyme_extremes_figure, "Rhyme schemes", lang="en"),
    "figure3": Figure("rhyme", rhyme_extremes_figure, "Rhyme schemes", lang="de"),
    "figure4": Figure("semantic", _plain(figure4), "Semantic similarity"),
    **{f"figure{5 + i}": Figure("rhyme", rhyme_family_figure, "Rhyme schemes", arch_family=key)
       for i, key in enumerate(FAMILIES)},
    "figure10": Figure("semantic", similarity_decoding_figure, "Semantic similarity", all_decodings=True),
    **{f"figure{11 + i}": Figure("rhyme", rhyme_decoding_figure, "Rhyme schemes per decoding config",
                                 all_decodings=True, arch_family=key) for i, key in enumerate(FAMILIES)},
}


def make(name: str, paths: list[str], out: str, arch_of: dict[str, str | None] | None = None):
    """Draw figure ``name`` from its cells into the PNG ``out`` (the CLI's and the workflow's entry)."""
    if name not in FIGURES:
        raise PoevalError(f"unknown figure {name!r} (one of {', '.join(FIGURES)})")
    return FIGURES[name].draw(paths, out, spec=FIGURES[name], arch_of=arch_of)


# --- Training curves (DVC plots) --------------------------------------------------------------------

def training_curve(model_dir: str, out: str) -> int:
    """Write ``step, dev_loss, train_loss`` of a checkpoint's ``training_log.json`` as a flat TSV, the
    form ``dvc plots`` reads one file per model from; returns the number of evaluations. A missing
    train loss is left empty."""
    path = Path(model_dir) / "training_log.json"
    if not path.exists():
        raise PoevalError(f"{path}: no training log (is {model_dir} a poeval checkpoint?)")
    evals = read_json(path).get("evals")
    if not isinstance(evals, list):
        raise PoevalError(f"{path}: no 'evals' list")
    rows = []
    for i, entry in enumerate(evals):
        if not isinstance(entry, dict) or entry.get("step") is None or entry.get("dev_loss") is None:
            raise PoevalError(f"{path}: evals[{i}] has no step or dev_loss")
        train = entry.get("train_loss")
        rows.append([str(int(entry["step"])), fmt(entry["dev_loss"], 6), "" if train is None else fmt(train, 6)])
    write_tsv(out, ["step", "dev_loss", "train_loss"], rows)
    return len(rows)
