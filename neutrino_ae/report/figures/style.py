"""One figure style for every section, the synthetic-data mark, and atomic figure saving.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot global state, no GUI backend), so
scripts, tests and notebook kernels behave the same; notebooks display the saved PNG.

Legibility (how big a figure and its texts are on screen) is :mod:`.legibility`'s rule, imported here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import matplotlib
import matplotlib.colors
import matplotlib.image
import numpy as np
from matplotlib.figure import Figure
from matplotlib.layout_engine import TightLayoutEngine
from matplotlib.transforms import Bbox

from neutrino_ae.atomic import atomic_path
from neutrino_ae.report.figures.legibility import (  # noqa: F401 - the style's rule, used as style.<name> too
    DISPLAY_DPI,
    DISPLAY_MAX_PX,
    MAX_WIDTH_IN,
    MIN_FONT_PT,
    MIN_TEXT_PX,
    SAVEFIG_DPI,
    SMALL_PT,
    display_width_px,
    text_px,
)

#: Colour cycle used by every section (colour-blind friendly, Okabe-Ito).
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
NCU_COLOR = "#b31805"
NEUTRINO_KERNEL_COLOR = "#812be1"
NEUTRINO_EPILOGUE_COLOR = "#0053d6"
NEUTRINO_PROLOGUE_COLOR = "#7fb3ff"

RC = {
    # Sized for figures at most MAX_WIDTH_IN wide shown at DISPLAY_DPI: 9 pt ticks are 12.5 px on screen.
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 8.5,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.dpi": 100,
    "savefig.dpi": SAVEFIG_DPI,
    "savefig.bbox": "tight",
    "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
}


def figure_texts(fig: Figure) -> list:
    """Every visible, non-empty text of ``fig`` (titles, labels, tick labels, legends, annotations)."""
    from matplotlib.text import Text

    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
            and (t.axes is None or t.axes.get_visible())]


def alt_text(fig: Figure) -> str:
    """A figure's description for readers who cannot see it: its title(s), one line."""
    parts = []
    sup = getattr(fig, "_suptitle", None)
    if sup is not None and sup.get_text().strip():
        parts.append(sup.get_text())
    for legend in fig.legends:  # a figure legend's title stands for the figure's title
        if legend.get_title().get_text().strip():
            parts.append(legend.get_title().get_text())
    for ax in fig.axes:
        for loc in ("left", "center", "right"):
            title = ax.get_title(loc).strip()
            if title:
                parts.append(title)
    text = "; ".join(" ".join(p.split()) for p in parts)
    return text if len(text) <= 400 else text[:399] + "\u2026"


#: PNG text chunk holding the size (points) of a saved figure's smallest text.
SMALLEST_TEXT_KEY = "neutrino-ae smallest text pt"

from neutrino_ae.report.results.labels import SYNTHETIC_LABEL, UNKNOWN_PROVENANCE_LABEL  # noqa: E402,F401 (style's names)


def new_figure(width: float = 7.0, height: float = 4.0, **kwargs) -> Figure:
    """A Figure with the suite's style applied."""
    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(width, height), **kwargs)
    return fig


def style_context(overrides: dict | None = None):
    """Context manager applying the suite's rcParams, then ``overrides`` (wrap axes creation and drawing
    in it)."""
    return matplotlib.rc_context({**RC, **(overrides or {})})


#: ``style_context`` overrides for figures whose axes have no x ticks on top and no y offset text (``1e6``
#: above the y axis) that a title could collide with: titles stay at a fixed height. Otherwise matplotlib
#: re-places each title on every layout pass and draw by measuring its axes' whole y axis again, up to a
#: sixth of a multi-panel figure's rendering time.
FIXED_TITLES = {"axes.titley": 1.0}

#: Height kept free at the bottom of a figure for the footer :func:`mark_synthetic` writes there (inches).
FOOTER_STRIP_IN = 0.3


class FooterTightLayout(TightLayoutEngine):
    """Tight layout in one text-measuring pass, then the subplot grid's bottom raised by
    :data:`FOOTER_STRIP_IN`, the strip for the footer :func:`mark_synthetic` writes.

    Constrained layout measures every text twice, and so does tight layout given any ``rect`` (the
    default ``(0, 0, 1, 1)`` included), such as one leaving the strip out; the strip is made afterwards
    instead, keeping the gaps between rows. When there is no footer, :func:`save_figure` crops the
    empty strip.
    """

    def __init__(self) -> None:
        super().__init__(rect=None)

    def execute(self, fig: Figure) -> None:
        super().execute(fig)
        p = fig.subplotpars
        specs = [ax.get_subplotspec() for ax in fig.axes]
        rows = max((ss.get_gridspec().nrows for ss in specs if ss is not None), default=1)
        gap = p.hspace * (p.top - p.bottom) / (rows + (rows - 1) * p.hspace)  # between rows, figure fraction
        bottom = p.bottom + FOOTER_STRIP_IN / fig.get_figheight()
        row = (p.top - bottom - (rows - 1) * gap) / rows
        if row > 0:
            fig.subplots_adjust(bottom=bottom, hspace=gap / row)


