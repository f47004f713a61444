"""DMAT's binned timeline (no I/O, no plots): (clock, page, count) pairs histogrammed into (tensor, page row,
clock bin) cells, batch by batch (:class:`DmatBinner`; :func:`bin_dmat` for data held whole), with the page
lookup it uses (:class:`PageIndex`); :class:`DmatPlotData` is what the figure shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from neutrino_ae.errors import TraceFormatError
from neutrino_ae.formats.dmat import PAGE_MASK, DmatData
from neutrino_ae.jit import jit, use_numba

DEFAULT_XBINS = 500

DEFAULT_YBINS = 1024
#: The artifact's ``dmat.py`` plots only clock entries below this ("a useless filter for safety") and
#: drops the rest with a "Find Weird Data" warning; we draw every clock and report how many accesses lie
#: past it, so a reader comparing with the paper's figures knows why our x axis can be longer.
ARTIFACT_CLOCK_CUTOFF = 5_000_000


@dataclass
class DmatPlotData:
    """What the figure shows: per-label 2-D histograms on shared bins (no clock cut-off)."""

    names: list[str]
    hist: np.ndarray  # (labels, ybins, xbins) access counts
    x_edges: np.ndarray  # clock bin edges, cycles
    y_edges: np.ndarray  # page-index bin edges
    n_pages: int
    max_clock: int
    accesses_per_label: np.ndarray
    pages_per_label: np.ndarray
    row_label: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # majority label per y bin
    past_artifact_cutoff: int = 0  # accesses at clock >= ARTIFACT_CLOCK_CUTOFF (drawn here, dropped by the artifact)
    #: Per label, the first and last clock with an access (NaN: none): the time order of the tensors.
    first_clock_per_label: np.ndarray = field(default_factory=lambda: np.zeros(0))
    last_clock_per_label: np.ndarray = field(default_factory=lambda: np.zeros(0))

#: A page lookup table is used when the pages' span (in 64 KiB pages) is at most this many entries.
PAGE_TABLE_LIMIT = 1 << 24


class PageIndex:
    """Index of pages in a list of distinct, ascending pages, -1 for a page not in it; the lookup table is
    built once and serves every batch.

    Pages are 64 KiB-aligned addresses, so over a moderate span one table lookup per pair replaces a
    binary search (``searchsorted`` costs ~70 ns per pair on tens of millions of pairs)."""

    def __init__(self, sorted_pages: np.ndarray, table_bytes: int | None = None) -> None:
        """``table_bytes``: the most the lookup table may take (default: any table up to PAGE_TABLE_LIMIT)."""
        self.pages = sorted_pages
        self.table: np.ndarray | None = None
        n = sorted_pages.size
        if n == 0:
            return
        self.lo = int(sorted_pages[0])
        self.span = (int(sorted_pages[-1]) - self.lo) >> 16
        fits = table_bytes is None or (self.span + 2) * 8 <= table_bytes
        if self.span < PAGE_TABLE_LIMIT and fits and not np.any(sorted_pages & ~PAGE_MASK):
            self.table = np.full(self.span + 2, -1, np.int64)  # the last entry catches every page out of range
            self.table[(sorted_pages - np.uint64(self.lo)) >> np.uint64(16)] = np.arange(n)

    def __call__(self, pair_page: np.ndarray) -> np.ndarray:
        n = self.pages.size
        if n == 0:
            return np.full(pair_page.size, -1, np.int64)
        if self.table is not None:
            rel = pair_page - np.uint64(self.lo)  # wraps to a huge value below ``lo``
            slot = np.minimum(rel >> np.uint64(16), np.uint64(self.span + 1)).astype(np.int64)
            idx = self.table[slot]
            idx[(rel & ~PAGE_MASK) != 0] = -1  # not 64 KiB-aligned: not a page of the list
            return idx
        idx = np.searchsorted(self.pages, pair_page)
        found = idx < n
        found[found] = self.pages[idx[found]] == pair_page[found]
        return np.where(found, idx, -1)


def page_index(sorted_pages: np.ndarray, pair_page: np.ndarray) -> np.ndarray:
    """Index of each of ``pair_page`` in ``sorted_pages`` (distinct, ascending), -1 where it is not one."""
    return PageIndex(sorted_pages)(pair_page)


class DmatBinner:
    """Histograms (clock, page, count) pairs into (label, page-row, clock-bin) cells, one batch of clock
    entries at a time (a raw trace is sparsified and binned bucket by bucket, never held whole).

    The clock bin is computed once per clock entry and the (label, row) once per page; each pair then
    costs one table lookup, one repeat and one unbuffered add."""

    def __init__(self, pages: np.ndarray, labels: np.ndarray, names: list[str], max_clock: int,
                 xbins: int = DEFAULT_XBINS, ybins: int = DEFAULT_YBINS, accesses: int | None = None,
                 page_table_bytes: int | None = None) -> None:
        """``accesses``: the total to be binned, if known: below 2**32 the counts are kept in 32 bits (the
        histogram is the largest array a streamed DMAT figure holds). ``page_table_bytes``: the most the
        page lookup table may take (:class:`PageIndex`)."""
        self.pages = np.asarray(pages, np.uint64)  # distinct, ascending
        self.page_index = PageIndex(self.pages, page_table_bytes)
        self.labels = np.asarray(labels, np.int64)
        self.names = names
        self.max_clock = int(max_clock)
        n_pages = self.pages.size
        self.ny = max(1, min(ybins, n_pages))
        self.nx = max(1, xbins)
        # Integer bin arithmetic (no float rounding at the edges): bin = value * nbins // span.
        self.xspan = self.max_clock + 1
        self.page_rows = np.arange(n_pages) * self.ny // max(n_pages, 1)
        self.page_cell = (self.labels * self.ny + self.page_rows) * self.nx  # first cell of each page's row
        wide = accesses is None or accesses >= 1 << 32
        self.hist = np.zeros(len(names) * self.ny * self.nx, np.uint64 if wide else np.uint32)
        self.past_artifact_cutoff = 0  # accesses at clocks the artifact's plot drops (ARTIFACT_CLOCK_CUTOFF)
        self.first_clock = np.full(len(names), np.iinfo(np.uint64).max, np.uint64)
        self.last_clock = np.zeros(len(names), np.uint64)
        self.seen = np.zeros(len(names), bool)
        # Compiled binning where the pairs are many enough to pay for importing numba (about 0.5 s; the
        # numpy path costs some 30 ns more per pair): 32x the jit module's threshold, 16M pairs.
        self.compiled = accesses is not None and use_numba(accesses // 32)

    def clock_bins(self, clocks: np.ndarray) -> np.ndarray:
        """The x bin of each clock: ``clock * nx // span`` where that product fits in 64 bits, else
        ``clock // ceil(span / nx)`` (clocks near 2**64 would wrap the product)."""
        clocks = clocks.astype(np.uint64, copy=False)
        if self.xspan * self.nx < 1 << 64:
            return (clocks * np.uint64(self.nx) // np.uint64(self.xspan)).astype(np.int64)
        return (clocks // np.uint64(-(-self.xspan // self.nx))).astype(np.int64)

    def add(self, data: DmatData) -> None:
        if data.clocks.size == 0:
            return
        if int(data.clocks.max()) > self.max_clock:
            raise TraceFormatError(data.source, "a clock entry lies past the largest clock found in the first pass "
                                                "(did the trace change while being read?)")
        if self.compiled and self.page_index.table is not None:
            self._add_compiled(data)
            return
        page_idx = self.page_index(data.pair_page)
        if page_idx.size and page_idx.min() < 0:
            raise TraceFormatError(data.source, "a (clock, page) pair names a page missing from the page list")
        per_entry = np.diff(data.indptr)
        cell = self.page_cell[page_idx] + np.repeat(self.clock_bins(data.clocks), per_entry)
        past = data.clocks >= np.uint64(ARTIFACT_CLOCK_CUTOFF)
        if past.any():
            self.past_artifact_cutoff += int(data.pair_count[np.repeat(past, per_entry)].sum(dtype=np.uint64))
        # Unbuffered add in place: no histogram-sized temporary per batch (bincount's minlength output).
        np.add.at(self.hist, cell, data.pair_count.astype(self.hist.dtype, copy=False))
        self._clock_span(data.clocks, data.indptr, per_entry, self.labels[page_idx])

    def _add_compiled(self, data: DmatData) -> None:
        """:meth:`add` in one compiled pass over the pairs (the same cells, counts and clock spans)."""
        index = self.page_index
        assert index.table is not None
        narrow = self.xspan * self.nx < 1 << 64
        past, bad = _bin_pairs(
            np.ascontiguousarray(data.clocks, np.uint64), np.ascontiguousarray(data.indptr, np.int64),
            np.ascontiguousarray(data.pair_page, np.uint64), np.ascontiguousarray(data.pair_count, np.uint32),
            index.table, np.uint64(index.lo), np.uint64(index.span), self.page_cell, self.labels,
            narrow, np.uint64(self.nx), np.uint64(self.xspan if narrow else -(-self.xspan // self.nx)),
            self.hist, self.first_clock, self.last_clock, self.seen)
        if bad:
            raise TraceFormatError(data.source, "a (clock, page) pair names a page missing from the page list")
        self.past_artifact_cutoff += int(past)

    def _clock_span(self, clocks: np.ndarray, indptr: np.ndarray, per_entry: np.ndarray,
                    pair_label: np.ndarray) -> None:
        """First and last clock of each label in this batch (a handful of labels: one mask each). Where the
        batch's clocks ascend (a streamed raw trace's always do), a label's first and last pair give them."""
        clocks = clocks.astype(np.uint64, copy=False)
        present = np.flatnonzero(np.bincount(pair_label, minlength=len(self.names)))
        ascending = clocks.size < 2 or bool(np.all(clocks[1:] >= clocks[:-1]))
        pair_clock = None if ascending else np.repeat(clocks, per_entry)
        for i in present:
            hit = pair_label == i
            if pair_clock is None:
                first_pair, last_pair = int(hit.argmax()), hit.size - 1 - int(hit[::-1].argmax())
                lo, hi = clocks[np.searchsorted(indptr, [first_pair, last_pair], side="right") - 1]
            else:
                lo, hi = pair_clock[hit].min(), pair_clock[hit].max()
            self.first_clock[i] = min(self.first_clock[i], lo)
            self.last_clock[i] = max(self.last_clock[i], hi)
            self.seen[i] = True

    def result(self) -> DmatPlotData:
        names, ny, nx, n_pages = self.names, self.ny, self.nx, self.pages.size
        hist = self.hist.reshape(len(names), ny, nx)
        counts = np.zeros((ny, len(names)), np.int64)
        np.add.at(counts, (self.page_rows, self.labels), 1)
        return DmatPlotData(
            names, hist, np.arange(nx + 1) * (self.xspan / nx), np.arange(ny + 1) * (n_pages / ny), int(n_pages),
            self.max_clock, hist.sum(axis=(1, 2)), np.bincount(self.labels, minlength=len(names)),
            counts.argmax(axis=1), self.past_artifact_cutoff,
            np.where(self.seen, self.first_clock.astype(np.float64), np.nan),
            np.where(self.seen, self.last_clock.astype(np.float64), np.nan),
        )


@jit
def _bin_pairs(clocks: np.ndarray, indptr: np.ndarray, pair_page: np.ndarray, pair_count: np.ndarray,
               table: np.ndarray, lo: np.uint64, span: np.uint64, page_cell: np.ndarray, labels: np.ndarray,
               narrow: bool, nx: np.uint64, div: np.uint64, hist: np.ndarray, first: np.ndarray, last: np.ndarray,
               seen: np.ndarray) -> tuple[int, bool]:
    """DmatBinner.add's numpy steps for a batch in one pass: (accesses past the artifact's cut-off, whether a
    pair names a page missing from the table)."""
    cutoff = np.uint64(ARTIFACT_CLOCK_CUTOFF)
    in_page, shift = np.uint64(0xFFFF), np.uint64(16)
    past = np.uint64(0)
    for i in range(clocks.size):
        c = clocks[i]
        xbin = np.int64(c * nx // div) if narrow else np.int64(c // div)
        for j in range(indptr[i], indptr[i + 1]):
            rel = pair_page[j] - lo
            if (rel & in_page) != 0 or (rel >> shift) > span:
                return past, True
            idx = table[np.int64(rel >> shift)]
            if idx < 0:
                return past, True
            n = pair_count[j]
            hist[page_cell[idx] + xbin] += n
            lab = labels[idx]
            if c < first[lab]:
                first[lab] = c
            if c > last[lab]:
                last[lab] = c
            seen[lab] = True
            if c >= cutoff:
                past += np.uint64(n)
    return past, False


def bin_dmat(data: DmatData, labels: np.ndarray, names: list[str], xbins: int = DEFAULT_XBINS,
             ybins: int = DEFAULT_YBINS) -> DmatPlotData:
    """:class:`DmatBinner` over all of ``data`` at once."""
    binner = DmatBinner(np.unique(data.pages), labels, names, int(data.clocks.max()) if data.clocks.size else 0,
                        xbins, ybins, data.num_accesses)
    binner.add(data)
    return binner.result()
