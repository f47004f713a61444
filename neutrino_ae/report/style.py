"""One figure style for every section, the synthetic-data mark, and atomic figure saving.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot global state, no GUI backend), so
scripts, tests and notebook kernels behave the same; notebooks display the saved PNG.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib
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


def save_figure(fig: Figure, out_dir: str | os.PathLike[str], stem: str,
                formats: Sequence[str] = ("png", "svg")) -> list[Path]:
    """Save ``fig`` as ``out_dir/stem.<fmt>`` for each format, atomically; PNG path first."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    with matplotlib.rc_context(RC):
        for fmt in formats:
            target = out / f"{stem}.{fmt}"
            with atomic_path(target) as tmp:
                fig.savefig(tmp, format=fmt)
            paths.append(target)
    return paths
