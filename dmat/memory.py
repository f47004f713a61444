"""What a DMAT figure from a raw trace needs in memory, checked before each step that takes it.

The streamed sparsifier's pieces are sized to the memory the process may use
(``neutrino_ae/formats/dmat_plan.py``); the figure adds, per distinct page, the page list, its labels
and rows (``PER_PAGE``), the page lookup table where there is room for it, the histogram
(labels x ybins x xbins) and the drawing (``DRAW_RESERVE`` plus the figure's RGBA image). Where even the
smallest pieces do not fit, the figure stops before reading further with one line saying how much it
needs (exit code 5); an allocation that fails anyway ends the same way, never in a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

from neutrino_ae.formats.dmat_plan import StreamPlan, check, plan_stream
from neutrino_ae.formats.memory import MemoryLimit, available_memory, refuse

#: Bytes per distinct page held by a figure: the scan's page set and sorted list, the key ranks, and the
#: binner's pages, labels, rows and cells.
PER_PAGE = 96
#: The drawing and saving of the figure (matplotlib's canvas, the PNG and SVG writers).
DRAW_RESERVE = 48 << 20
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
        self.plan = plan_stream(self.limit, block_bytes, chunk_cap)
        # The scan starts only if the streamed passes and the smallest figure fit.
        check(source, self.plan, self.limit, "streaming this dmat trace", figure_bytes(2, 1, 1))

    def check_pages(self, pages: int, records: int) -> None:
        """During the scan: stop as soon as the page list alone would not leave the plan room."""
        need = pages * PER_PAGE + self.plan.peak() + figure_bytes(2, 1, 1)
        if not self.limit.fits(need):
            raise refuse(self.source, f"the page list of this trace ({pages:,} distinct pages in the first "
                                      f"{records:,} records)", need, self.limit)

    def check_figure(self, pages: int, labels: int, ybins: int, xbins: int) -> int:
        """After the scan: the binner's and the drawing's memory fit beside the streamed passes; returns the
        bytes the page lookup table may take (what is left of a quarter of the room)."""
        fixed = pages * PER_PAGE + figure_bytes(labels, min(ybins, max(pages, 1)), xbins)
        check(self.source, self.plan, self.limit, f"binning {pages:,} pages into {labels} x {ybins} x {xbins} "
                                                  "cells and drawing them", fixed)
        if self.limit.available is None:
            return 1 << 62
        return max(0, self.limit.available // 4 - fixed)

    def plan_write(self, wide: bool) -> StreamPlan:
        """Passes 2 and 3, sized to the memory left once the figure's arrays exist."""
        limit = available_memory()
        plan = plan_stream(limit, self.block_bytes, self.chunk_cap, wide)
        check(self.source, plan, limit, "sparsifying this dmat trace", DRAW_RESERVE)
        return plan

    def out_of_memory(self, exc: MemoryError, what: str) -> Exception:
        """The one-line error for an allocation that failed anyway."""
        asked = int(getattr(exc, "_total_size", 0) or 0)
        return refuse(self.source, what, max(asked, self.plan.peak() + DRAW_RESERVE), available_memory())


def out_of_memory(source: str | os.PathLike[str], exc: MemoryError, what: str) -> Exception:
    """:meth:`MemoryGuard.out_of_memory` where no guard was set up (a ``.dmat`` input)."""
    asked = int(getattr(exc, "_total_size", 0) or 0)
    return refuse(source, what, max(asked, DRAW_RESERVE), available_memory())
