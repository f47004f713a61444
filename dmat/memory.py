"""What a DMAT figure from a raw trace needs in memory, checked before each step that takes it.

The streamed sparsifier's pieces are sized to the memory the process may use
(``neutrino_ae/formats/dmat/plan.py``); the figure adds, per distinct page, the page list, its labels
and rows (``PER_PAGE``), the page lookup table where there is room for it, the histogram
(labels x ybins x xbins) and the drawing (``DRAW_RESERVE`` plus the figure's RGBA image). Where even the
smallest pieces do not fit, the figure stops before reading further with one line saying how much it
needs (exit code 5); an allocation that fails anyway ends the same way, never in a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

from neutrino_ae.formats.dmat.plan import StreamPlan, check, least_need, plan_stream
from neutrino_ae.formats.memory import MemoryLimit, available_memory, refuse

#: Bytes per distinct page held by a figure: the scan's page set and sorted list, the key ranks, and the
#: binner's pages, labels, rows and cells.
PER_PAGE = 96
#: The drawing and saving of the figure (matplotlib's canvas, the PNG and SVG writers and what they import;
#: measured: 86 MB of address space at the peak of saving the default 500 x 1024 cells).
DRAW_RESERVE = 96 << 20
#: Bytes per histogram cell: the counts (up to 8), the drawn image's 4 and its per-cell maximum.
PER_CELL = 24


def figure_bytes(labels: int, ybins: int, xbins: int) -> int:
    return labels * ybins * xbins * PER_CELL + DRAW_RESERVE


class MemoryGuard:
    """The memory checks of one figure from a raw trace (see the module docstring)."""

    def __init__(self, source: Path, block_bytes: int, chunk_cap: int, limit: MemoryLimit | None = None) -> None:
        self.source = source
        self.block_bytes = block_bytes
        self.chunk_cap = chunk_cap
        self.limit = available_memory() if limit is None else limit
        self.reserve = figure_bytes(2, 1024, 500)  # a default figure; check_figure sets the real one
        self.least = least_need(block_bytes, chunk_cap)
        self.plan = plan_stream(self.limit, block_bytes, chunk_cap, reserve=self.reserve)
        # The scan starts only if the streamed passes and a default figure fit.
        check(source, self.plan, self.limit, "streaming this dmat trace", self.reserve, self.least)

    def check_pages(self, pages: int, records: int) -> None:
        """During the scan: stop as soon as the page list alone would not leave the passes room."""
        need = pages * PER_PAGE + self.least + self.reserve
        if not self.limit.fits(need):
            raise refuse(self.source, f"the page list of this trace ({pages:,} distinct pages in the first "
                                      f"{records:,} records)", need, self.limit, at_least=True)

    def check_figure(self, pages: int, labels: int, ybins: int, xbins: int) -> int:
        """After the scan: the binner's and the drawing's memory fit beside the smallest passes; returns the
        bytes the page lookup table may take (a quarter of what is left)."""
        self.reserve = figure_bytes(labels, min(ybins, max(pages, 1)), xbins)
        fixed = pages * PER_PAGE + self.reserve
        what = f"binning {pages:,} pages into {labels} x {min(ybins, max(pages, 1))} x {xbins} cells and drawing them"
        if not self.limit.fits(self.least + fixed):
            raise refuse(self.source, what, self.least + fixed, self.limit)
        if self.limit.available is None:
            return 1 << 62
        return max(0, (self.limit.available - self.least - fixed) // 4)

    def plan_write(self, wide: bool) -> StreamPlan:
        """Passes 2 and 3, sized to the memory left once the figure's arrays exist (the drawing's kept aside)."""
        limit = available_memory()
        plan = plan_stream(limit, self.block_bytes, self.chunk_cap, wide, DRAW_RESERVE)
        check(self.source, plan, limit, "sparsifying this dmat trace", DRAW_RESERVE,
              least_need(self.block_bytes, self.chunk_cap, wide))
        return plan

    def out_of_memory(self, exc: MemoryError, what: str) -> Exception:
        """The one-line error for an allocation that failed anyway."""
        asked = int(getattr(exc, "_total_size", 0) or 0)
        return refuse(self.source, what, max(asked, self.least + self.reserve), available_memory())


def out_of_memory(source: str | os.PathLike[str], exc: MemoryError, what: str) -> Exception:
    """:meth:`MemoryGuard.out_of_memory` where no guard was set up (a ``.dmat`` input)."""
    asked = int(getattr(exc, "_total_size", 0) or 0)
    return refuse(source, what, max(asked, DRAW_RESERVE), available_memory())
