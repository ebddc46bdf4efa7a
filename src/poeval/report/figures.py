"""Figures of the paper, drawn from the per-cell JSON files (the same cells as the tables).

The HUMAN samples of a language are pooled into one distribution (rhyme schemes: the mean of their
shares, as in Table 6). PNGs carry no timestamp or software version, so the same cells give the same
bytes. :data:`FIGURES` maps the paper's figure numbers to what poeval draws; the workflow
(rules/tables.smk) builds one rule per entry. Panels are lettered (a), (b), ... as in the paper.

Figure numbers (Chen et al. 2024, main text and appendix):

* 1: length histograms; 4: max-similarity distributions (first decoding config);
* 2 (German), 3 (English): rhyme schemes of (a) HUMAN and of the (b) best, (c) worst and (d) average
  model by rhyme cross-entropy;
* 5: rhyme schemes of the poetry-specific systems (DeepSpeare, SA), per system and language;
  6 German and 7 English unconditioned LLMs, 8 German and 9 English style-conditioned LLMs;
* 10-15 show one system each (params ``figures``): 10 its max similarity to train per decoding
  config; 11 its rhyme schemes at the default vs a lowered temperature; 12-15 its rhyme schemes under
  every decoding config;
* ``metre_figure`` (not in the paper): metre families of HUMAN and of each system, HUMAN outlined;
  ``distinct_k_figure`` (not in the paper): the distinct-k curve of every row (:mod:`poeval.report.figures_distinct`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from poeval.errors import PoevalError
from poeval.generators import registry
from poeval.io import read_json
from poeval.poetry.schemes import SCHEMES_4
from poeval.poetry.style import METERS
from poeval.render import finish_figure, fmt, load_pyplot, note_panel, write_tsv
from poeval.report.figures_basic import (BAR_COLOR, SIM_BINS, _lang_name, _letter, _load_per_poem, _panels,  # noqa: F401
                                         _sim_hist, figure1, figure4, sim_limits)
from poeval.report.figures_distinct import distinct_k_figure
from poeval.report.tables import HUMAN, n_range


@dataclass(frozen=True)
class Selection:
    """The one system, of one language, that figures 10-15 show (params ``figures.<name>``), and the
    decoding configs of its panels in order (empty: every decoding config it has cells of)."""

    system: str
    lang: str
    decodings: tuple[str, ...] = ()


def _check_selected(lang: str, system: str, sel: Selection) -> None:
    if lang != sel.lang or system not in (HUMAN, sel.system):
        raise PoevalError(f"a cell of {system} ({lang}) given to a figure of {sel.system} ({sel.lang})")


def _decoding_panels(sel: Selection, present: list[str], has_human: bool) -> list[tuple[str, str | None]]:
    """(decoding config, None or the note that replaces its panel) per panel of a single-system figure: the
    configs asked for that have cells (one asked for without a cell gets no panel: :func:`_left_out` says so)."""
    if not present:
        missing = f"system '{sel.system}'" if has_human else f"language '{sel.lang}'"
        return [("", f"{missing} not in this run")]
    return [(d, None) for d in sel.decodings or present if d in present]


def _left_out(title: str, sel: Selection, present: list[str]) -> str:
    """The figure's title, with a line naming the decoding configs asked for that have no cell in this run (a
    panel that only said so took as much room as a drawn one)."""
    missing = [d for d in sel.decodings if d not in present] if present else []
    if not missing:
        return title
    return f"{title}\n(no panel for {', '.join(missing)}: not configured for {sel.system} in this run)"


# --- Figure 10: max similarity per decoding config of one system -----------------------------------

def similarity_decoding_figure(paths: list[str], out: str, spec: "Figure", models=None, selection=None) -> dict:
    """Figure 10: one panel per decoding config, the histogram of the system's per-quatrain max cosine
    similarity to the training set (the paper's measure), over the pooled HUMAN samples' (outline)."""
    sel = _required(selection)
    human, by_decoding, has_human = [], {}, False
    for c, per_poem in _load_per_poem(paths, "semantic"):
        _check_selected(c["lang"], c["system"], sel)
        has_human |= c["system"] == HUMAN
        pooled = human if c["system"] == HUMAN else by_decoding.setdefault(c["decoding"], [])
        pooled.extend(per_poem.get("across") or [])
    plt = load_pyplot()
    panels = _decoding_panels(sel, list(by_decoding), has_human)
    title = _left_out(spec.title.format(system=sel.system, lang=_lang_name(sel.lang)), sel, list(by_decoding))
    fig, axes = _panels(plt, len(panels), title, "density")
    data = {}
    for i, (ax, (decoding, note)) in enumerate(zip(axes, panels)):
        values = np.asarray(by_decoding.get(decoding, []), dtype=float)
        if note is None and values.size:
            ax.hist(values, bins=SIM_BINS, density=True, color=BAR_COLOR, label=sel.system)
            if human:
                _sim_hist(ax, np.asarray(human, dtype=float), HUMAN, human=True)
            ax.legend(frameon=False, fontsize=6, loc="upper left")
            data[decoding] = values
        else:
            note_panel(ax, note or "no similarities in this cell")
        ax.set_title(f"{_letter(i)} {decoding} (n={values.size})" if decoding else "")
        ax.set_xlabel("max cosine similarity to train")
    for ax in axes:
        ax.set_xlim(*sim_limits([*data.values(), human]))
    finish_figure(plt, fig, out)
    return data


# --- Rhyme-scheme figures (2, 3, 5-9, 11-15) ---------------------------------------------------------

@dataclass(frozen=True)
class SchemeSeries:
    """One sample's scheme shares: a model cell, or the HUMAN samples of a language averaged."""

    lang: str
    system: str
    decoding: str          # "-" for HUMAN
    shares: np.ndarray     # over SCHEMES_4, fractions
    cross_entropy: float | None
    n: float               # valid quatrains (mean over the HUMAN samples)
    n_range: str           # how titles show n: tables.n_range (the HUMAN samples' range when they differ)

    @property
    def label(self) -> str:
        return HUMAN if self.system == HUMAN else f"{self.system} ({self.decoding})"


def _rhyme_cell(path: str, family: str = "rhyme", labels: tuple[str, ...] = SCHEMES_4) -> dict:
    cell = read_json(path)
    rhyme = cell.get(family) if isinstance(cell, dict) else None
    if "cell" not in cell or not isinstance(rhyme, dict) or not isinstance(rhyme.get("distribution"), dict):
        raise PoevalError(f"{path}: not a '{family}' metric cell (no {family}.distribution)")
    unknown = sorted(set(rhyme["distribution"]) - set(labels))
    if unknown:
        what = "rhyme scheme" if family == "rhyme" else f"{family} label"
        raise PoevalError(f"{path}: unknown {what} {unknown[0]!r} in {family}.distribution")
    return cell


def _mean_or_none(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def _share(value) -> float:
    return np.nan if value is None else value   # a cell without labels (metre of German model samples)


def scheme_series(paths: list[str], family: str = "rhyme", labels: tuple[str, ...] = SCHEMES_4) -> list[SchemeSeries]:
    """One series per (lang, system, decoding) in input order; a language's HUMAN cells are averaged.
    ``family``, ``labels``: the label distribution read (rhyme schemes, or the metre families)."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for path in paths:
        cell = _rhyme_cell(path, family, labels)
        c = cell["cell"]
        groups[(c["lang"], c["system"], "-" if c["system"] == HUMAN else c["decoding"])].append(cell)
    out = []
    for (lang, system, decoding), cells in groups.items():
        shares = np.mean([[_share(cell[family]["distribution"].get(s, 0.0)) for s in labels] for cell in cells], axis=0)
        ce = _mean_or_none([cell[family].get("cross_entropy") for cell in cells])
        ns = [cell.get("n_poems", 0) for cell in cells]
        out.append(SchemeSeries(lang, system, decoding, shares, ce, float(np.mean(ns)), n_range(ns)))
    return out


def extremes(series: list[SchemeSeries]) -> dict[str, SchemeSeries]:
    """The best, worst and average model by rhyme cross-entropy (read from the cell): the models ranked
    by it (ties in input, i.e. params, order), the first, the last and the median (the lower of the two
    middle ones for an even count). The median, not the model closest to the mean, is what reproduces
    the paper's picks from its Table 6 (German: LLaMA3, English: ByGPT5 L). Cells without a
    cross-entropy (no valid quatrain) are not ranked."""
    ranked = sorted((s for s in series if s.system != HUMAN and s.cross_entropy is not None),
                    key=lambda s: s.cross_entropy)
    if not ranked:
        return {}
    return {"best": ranked[0], "worst": ranked[-1], "average": ranked[(len(ranked) - 1) // 2]}


# A panel: (title, the series drawn or None, the HUMAN series outlined behind it or None, note or None)
SchemePanel = tuple[str, "SchemeSeries | None", "SchemeSeries | None", "str | None"]


def _scheme_figure(title: str, panels: list[SchemePanel], out: str, labels: tuple[str, ...] = SCHEMES_4,
                   legend: str = "upper left") -> dict:
    """One bar chart of scheme shares (%) per panel, lettered as in the paper; a panel with a note (or a
    series without valid quatrains) shows the note instead. Returns panel title -> shares (%)."""
    plt = load_pyplot()
    fig, axes = _panels(plt, len(panels), title, "share of quatrains (%)")
    x = np.arange(len(labels))
    data = {}
    for i, (ax, (name, series, human, note)) in enumerate(zip(axes, panels)):
        if note is None and series is not None and series.n:
            is_human = series.system == HUMAN
            ax.bar(x, 100 * series.shares, 0.8, color="dimgrey" if is_human else BAR_COLOR,
                   label=HUMAN if is_human else series.system)
            if human is not None and not is_human:
                ax.bar(x, 100 * human.shares, 0.8, fill=False, edgecolor="black", linewidth=0.7, label=HUMAN)
                ax.legend(frameon=False, fontsize=6, loc=legend)
            data[name] = 100 * series.shares
        else:
            note_panel(ax, note or "no valid quatrains")
        ax.set_title(f"{_letter(i)} {name}" if name else "", fontsize=8)
        ax.set_xticks(x, labels, rotation=90, fontsize=6)
        ax.set_xlim(-0.6, len(labels) - 0.4)
    finish_figure(plt, fig, out)
    return data


def _check_lang(series: list[SchemeSeries], lang: str | None) -> None:
    wrong = [s for s in series if lang is not None and s.lang != lang]
    if wrong:
        raise PoevalError(f"a cell of language '{wrong[0].lang}' ({wrong[0].label}) given to a figure of '{lang}'")


def _humans(series: list[SchemeSeries]) -> dict[str, SchemeSeries]:
    return {s.lang: s for s in series if s.system == HUMAN}


def rhyme_extremes_figure(paths: list[str], out: str, spec: "Figure", models=None, selection=None) -> dict:
    """Figures 2 (German) and 3 (English): (a) HUMAN, then the (b) best, (c) worst and (d) average model
    by rhyme cross-entropy to the human distribution."""
    series = scheme_series(paths)
    _check_lang(series, spec.lang)
    human = _humans(series).get(spec.lang)
    picks = extremes(series)
    panels: list[SchemePanel] = [(f"HUMAN (n={human.n_range})", human, None, None)] if human else []
    roles: dict[int, list[str]] = {}   # one panel per model: with 1 or 2 models, "average" is best or worst
    for role, s in picks.items():
        roles.setdefault(id(s), []).append(role)
    for role, s in picks.items():
        if roles[id(s)][0] == role:
            panels.append((f"{' and '.join(roles[id(s)])}: {s.label}\nCE {s.cross_entropy:.3f} bits, n={s.n_range}",
                           s, human, None))
    if not series:
        panels.append(("", None, None, f"language '{spec.lang}' not in this run"))
    elif not picks:
        panels.append(("", None, None, "no model cell with valid quatrains"))
    return _scheme_figure(_unequal_n(spec.title.format(lang=_lang_name(spec.lang)), series), panels, out)


def _unequal_n(title: str, series: list[SchemeSeries]) -> str:
    """The title of a ranking figure, marked when the models ranked hold different numbers of quatrains: a
    cross-entropy estimated from fewer quatrains is larger, so such a ranking is partly one of n."""
    ns = sorted({round(s.n) for s in series if s.system != HUMAN and s.cross_entropy is not None})
    if len(ns) < 2:
        return title
    return (f"{title}\n(ranked at unequal n, {ns[0]}-{ns[-1]}, without intervals: the cross-entropy grows as n "
            f"falls; table6_common_n ranks at one n)")


def _check_kind(series: list[SchemeSeries], spec: "Figure", models: dict) -> None:
    for s in series:
        if s.system == HUMAN:
            continue
        if s.system not in models:
            raise PoevalError(f"system '{s.system}' has no model entry (pass every system's with --models)")
        if system_kind(models[s.system]) != spec.kind:
            raise PoevalError(f"system '{s.system}' is not one of the {KINDS[spec.kind]} that this figure shows")


def rhyme_kind_figure(paths: list[str], out: str, spec: "Figure", models=None, selection=None) -> dict:
    """Figures 5-9: one panel per system of one kind (poetry-specific; unconditioned or style-conditioned
    LLMs) and language (5: both, system by system; 6-9: one), HUMAN outlined."""
    series = scheme_series(paths)
    _check_lang(series, spec.lang)
    _check_kind(series, spec, models or {})
    humans = _humans(series)
    systems = [s for s in series if s.system != HUMAN]
    order = list(dict.fromkeys(s.system for s in systems))
    systems.sort(key=lambda s: order.index(s.system))       # stable: languages stay in input order
    one_lang = spec.lang is not None
    panels: list[SchemePanel] = [(f"{s.system}, n={s.n_range}" if one_lang else f"{s.system} ({s.lang}), n={s.n_range}",
                                  s, humans.get(s.lang), None) for s in systems]
    if not panels:
        missing = f"language '{spec.lang}'" if one_lang and not humans else KINDS[spec.kind]
        panels = [("", None, None, f"{missing} not in this run")]
    return _scheme_figure(spec.title.format(lang=_lang_name(spec.lang)), panels, out)


def rhyme_decoding_figure(paths: list[str], out: str, spec: "Figure", models=None, selection=None) -> dict:
    """Figures 11-15: one panel per decoding config of one system (11: its default and lowered
    temperature), HUMAN outlined."""
    sel = _required(selection)
    series = scheme_series(paths)
    for s in series:
        _check_selected(s.lang, s.system, sel)
    human = _humans(series).get(sel.lang)
    by_decoding = {s.decoding: s for s in series if s.system != HUMAN}
    panels: list[SchemePanel] = [
        (f"{decoding}, n={by_decoding[decoding].n_range}" if note is None else decoding,
         by_decoding.get(decoding), human, note)
        for decoding, note in _decoding_panels(sel, list(by_decoding), human is not None)]
    title = _left_out(spec.title.format(system=sel.system, lang=_lang_name(sel.lang)), sel, list(by_decoding))
    return _scheme_figure(title, panels, out)


# --- Metre figure (not in the paper) ------------------------------------------------------------------

def metre_figure(paths: list[str], out: str, spec: "Figure", models=None, selection=None) -> dict:
    """Metre families: one panel per language's HUMAN samples and per system (first decoding config), HUMAN
    of the same language outlined behind each system, as the rhyme-scheme figures."""
    series = scheme_series(paths, "metre", METERS)
    humans = _humans(series)
    panels: list[SchemePanel] = [(f"{s.label} ({s.lang}), n={s.n_range}", s,
                                  None if s.system == HUMAN else humans.get(s.lang), None) for s in series]
    # the legend clear of the iambic bar, usually the tallest
    return _scheme_figure(spec.title, panels or [("", None, None, "no metre cell in this run")], out, labels=METERS,
                          legend="upper center")


# --- The registry -----------------------------------------------------------------------------------

# System kinds of the paper's appendix figures: the poetry-specific generators (5), unconditioned (6,
# 7) and style-conditioned LLMs (8, 9). Any arch outside the LLM families counts as poetry-specific.
LLM_ARCHS = registry.names("llm")
KINDS = {"poetic": "poetry-specific systems", "unconditioned": "unconditioned LLMs",
         "conditioned": "style-conditioned LLMs"}


def system_kind(model: dict) -> str:
    """``poetic``, ``unconditioned`` or ``conditioned`` of a ``models`` entry (its arch and conditioned; a
    samples system: its ``kind``, as params say what generator wrote them)."""
    if "kind" in model:
        return model["kind"]
    if model.get("arch") not in LLM_ARCHS and not registry.is_served(model):
        return "poetic"
    return "conditioned" if model.get("conditioned") else "unconditioned"


@dataclass(frozen=True)
class Figure:
    """What a figure reads: cells of ``family`` of one language (``lang``) or all, of the systems of one
    ``kind`` or all, under the first decoding config; or (``single``) one system of one language, set
    in params ``figures.<name>``, under several decoding configs. ``title`` is formatted with ``lang``
    (the language's name) and ``system``."""

    family: str
    draw: Callable
    group: str                       # report subcategory
    title: str = ""
    lang: str | None = None
    kind: str | None = None
    single: bool = False

    def systems(self, models: dict[str, dict]) -> list[str]:
        """The systems (in ``models`` order) whose cells this (not single-system) figure reads."""
        return [s for s, model in models.items() if self.kind in (None, system_kind(model))]


def _required(selection: Selection | None) -> Selection:
    if selection is None:
        raise PoevalError("this figure shows one system: pass --system and --lang (params figures.<name>)")
    return selection


def _plain(draw: Callable) -> Callable:
    """Adapter for the figures that need neither the spec nor the selection."""
    return lambda paths, out, spec=None, models=None, selection=None: draw(paths, out)


_EXTREMES = "{lang}: rhyme schemes of HUMAN and of the best, worst and average model by cross-entropy"
_PER_DECODING = "{system} ({lang}): rhyme schemes per decoding config"

FIGURES: dict[str, Figure] = {
    "figure1": Figure("length", _plain(figure1), "Length"),
    "figure2": Figure("rhyme", rhyme_extremes_figure, "Rhyme schemes", _EXTREMES, lang="de"),
    "figure3": Figure("rhyme", rhyme_extremes_figure, "Rhyme schemes", _EXTREMES, lang="en"),
    "figure4": Figure("semantic", _plain(figure4), "Semantic similarity"),
    "figure5": Figure("rhyme", rhyme_kind_figure, "Rhyme schemes",
                      "Rhyme schemes of the poetry-specific systems (DeepSpeare, SA)", kind="poetic"),
    "figure6": Figure("rhyme", rhyme_kind_figure, "Rhyme schemes", "{lang}: rhyme schemes of the unconditioned LLMs",
                      lang="de", kind="unconditioned"),
    "figure7": Figure("rhyme", rhyme_kind_figure, "Rhyme schemes", "{lang}: rhyme schemes of the unconditioned LLMs",
                      lang="en", kind="unconditioned"),
    "figure8": Figure("rhyme", rhyme_kind_figure, "Rhyme schemes",
                      "{lang}: rhyme schemes of the style-conditioned LLMs", lang="de", kind="conditioned"),
    "figure9": Figure("rhyme", rhyme_kind_figure, "Rhyme schemes",
                      "{lang}: rhyme schemes of the style-conditioned LLMs", lang="en", kind="conditioned"),
    "figure10": Figure("semantic", similarity_decoding_figure, "Decoding configs",
                       "{system} ({lang}): max similarity to train per decoding config", single=True),
    "figure11": Figure("rhyme", rhyme_decoding_figure, "Decoding configs",
                       "{system} ({lang}): rhyme schemes at the default vs a lowered temperature", single=True),
    **{f"figure{i}": Figure("rhyme", rhyme_decoding_figure, "Decoding configs", _PER_DECODING, single=True)
       for i in (12, 13, 14, 15)},
    # not in the paper (docs/beyond-the-paper.md "Beyond the paper")
    "metre_figure": Figure("metre", metre_figure, "Metre (not in the paper)",
                           "Metre families of HUMAN and of each system (not in the paper)"),
    "distinct_k_figure": Figure("distinct_k", distinct_k_figure, "Distinct-k (not in the paper)",
                                "Distinct-k: classes of near-duplicates among the first k quatrains (not in the paper)"),
}


def models_of(params: dict) -> dict[str, dict]:
    """{system: {arch, conditioned, kind}} of the run's systems, what figures 5-9 group by (a samples
    system's kind is its params ``kind``); ``params``: resolved."""
    return {s: {key: params["models"][s][key] for key in ("arch", "conditioned", "kind") if key in params["models"][s]}
            for s in params["systems"]}


def figure_decodings(params: dict, name: str) -> list[str]:
    """The decoding configs of the panels of single-system figure ``name``: params
    ``figures.<name>.decodings``, or every configured one the system runs."""
    sel = params["figures"][name]
    if sel["decodings"]:
        return list(sel["decodings"])
    if sel["system"] not in params["systems"]:
        return list(params["decodings"])
    return registry.system_decodings(params, sel["system"], params["decodings"], sel["lang"], every=True)


def has_panels(params: dict, name: str) -> bool:
    """Whether figure ``name`` has something to draw in this run (``params``: resolved): its language
    configured and, for figures 5-9, a system of its kind; figures 10-15 their one system, in the run, in
    a configured language. The main job makes only these; one asked for by name draws a labelled note."""
    fig, langs = FIGURES[name], params["languages"]
    if fig.single:
        sel = params["figures"][name]
        return sel["lang"] in langs and sel["system"] in params["systems"]
    if fig.lang is not None and fig.lang not in langs:
        return False
    return fig.kind is None or bool(fig.systems(models_of(params)))


def same_as(params: dict, name: str) -> list[str]:
    """The other single-system figures that draw exactly what ``name`` draws in this run (figures 12-15
    share a title and differ only by their params ``figures`` entries: on a small run they coincide)."""
    def drawn(figure):
        spec, sel = FIGURES[figure], params["figures"][figure]
        return spec.draw, spec.title, sel["system"], sel["lang"], tuple(figure_decodings(params, figure))

    if not FIGURES[name].single:
        return []
    return [other for other, spec in FIGURES.items() if other != name and spec.single and drawn(other) == drawn(name)]


def figure_params(models: dict | None, selection: Selection | None, same: str | None = None) -> dict:
    """What a figure records it was drawn with (beside its cells): the systems' kinds, or its one system (and
    the figure it repeats)."""
    if selection is not None:
        return {"system": selection.system, "lang": selection.lang, "decodings": list(selection.decodings),
                **({"same_as": same} if same else {})}
    return {"models": models} if models else {}


def figure_args(params: dict, name: str) -> tuple[dict, Selection | None]:
    """The ``models`` and :class:`Selection` that rule ``name`` passes `poeval figure` (``params``: resolved)."""
    if FIGURES[name].kind:
        return models_of(params), None
    if not FIGURES[name].single:
        return {}, None
    sel = params["figures"][name]
    return {}, Selection(sel["system"], sel["lang"], tuple(figure_decodings(params, name)))


def repeats(params: dict, name: str) -> str | None:
    """The earlier figure that single-system figure ``name`` would repeat in this run (:func:`same_as`), or
    None: the main job's two systems and one decoding config make 14 draw what 12 draws, 15 what 13 does."""
    earlier = list(FIGURES)[:list(FIGURES).index(name)] if name in FIGURES else []
    return next((other for other in same_as(params, name) if other in earlier), None)


def _repeat_note(name: str, same: str, selection: Selection | None, out: str) -> dict:
    """In the place of a figure that repeats ``same``: one panel that names it, instead of a second copy."""
    plt = load_pyplot()
    fig, (ax,) = _panels(plt, 1, f"Figure {name.removeprefix('figure')}", "")
    what = f"{selection.system} ({_lang_name(selection.lang)})" if selection else "the same system"
    ax.axis("off")
    note_panel(ax, f"The same as Figure {same.removeprefix('figure')} in this run:\nparams figures.{name} "
                   f"and figures.{same}\nboth show {what}\nunder the same decoding configs")
    finish_figure(plt, fig, out)
    return {"same_as": same}


def make(name: str, paths: list[str], out: str, models: dict[str, dict] | None = None,
         selection: Selection | None = None, same: str | None = None):
    """Draw figure ``name`` from its cells into the PNG ``out`` (the CLI's and the workflow's entry).
    ``models``: {system: {arch, conditioned}} (figures 5-9); ``selection``: the system of 10-15; ``same``:
    the earlier figure it repeats in this run (:func:`repeats`), named in its place."""
    if name not in FIGURES:
        raise PoevalError(f"unknown figure {name!r} (one of {', '.join(FIGURES)})")
    if same is not None:
        if same not in FIGURES:
            raise PoevalError(f"--same-as: unknown figure {same!r} (one of {', '.join(FIGURES)})")
        return _repeat_note(name, same, selection, out)
    return FIGURES[name].draw(paths, out, spec=FIGURES[name], models=models, selection=selection)


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


def figure_place(name: str) -> dict:
    """``category``, ``subcategory`` and ``labels`` of figure ``name`` in the Snakemake report: the paper's
    figures by their group, numbered so that Figure 2 comes before Figure 10; the others beyond the paper."""
    from poeval.report.tables import OTHER_SUBCATEGORIES, REPORT_CATEGORIES, numbered_label

    if name.removeprefix("figure").isdigit():
        return {"category": REPORT_CATEGORIES[1], "subcategory": FIGURES[name].group,
                "labels": {"figure": numbered_label(name)}}
    group = FIGURES[name].group if name in FIGURES else OTHER_SUBCATEGORIES[name]
    return {"category": REPORT_CATEGORIES[2], "subcategory": group, "labels": {"figure": numbered_label(name)}}
