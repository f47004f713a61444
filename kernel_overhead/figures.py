"""Table 2 rendered: the heatmap figure and the HTML table (shared style)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib
import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.ticker import FuncFormatter

from neutrino_ae.report.figures import style

from .analysis import FEWER_LEGEND, FEWER_MARK, GROUP_LABELS, KERNEL_LABELS, Cell, _ordered_probes

_NOTE_LINE_IN = 0.16  # height of one 8-point note line under the heatmap (inches)


def draw_heatmap(cells: Sequence[Cell], synthetic: bool, title: str):
    """Kernels x probes heatmap of slowdown (log colour), each cell labelled with slowdown and +regs."""
    probes = _ordered_probes(cells)
    kernels: list[tuple[str, str]] = []
    for c in cells:
        if (c.group, c.kernel) not in kernels:
            kernels.append((c.group, c.kernel))
    by_key = {(c.group, c.kernel, c.probe): c for c in cells}
    grid = np.full((len(kernels), len(probes)), np.nan)
    for i, (g, k) in enumerate(kernels):
        for j, p in enumerate(probes):
            c = by_key.get((g, k, p))
            if c is not None and c.slowdown is not None:
                grid[i, j] = c.slowdown
    notes = ["* some launches failed and were left out (see JSON)"] * any(c.failed for c in cells)
    notes += [FEWER_LEGEND] * any(c.registers_note for c in cells)
    with style.style_context():
        height = 1.4 + 0.5 * max(len(kernels), 2)
        notes_in = _NOTE_LINE_IN * len(notes) + 0.3 * bool(notes)  # lines + room for the colour bar's label
        fig = style.new_figure(min(style.MAX_WIDTH_IN - 1.0, 1.4 + 1.3 * max(len(probes), 2)), height + notes_in)
        if notes:  # the notes sit under the heatmap, above the provenance footer (style.mark_synthetic)
            fig.subplots_adjust(bottom=(style.FOOTER_STRIP_IN + notes_in) / fig.get_figheight())
            fig.text(0.01, style.FOOTER_STRIP_IN / fig.get_figheight(), "\n".join(notes), fontsize=8,
                     ha="left", va="bottom")
        ax = fig.add_subplot(1, 1, 1)
        ax.grid(False)
        finite = grid[np.isfinite(grid) & (grid > 0)]
        vmax = max(float(finite.max()) if finite.size else 2.0, 1.05)
        vmin = min(float(finite.min()) if finite.size else 1.0, 1.0)
        cmap = matplotlib.colormaps["YlOrRd"].with_extremes(bad="#dddddd")
        im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=LogNorm(vmin=max(vmin, 1e-3), vmax=vmax),
                       aspect="auto")
        for i, (g, k) in enumerate(kernels):
            for j, p in enumerate(probes):
                c = by_key.get((g, k, p))
                if c is None or c.slowdown is None:
                    label = "n/a"
                else:
                    label = f"{c.slowdown:.2f}x" + ("*" if c.failed else "")
                if c is not None and c.extra_regs is not None:
                    label += f"\n{c.extra_regs:+d} regs" + (FEWER_MARK if c.registers_note else "")
                elif c is not None and c.slowdown is not None:
                    label += "\nregs n/a"
                dark = np.isfinite(grid[i, j]) and LogNorm(vmin=max(vmin, 1e-3), vmax=vmax)(grid[i, j]) > 0.6
                ax.text(j, i, label, ha="center", va="center", fontsize=8.5, color="white" if dark else "black")
        ax.set_xticks(range(len(probes)), probes)
        ax.xaxis.tick_top()
        ax.set_yticks(range(len(kernels)), [f"{GROUP_LABELS.get(g, g)}: {KERNEL_LABELS.get(k, k)}"
                                            for g, k in kernels])
        for i in range(1, len(kernels)):
            if kernels[i][0] != kernels[i - 1][0]:
                ax.axhline(i - 0.5, color="black", linewidth=1.5)
        cbar = fig.colorbar(im, ax=ax, fraction=0.05, pad=0.02)
        cbar.set_label("slowdown (probed / pruned)")
        # Plain "2x" labels instead of LogNorm's default 2x10^0 notation.
        times = FuncFormatter(lambda v, _: f"{v:g}x")
        cbar.ax.yaxis.set_major_formatter(times)
        cbar.ax.yaxis.set_minor_formatter(times)
        ax.set_title(title, pad=24)
        style.mark_synthetic(fig, synthetic)
    return fig


def heatmap_figure(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]):
    """The figure process's builder (:mod:`neutrino_ae.report.figures.process`): :func:`draw_heatmap` of the
    cells in ``params`` (:func:`.table.figures`)."""
    return draw_heatmap([Cell(**c) for c in params["cells"]], params["synthetic"], params["title"])

