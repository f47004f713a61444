"""How big a saved figure and its texts are on screen: the legibility rule, without matplotlib.

The notebooks show a figure at :data:`DISPLAY_DPI` screen pixels per inch of figure (its 100 % zoom;
the PNG, saved at :data:`SAVEFIG_DPI`, is scaled down to that), at most :data:`DISPLAY_MAX_PX` wide. A
text of ``s`` points is then ``s * DISPLAY_DPI / 72`` px on screen while the figure is at most
``DISPLAY_MAX_PX / DISPLAY_DPI`` inches wide (:data:`MAX_WIDTH_IN`): every text of a figure is at least
:data:`MIN_FONT_PT` (:data:`MIN_TEXT_PX` px) and figures are at most that wide. :func:`display_width_px`
and :func:`text_px` are the rule; ``tests/report/test_figure_legibility.py`` holds every section's
figures to it.

Apart from :mod:`.style` because a notebook kernel sizes the PNGs it shows with it: importing
matplotlib there would cost every run about a CPU-second for no figure drawn.
"""

from __future__ import annotations

#: The resolution figures are saved at (``savefig.dpi`` in :data:`.style.RC`).
SAVEFIG_DPI = 150
#: Screen pixels per inch of figure where the notebook shows a figure (its 100 % zoom) and the widest it
#: is shown (the notebook's display width); no text in a figure is smaller than MIN_TEXT_PX there.
DISPLAY_DPI = 100
DISPLAY_MAX_PX = 800
MIN_TEXT_PX = 9.0
#: The widest figure (inches) shown at DISPLAY_DPI, and the smallest font (points) a figure may use.
MAX_WIDTH_IN = DISPLAY_MAX_PX / DISPLAY_DPI
MIN_FONT_PT = 7.0
#: The size for small texts in figures (bar values, notes, footers): the smallest allowed.
SMALL_PT = MIN_FONT_PT
assert MIN_FONT_PT * DISPLAY_DPI / 72 >= MIN_TEXT_PX


def display_width_px(png_width_px: int, png_dpi: float | None = None) -> int:
    """How wide the notebooks show a PNG ``png_width_px`` wide saved at ``png_dpi`` (default
    :data:`SAVEFIG_DPI`): at :data:`DISPLAY_DPI` px per inch, at most :data:`DISPLAY_MAX_PX`."""
    dpi = float(png_dpi or SAVEFIG_DPI)
    return max(1, min(DISPLAY_MAX_PX, round(png_width_px * DISPLAY_DPI / dpi)))


def text_px(fontsize_pt: float, png_width_px: int, png_dpi: float | None = None) -> float:
    """Height on screen (px) of a ``fontsize_pt`` text in a PNG ``png_width_px`` wide at ``png_dpi``,
    shown :func:`display_width_px` wide: ``fontsize_pt * dpi / 72 * (display width / PNG width)``."""
    dpi = float(png_dpi or SAVEFIG_DPI)
    return fontsize_pt * dpi / 72 * display_width_px(png_width_px, dpi) / png_width_px
