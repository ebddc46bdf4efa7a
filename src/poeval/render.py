"""How every stage writes its tables and figures: number formatting, TSV files and PNG figures, each
written atomically and byte-identically for equal content. The report stage, the BPoMP tables and the
style adherence table and figure all use these, so that no stage below the report imports it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from poeval.io import atomic_write

NA = "NA"   # a number that does not exist (an empty sample, an undefined ratio)


def fmt(value, digits: int) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return NA
    return f"{value:.{digits}f}"


def write_tsv(out: str | Path, header: list[str], rows: list[list[str]]) -> None:
    with atomic_write(out) as handle:
        handle.write("\t".join(header) + "\n")
        for row in rows:
            handle.write("\t".join(row) + "\n")


def save_figure(fig, out: str) -> None:
    # no Software metadata: the PNG bytes must not depend on the matplotlib version's banner
    with atomic_write(out, mode="wb", encoding=None) as handle:
        fig.savefig(handle, format="png", dpi=110, metadata={"Software": None})


def load_pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 8})
    return plt


def finish_figure(plt, fig, out: str) -> None:
    fig.tight_layout()
    save_figure(fig, out)
    plt.close(fig)


def note_panel(ax, text: str) -> None:
    """A panel-wide message (an empty family, a language not in the run), so a figure always builds."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=10,
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "grey"})
