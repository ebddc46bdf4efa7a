"""How every stage writes its tables and figures: number formatting, TSV files and PNG figures, each
written atomically and byte-identically for equal content. The report stage, the BPoMP tables and the
style adherence table and figure all use these, so that no stage below the report imports it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from poeval.files import atomic_write

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
    if place_legends(fig):   # a legend moved out of its axes takes room: lay out again, then check the rest
        fig.tight_layout()
        place_legends(fig)
    save_figure(fig, out)
    plt.close(fig)


# Where a legend may go inside its axes, in the order tried; where none is clear of the data, it goes outside.
LEGEND_SPOTS = ("upper right", "upper left", "lower right", "lower left", "center right", "center left",
                "upper center", "lower center")


def _data_shapes(ax, renderer):
    """What an axes plots, in display coordinates: the boxes of its bars (rectangles of some height) and
    points along its lines and outlines (histogram steps), 10 per segment so that a crossing is seen."""
    from matplotlib.patches import Polygon, Rectangle

    boxes = [p.get_window_extent(renderer) for p in ax.patches
             if isinstance(p, Rectangle) and p.get_visible() and p.get_height() != 0]
    paths = [p.get_transform().transform(p.get_path().vertices) for p in ax.patches
             if isinstance(p, Polygon) and p.get_visible()]
    paths += [ax.transData.transform(line.get_xydata()) for line in ax.lines
              if line.get_visible() and line.get_transform() == ax.transData]
    t = np.linspace(0, 1, 10)[:, None, None]
    points = np.concatenate([(path[:-1] + t * (path[1:] - path[:-1])).reshape(-1, 2) for path in paths if len(path) > 1]
                            or [np.empty((0, 2))])
    return boxes, points[np.isfinite(points).all(axis=1)]


def _covers(box, shapes) -> bool:
    boxes, points = shapes
    inside = ((points[:, 0] > box.x0) & (points[:, 0] < box.x1) & (points[:, 1] > box.y0) & (points[:, 1] < box.y1))
    return bool(inside.any()) or any(box.overlaps(b) for b in boxes)


def _renderer(fig):
    """The figure's Agg renderer (a closed pyplot figure gets a new Agg canvas)."""
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    return fig.canvas.get_renderer()


def legend_overlaps(fig) -> list[str]:
    """The titles of the axes whose legend covers plotted data (after drawing the figure)."""
    renderer = _renderer(fig)
    fig.draw(renderer)
    return [ax.get_title() or f"axes {i}" for i, ax in enumerate(fig.axes)
            if ax.get_legend() and _covers(ax.get_legend().get_window_extent(renderer), _data_shapes(ax, renderer))]


def place_legends(fig) -> bool:
    """Put each axes' legend at the first of :data:`LEGEND_SPOTS` where it covers no data, else outside, to
    the right of the axes; True when one went outside."""
    renderer = _renderer(fig)
    outside = False
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        style = {"fontsize": legend.get_texts()[0].get_fontsize() if legend.get_texts() else None,
                 "frameon": legend.get_frame_on()}
        shapes = _data_shapes(ax, renderer)
        for spot in LEGEND_SPOTS:
            legend = ax.legend(loc=spot, **style)
            if not _covers(legend.get_window_extent(renderer), shapes):
                break
        else:
            ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, **style)
            outside = True
    return outside


def note_panel(ax, text: str) -> None:
    """A panel-wide message (an empty family, a language not in the run), so a figure always builds."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=10,
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "grey"})
