"""The distinct-k figure (not in the paper): the curve D(k) of every row, one panel per language.

A row's curve is the number of classes of near-duplicates among its first k quatrains
(:mod:`poeval.metrics.distinct`). The first HUMAN sample of a language is drawn in black, its other HUMAN
samples in thin grey (one legend entry), each system's row in colour; the dotted diagonal D(k) = k is a
sample of quatrains all distinct. Beside it, k - D(k), the quatrains so far that joined an earlier class: where
every row keeps close to the diagonal, that panel shows how far each falls below it."""

from __future__ import annotations

from poeval.errors import PoevalError
from poeval.io import read_json
from poeval.render import finish_figure, load_pyplot, note_panel
from poeval.report.figures_basic import _lang_name, _letter
from poeval.report.tables import HUMAN


def _curves(paths: list[str]) -> dict[str, list[tuple[str, str, list[int]]]]:
    """lang -> (system, decoding, curve) of each cell, in input order."""
    out: dict[str, list] = {}
    for path in paths:
        cell = read_json(path)
        section = cell.get("distinct_k") if isinstance(cell, dict) and "cell" in cell else None
        if not isinstance(section, dict) or not isinstance(section.get("curve"), list):
            raise PoevalError(f"{path}: not a 'distinct_k' metric cell (no distinct_k.curve)")
        c = cell["cell"]
        out.setdefault(c["lang"], []).append((c["system"], c["decoding"], section["curve"]))
    return out


def _draw(ax, rows: list[tuple[str, str, list[int]]], joined: bool = False) -> dict:
    data, human_seen, top = {}, 0, 1
    for system, decoding, d in rows:
        k = range(1, len(d) + 1)
        top = max(top, len(d))
        curve = [i - v for i, v in zip(k, d)] if joined else d
        if system == HUMAN:
            first = human_seen == 0
            ax.plot(k, curve, color="black" if first else "grey", linewidth=1.6 if first else 0.6,
                    label=f"{HUMAN} ({decoding})" if first else (f"{HUMAN} (other samples)" if human_seen == 1 else None),
                    zorder=3 if first else 1)
            human_seen += 1
        else:
            ax.plot(k, curve, linewidth=1.2, label=f"{system} ({decoding})", zorder=2)
        data[f"{system}/{decoding}"] = d
    if not joined:
        ax.plot([1, top], [1, top], linestyle=":", color="lightgrey", linewidth=0.8, zorder=0)
    ax.legend(frameon=False, fontsize=6, loc="upper left")
    return data


def distinct_k_figure(paths: list[str], out: str, spec=None, models=None, selection=None) -> dict:
    """Two panels per language: D(k) and k - D(k) against k for every row."""
    plt = load_pyplot()
    by_lang = _curves(paths)
    title = spec.title if spec is not None else ""
    fig, axes = plt.subplots(max(1, len(by_lang)), 2, figsize=(7.5, 2.8 * max(1, len(by_lang)) + 0.5), squeeze=False)
    fig.suptitle(title)
    data = {}
    for i, (row, (lang, rows)) in enumerate(zip(axes, by_lang.items())):
        for j, (ax, joined) in enumerate(zip(row, (False, True))):
            data[lang] = _draw(ax, rows, joined)
            ax.set_title(f"{_letter(2 * i + j)} {_lang_name(lang)}: " + ("joined an earlier class" if joined else "classes"))
            ax.set_xlabel("quatrains k")
            ax.set_ylabel("k - D(k)" if joined else "D(k)")
    axes = list(axes.flat)
    if not by_lang:
        note_panel(axes[0], "no distinct_k cell in this run")
    finish_figure(plt, fig, out)
    return data
