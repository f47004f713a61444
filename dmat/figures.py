"""DMAT figures (Fig. 1, Fig. 10a-c): binned timelines in, RGBA image and matplotlib figure out.

:func:`dmat.analysis.figures` lists what a figure shows as plain arrays and JSON parameters (numpy
only), and :func:`dmat_figure_from_arrays` draws it (the builder a figure process calls,
:mod:`neutrino_ae.report.figures.process`): the command line draws in a process that imported matplotlib
while the trace was read, a notebook in its own process, both from the same job.

The plot: clock on x (cycles since the thread's kernel entry, the probe's own clock), page index on y
(distinct 64 KiB pages, ascending), one colour family per tensor, darker = denser. Density levels are
quantiles of the non-empty cells *of that tensor* (25/50/75/90 %), so a lightly used tensor still shows
its pattern. Cells are binned arrays (fixed ``--xbins`` clock bins and at most ``--ybins`` page rows,
:class:`dmat.binning.DmatBinner`): drawing time depends on the number of (clock, page) pairs, not on the
number of distinct clocks. There is no clock cut-off.
"""

from __future__ import annotations

import numpy as np

from neutrino_ae.report.figures.style import MAX_WIDTH_IN, mark_synthetic, new_figure, style_context

from .analysis import OTHER, UNNAMED
from .binning import DmatPlotData

#: Colour family per tensor (light -> dark); "other"/"unnamed" always grey.
FAMILIES = ["Blues", "Oranges", "Greens", "Purples", "Reds", "YlOrBr", "PuRd", "BuGn", "GnBu", "OrRd"]

QUANTILES = (0.25, 0.5, 0.75, 0.9)

def _levels(values: np.ndarray) -> np.ndarray:
    """Density level 1..5 of non-zero cells from quantiles of those cells (0 = empty)."""
    out = np.zeros(values.shape, np.int64)
    nz = values > 0
    if not nz.any():
        return out
    q = np.quantile(values[nz], QUANTILES)
    v = values[nz]
    # Midpoint of the strict and non-strict ranks: a tensor whose cells all hold the same count gets the
    # middle level, not the lightest.
    out[nz] = 1 + (np.searchsorted(q, v, side="left") + np.searchsorted(q, v, side="right")) // 2
    return out

def render_rgba(plot: DmatPlotData) -> np.ndarray:
    """RGBA image (ybins, xbins, 4) of uint8: each cell takes the colour of its densest tensor at its level.

    8-bit channels, as the PNG gets: matplotlib resamples a float image in float64 at the size it is drawn
    (about 40 MB for this figure, more than the streamed sparsifier's working set)."""
    import matplotlib

    ny, nx = plot.hist.shape[1:]
    img = np.full((ny, nx, 4), 255, np.uint8)
    best = np.zeros((ny, nx), plot.hist.dtype)
    for k, name in enumerate(plot.names):
        h = plot.hist[k]
        if not h.any():
            continue
        cmap = matplotlib.colormaps["Greys" if name in (OTHER, UNNAMED) else FAMILIES[k % len(FAMILIES)]]
        lev = _levels(h)
        palette = cmap(np.r_[0.0, np.linspace(0.35, 1.0, len(QUANTILES) + 1)], bytes=True)
        take = h > best
        img[take] = palette[lev[take]]
        best = np.maximum(best, h)
    return img

def _pages(n: int) -> str:
    return f"{n:,} page" if n == 1 else f"{n:,} pages"


def dmat_figure_from_arrays(arrays: dict[str, np.ndarray], params: dict):
    """The builder of :func:`dmat.analysis.figures`' jobs: the same figure :func:`_draw` makes of the plot."""
    plot = DmatPlotData(list(params["names"]), arrays["hist"], arrays["x_edges"], arrays["y_edges"],
                        int(params["n_pages"]), int(params["max_clock"]), arrays["accesses_per_label"],
                        arrays["pages_per_label"], arrays["row_label"])
    return _draw(plot, params["title"], params["synthetic"])


def _draw(plot: DmatPlotData, title: str, synthetic: bool):
    import matplotlib
    from matplotlib.patches import Patch

    with style_context():
        fig = new_figure(MAX_WIDTH_IN, 5.6, layout="constrained")
        fig.get_layout_engine().set(rect=(0, 0.3 / 5.6, 1, 1 - 0.3 / 5.6))  # strip for the synthetic footer
        ax = fig.subplots()
        ax.imshow(render_rgba(plot), aspect="auto", origin="lower", interpolation="nearest",
                  extent=(0, plot.x_edges[-1], 0, plot.n_pages))
        ax.grid(False)
        # A little room left of clock 0: accesses right at kernel entry would hide under the spine.
        ax.set_xlim(-0.01 * plot.x_edges[-1], plot.x_edges[-1] * 1.005)
        ax.set_xlabel("clock (cycles since the thread's kernel entry)")
        ax.set_ylabel("page index (64 KiB pages, ascending address)")
        ax.set_title(title, fontsize=11)
        # Tensor boundaries as thin lines, names on the right edge.
        if len(plot.names) > 1:
            rows = plot.row_label
            change = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1], True])
            sec = ax.secondary_yaxis("right")
            mids, labels = [], []
            for a, b in zip(change[:-1], change[1:], strict=True):
                y0, y1 = plot.y_edges[a], plot.y_edges[b]
                if a:
                    ax.axhline(y0, color="black", lw=0.4, alpha=0.5)
                if y1 - y0 >= plot.n_pages * 0.03:  # label only bands tall enough to read
                    mids.append((y0 + y1) / 2)
                    labels.append(plot.names[rows[a]])
            sec.set_yticks(mids, labels, fontsize=9)
            sec.tick_params(length=0)
        handles = []
        for k, name in enumerate(plot.names):
            if plot.accesses_per_label[k] == 0:
                continue
            fam = "Greys" if name in (OTHER, UNNAMED) else FAMILIES[k % len(FAMILIES)]
            colour = matplotlib.colormaps[fam](0.75)
            handles.append(Patch(color=colour, label=f"{name}: {_pages(int(plot.pages_per_label[k]))}, "
                                                     f"{int(plot.accesses_per_label[k]):,} accesses"))
        # Below the axes (never over the data); constrained layout makes room for it above the footer strip.
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=min(3, len(handles)),
                  frameon=False, title="tensor (darker = denser; levels = quantiles 25/50/75/90 % of its cells)",
                  title_fontsize=9)
        mark_synthetic(fig, synthetic)
    return fig