def tight_figure(width: float, height: float) -> Figure:
    """A Figure laid out by :class:`FooterTightLayout`."""
    return new_figure(width, height, layout=FooterTightLayout())


def mark_synthetic(fig: Figure, synthetic: bool | None = True) -> None:
    """Put a visible watermark and a footer on figures made from a sample bundle, and a warning
    footer on figures whose data's provenance is unknown (``synthetic=None``: no bundle.json)."""
    if synthetic is None:
        fig.text(0.995, 0.005, UNKNOWN_PROVENANCE_LABEL, fontsize=SMALL_PT + 1, color="#a05000", ha="right",
                 va="bottom", transform=fig.transFigure)
        return
    if not synthetic:
        return
    fig.text(0.5, 0.5, "SYNTHETIC", fontsize=48, color="grey", alpha=0.13, ha="center", va="center",
             rotation=25, zorder=1000, transform=fig.transFigure)
    fig.text(0.995, 0.005, SYNTHETIC_LABEL, fontsize=SMALL_PT + 1, color="#a00000", ha="right", va="bottom",
             transform=fig.transFigure)


def interval_bars(ax, y: np.ndarray, left: np.ndarray, width: np.ndarray, colors: str | Sequence[str],
                  height: float = 0.8, edgecolor: str = "none", linewidth: float = 0.0) -> None:
    """Horizontal bars (one per interval, centred on ``y``) drawn as ONE rasterised artist: a patch per
    bar costs seconds per thousand bars, and in vector outputs this layer stays pixels, so a figure's
    cost and size do not grow with the trace."""
    x0 = np.asarray(left, dtype=float)
    y = np.asarray(y, dtype=float)
    boxes(ax, x0, x0 + np.asarray(width, dtype=float), y - height / 2, y + height / 2, colors, rasterized=True,
          edgecolors=edgecolor, linewidths=linewidth)


def boxes(ax, x0: np.ndarray, x1: np.ndarray, y0: np.ndarray, y1: np.ndarray, colors: str | Sequence[str],
          rasterized: bool = False, **kwargs) -> None:
    """Axis-aligned rectangles ``[x0, x1] x [y0, y1]`` as one collection (one artist to draw, not a patch
    each), the axes' data limits extended to hold them; ``kwargs`` go to the ``PolyCollection``."""
    from matplotlib.collections import PolyCollection

    verts = np.stack([np.c_[x0, y0], np.c_[x0, y1], np.c_[x1, y1], np.c_[x1, y0]], axis=1)
    ax.add_collection(PolyCollection(verts, facecolors=colors, rasterized=rasterized, **kwargs))
    ax.update_datalim(np.c_[np.r_[x0, x1], np.r_[y0, y1]] if np.size(x0) else np.zeros((0, 2)))
    ax.autoscale_view()


def has_raster_content(fig: Figure) -> bool:
    """Whether the figure draws an image or a rasterised layer (its SVG would embed the same pixels)."""
    return any(ax.images or any(a.get_rasterized() for a in (*ax.collections, *ax.patches, *ax.lines))
               for ax in fig.axes)


#: zlib level of saved PNGs: level 1 writes a figure several times faster than the default 6 for a file a
#: few percent larger (flat-colour plots compress well at any level).
PNG_COMPRESS_LEVEL = 1


