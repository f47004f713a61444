"""One figure style for every section, the synthetic-data mark, and atomic figure saving.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot global state, no GUI backend), so
scripts, tests and notebook kernels behave the same; notebooks display the saved PNG.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from neutrino_ae.atomic import atomic_path

#: Colour cycle used by every section (colour-blind friendly, Okabe-Ito).
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
NCU_COLOR = "#b31805"
NEUTRINO_KERNEL_COLOR = "#812be1"
NEUTRINO_EPILOGUE_COLOR = "#0053d6"
NEUTRINO_PROLOGUE_COLOR = "#7fb3ff"

RC = {
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "legend.fontsize": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
}

SYNTHETIC_LABEL = "SYNTHETIC SAMPLE DATA (execution model, not a GPU measurement)"
UNKNOWN_PROVENANCE_LABEL = "UNVERIFIED PROVENANCE: no bundle.json, the data may be synthetic"


def new_figure(width: float = 7.0, height: float = 4.0, **kwargs) -> Figure:
    """A Figure with the suite's style applied."""
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(width, height), **kwargs)
    return fig


def style_context():
    """Context manager applying the suite's rcParams (wrap axes creation and drawing in it)."""
    return matplotlib.rc_context(RC)


def mark_synthetic(fig: Figure, synthetic: bool | None = True) -> None:
    """Put a visible watermark and a footer on figures made from a sample bundle, and a warning
    footer on figures whose data's provenance is unknown (``synthetic=None``: no bundle.json)."""
    if synthetic is None:
        fig.text(0.995, 0.005, UNKNOWN_PROVENANCE_LABEL, fontsize=8, color="#a05000", ha="right", va="bottom",
                 transform=fig.transFigure)
        return
    if not synthetic:
        return
    fig.text(0.5, 0.5, "SYNTHETIC", fontsize=48, color="grey", alpha=0.13, ha="center", va="center",
             rotation=25, zorder=1000, transform=fig.transFigure)
    fig.text(0.995, 0.005, SYNTHETIC_LABEL, fontsize=8, color="#a00000", ha="right", va="bottom",
             transform=fig.transFigure)


def interval_bars(ax, y: np.ndarray, left: np.ndarray, width: np.ndarray, colors: str | Sequence[str],
                  height: float = 0.8, edgecolor: str = "none", linewidth: float = 0.0) -> None:
    """Horizontal bars (one per interval, centred on ``y``) drawn as ONE rasterised artist: a patch per
    bar costs seconds per thousand bars, and in vector outputs this layer stays pixels, so a figure's
    cost and size do not grow with the trace."""
    from matplotlib.collections import PolyCollection

    x0 = np.asarray(left, dtype=float)
    x1 = x0 + np.asarray(width, dtype=float)
    y = np.asarray(y, dtype=float)
    y0, y1 = y - height / 2, y + height / 2
    verts = np.stack([np.c_[x0, y0], np.c_[x0, y1], np.c_[x1, y1], np.c_[x1, y0]], axis=1)
    ax.add_collection(PolyCollection(verts, facecolors=colors, edgecolors=edgecolor, linewidths=linewidth,
                                     rasterized=True))
    ax.update_datalim(np.c_[np.r_[x0, x1], np.r_[y0, y1]] if x0.size else np.zeros((0, 2)))
    ax.autoscale_view()


def has_raster_content(fig: Figure) -> bool:
    """Whether the figure draws an image or a rasterised layer (its SVG would embed the same pixels)."""
    return any(ax.images or any(a.get_rasterized() for a in (*ax.collections, *ax.patches, *ax.lines))
               for ax in fig.axes)


def save_figure(fig: Figure, out_dir: str | os.PathLike[str], stem: str,
                formats: Sequence[str] | None = None) -> list[Path]:
    """Save ``fig`` as ``out_dir/stem.<fmt>`` for each format, atomically; PNG path first.

    Default formats: PNG, plus SVG where a vector copy is worth having, i.e. unless the figure's
    content is raster (:func:`has_raster_content`): such an SVG holds the same pixels in a larger
    file and costs as much again to write. The layout is computed once for all formats.
    """
    if formats is None:
        formats = ("png",) if has_raster_content(fig) else ("png", "svg")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    laid_out = fig.get_layout_engine() is not None
    with matplotlib.rc_context(RC):
        for i, fmt in enumerate(formats):
            target = out / f"{stem}.{fmt}"
            with atomic_path(target) as tmp:
                fig.savefig(tmp, format=fmt)
            paths.append(target)
            if laid_out and i == 0 and len(formats) > 1:
                # The first save placed every axes; keep those positions instead of laying out again.
                fig.set_layout_engine("none")
    return paths
