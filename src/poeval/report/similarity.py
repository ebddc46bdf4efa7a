"""The similarity table and heatmap (:mod:`poeval.metrics.similarity`) from the cells of every pair of rows:
results/tables/similarity.tsv (one line per cell), its intervals (similarity.ci.tsv) and
results/figures/similarity.png (one heatmap per measure and language, rows and columns in table order)."""

from __future__ import annotations

from poeval.errors import PoevalError
from poeval.io import read_json
from poeval.metrics.similarity import MEASURES
from poeval.render import fmt, write_tsv

COLUMNS = ["lang", "row_a", "row_b", "n", "semantic", "semantic_a_to_b", "semantic_b_to_a", "ngram_jaccard",
           "end_word_jaccard", "near_duplicate_share", "near_duplicate_pairs"]
CI_COLUMNS = ["lang", "row_a", "row_b", "measure", "value", "ci_low", "ci_high"]
TITLES = {"semantic": "nearest neighbour (cosine)", "ngram_jaccard": "shared word n-grams (Jaccard)",
          "end_word_jaccard": "shared end words (Jaccard)", "near_duplicate_share": "near-duplicate share"}


def read_cells(cells: list[str], rows: dict[str, list[str]]) -> list[dict]:
    """The cells, each checked to be of a row of the job's languages."""
    out = []
    for path in cells:
        cell = read_json(path)
        try:
            lang, a, b = cell["lang"], cell["a"]["row"], cell["b"]["row"]
        except (KeyError, TypeError):
            raise PoevalError(f"{path}: not a similarity cell (no lang, a.row, b.row); rebuild it with "
                              "`poeval similarity cell`") from None
        if a not in rows.get(lang, ()) or b not in rows.get(lang, ()):
            raise PoevalError(f"{path}: rows {a}, {b} of {lang} are not among the job's rows "
                              f"({', '.join(rows.get(lang, ())) or 'no such language'})")
        out.append(cell | {"path": path})
    return out


def write_table(cells: list[str], rows: dict[str, list[str]], out: str, ci_out: str | None = None) -> None:
    """The table (4 decimals, byte-deterministic) and, with ``ci_out``, its long-form intervals."""
    found = read_cells(cells, rows)
    write_tsv(out, COLUMNS, [[c["lang"], c["a"]["row"], c["b"]["row"], str(c["n"])]
                             + [fmt(c[k], 4) for k in COLUMNS[4:-1]] + [str(c["near_duplicate_pairs"])]
                             for c in found])
    if ci_out:
        write_tsv(ci_out, CI_COLUMNS, [[c["lang"], c["a"]["row"], c["b"]["row"], k, fmt(c[k], 4),
                                        *(fmt(v, 4) for v in c["ci"].get(k, (None, None)))]
                                       for c in found for k in (*MEASURES, "semantic_a_to_b", "semantic_b_to_a")])


def matrix(found: list[dict], lang: str, names: list[str], measure: str):
    """The symmetric matrix of ``measure`` over ``names`` (NaN where no cell: the diagonal but HUMAN's)."""
    import numpy as np

    at = {name: i for i, name in enumerate(names)}
    grid = np.full((len(names), len(names)), np.nan)
    for c in found:
        if c["lang"] == lang and c[measure] is not None:
            i, j = at[c["a"]["row"]], at[c["b"]["row"]]
            grid[i, j] = grid[j, i] = c[measure]
    return grid


def write_figure(cells: list[str], rows: dict[str, list[str]], out: str) -> None:
    """One heatmap per measure (columns) and language (lines of panels), each value written in its square."""
    import numpy as np

    from poeval.render import finish_figure, load_pyplot

    found = read_cells(cells, rows)
    langs = list(rows) or ["none"]
    plt = load_pyplot()
    size = max([len(v) for v in rows.values()] + [2])
    fig, axes = plt.subplots(len(langs), len(MEASURES), figsize=(3.0 * len(MEASURES), 0.5 * size + 1.6 * len(langs)),
                             squeeze=False)
    for line, lang in zip(axes, langs):
        names = rows.get(lang, [])
        for ax, measure in zip(line, MEASURES):
            grid = matrix(found, lang, names, measure)
            ax.imshow(np.ma.masked_invalid(grid), vmin=0, vmax=1, cmap="viridis")
            for (i, j), value in np.ndenumerate(grid):
                if np.isfinite(value):
                    ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=6,
                            color="white" if value < 0.5 else "black")
            ax.set_xticks(range(len(names)), names, rotation=90, fontsize=6)
            ax.set_yticks(range(len(names)), names, fontsize=6)
            ax.set_title(f"{lang}: {TITLES[measure]}", fontsize=7)
    finish_figure(plt, fig, out)