def save_figure(fig: Figure, out_dir: str | os.PathLike[str], stem: str,
                formats: Sequence[str] | None = None) -> list[Path]:
    """Save ``fig`` as ``out_dir/stem.<fmt>`` for each format, atomically; PNG path first.

    Default formats: PNG, plus SVG where a vector copy is worth having, i.e. unless the figure's
    content is raster (:func:`has_raster_content`): such an SVG holds the same pixels in a larger
    file and costs as much again to write. The PNG's ``Title`` text chunk holds :func:`alt_text`. Every
    format is cropped to the figure's content plus ``savefig.pad_inches``, as ``bbox_inches="tight"`` does.

    Rendering time is text measurement: each pass over a figure re-formats and measures every tick
    label, title and legend entry. ``savefig(bbox_inches="tight")`` on a figure with a layout engine
    makes two or three such passes before its real draw (the engine's inside a layout-only draw, then
    the tight box) and repeats the last ones for each further format. Here the engine runs once and
    is then dropped (the axes keep its positions), and the PNG's crop is found in its own pixels: the
    engine placed the decorations inside the canvas, so only when ink reaches the canvas edge (a
    title wider than the figure) is the tight box measured. Each format then costs one draw.
    """
    if formats is None:
        formats = ("png",) if has_raster_content(fig) else ("png", "svg")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    with matplotlib.rc_context(RC):
        engine = fig.get_layout_engine()
        if engine is not None and "png" in formats:
            # Lay out with the renderer the PNG is then drawn with (an Agg canvas at the PNG's dpi): text
            # sizes are cached per renderer, so the draw reuses what the layout measured.
            from matplotlib.backends.backend_agg import FigureCanvasAgg  # imported on first use, as savefig does

            FigureCanvasAgg(fig)
            fig.set_dpi(matplotlib.rcParams["savefig.dpi"])
        if engine is not None:
            engine.execute(fig)
            fig.set_layout_engine(None)  # None, not "none": a placeholder engine still costs a layout-only draw
        pixels = _draw_cropped(fig) if engine is not None and "png" in formats else None
        bbox = pixels[1] if pixels else _padded_tight_bbox(fig)
        # The PNG carries its description (the notebooks' alt text) in its Title chunk, and the size of its
        # smallest text (points), from which a page showing it can tell that text's size on screen. Read
        # after the draw: the axes' tick labels exist by then (listing them before makes each axis build them).
        sizes = [float(t.get_fontsize()) for t in figure_texts(fig)]
        png_meta = {"Title": alt_text(fig) or stem, SMALLEST_TEXT_KEY: f"{min(sizes, default=0.0):g}"}
        for fmt in formats:
            target = out / f"{stem}.{fmt}"
            with atomic_path(target) as tmp:
                if fmt == "png" and pixels:
                    matplotlib.image.imsave(tmp, pixels[0], format="png", dpi=matplotlib.rcParams["savefig.dpi"],
                                            metadata=png_meta, pil_kwargs={"compress_level": PNG_COMPRESS_LEVEL})
                else:
                    extra = {"pil_kwargs": {"compress_level": PNG_COMPRESS_LEVEL}, "metadata": png_meta} \
                        if fmt == "png" else {}
                    fig.savefig(tmp, format=fmt, bbox_inches=bbox, **extra)
            paths.append(target)
    return paths


def save_figure_files(fig: Figure, out_dir: str | os.PathLike[str], stem: str,
                      key: str | None = None) -> dict[str, Path]:
    """:func:`save_figure`'s files for a result's ``files``: by file name, or with ``key`` the PNG under
    ``key`` and each other format under ``key.<suffix>``."""
    paths = save_figure(fig, out_dir, stem)
    if key is None:
        return {p.name: p for p in paths}
    return {key: paths[0], **{f"{key}.{p.suffix[1:]}": p for p in paths[1:]}}


def _padded_tight_bbox(fig: Figure) -> Bbox:
    """What ``bbox_inches="tight"`` saves (inches), measured once for every format."""
    return fig.get_tightbbox().padded(matplotlib.rcParams["savefig.pad_inches"])


def _draw_cropped(fig: Figure) -> tuple[np.ndarray, Bbox] | None:
    """The figure drawn once on its Agg canvas at ``savefig.dpi`` (:func:`save_figure` makes both), cropped
    to its non-background pixels plus the pad, and that area in inches; None when ink touches the canvas
    edge (something may lie beyond it)."""
    dpi = float(matplotlib.rcParams["savefig.dpi"])
    # Drawn on the canvas itself and read in place: savefig(format="rgba") would copy the pixels out.
    fig.canvas.draw()
    img = np.asarray(fig.canvas.buffer_rgba())
    h, w = img.shape[:2]
    # Background = the figure's face colour; a rounding difference only makes the crop looser.
    face = np.round(np.asarray(matplotlib.colors.to_rgba(fig.get_facecolor())) * 255).astype(np.uint8)
    ink = img.view(np.uint32)[..., 0] != face.view(np.uint32)[0]
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if not rows.size:
        return img, Bbox([[0, 0], [w / dpi, h / dpi]])
    if rows[0] == 0 or cols[0] == 0 or rows[-1] == h - 1 or cols[-1] == w - 1:
        return None
    pad = int(round(float(matplotlib.rcParams["savefig.pad_inches"]) * dpi))
    y0, y1 = max(rows[0] - pad, 0), min(rows[-1] + 1 + pad, h)
    x0, x1 = max(cols[0] - pad, 0), min(cols[-1] + 1 + pad, w)
    return img[y0:y1, x0:x1], Bbox([[x0 / dpi, (h - y1) / dpi], [x1 / dpi, (h - y0) / dpi]])
