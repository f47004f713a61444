"""DMAT computations (no I/O, no plots): tensor ranges, page attribution, the binned timeline, and the
section's ``compute`` / ``figures`` (neutrino_ae/report/section/driver.py): each figure's results, numbers and the
arrays its figure shows (:mod:`.figures` draws them).

Every figure is a result of its own (``dmat_<fig>.json`` and its tensors table, its paper reference per
number); a bundle's four figures are the section result's ``parts``, with ``dmat.json`` listing them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from neutrino_ae.errors import TraceFormatError
from neutrino_ae.formats.dmat import PAGE_MASK, DmatData
from neutrino_ae.jit import jit, use_numba
from neutrino_ae.report.section.driver import Figure, Result

from . import FIGURES, SECTION

if TYPE_CHECKING:
    import pandas as pd

OTHER = "other"

UNNAMED = "unnamed"

DEFAULT_XBINS = 500

DEFAULT_YBINS = 1024
#: The artifact's ``dmat.py`` plots only clock entries below this ("a useless filter for safety") and
#: drops the rest with a "Find Weird Data" warning; we draw every clock and report how many accesses lie
#: past it, so a reader comparing with the paper's figures knows why our x axis can be longer.
ARTIFACT_CLOCK_CUTOFF = 5_000_000

@dataclass
class TensorRange:
    name: str
    start: int
    nbytes: int | None  # None: size unknown (extends to the next tensor)

def tensor_ranges(params: Sequence[int], tensors: pd.DataFrame | None) -> list[TensorRange]:
    """Name each distinct pointer argument from ``tensor.trace`` (exact ``data_ptr`` match, else a
    tensor whose ``[data_ptr, data_ptr + nbytes)`` contains it); unmatched pointers are ``param<i>``."""
    calls: list[tuple[int, int, str]] = []
    if tensors is not None and len(tensors):
        rows = tensors[(tensors["kind"] == "call") & tensors["arg_name"].notna()]
        # A few rows per traced call (not trace data): plain Python keeps pointers as exact ints.
        calls = [(int(d), int(n), str(a)) for d, n, a in zip(rows["data_ptr"], rows["nbytes"], rows["arg_name"],
                                                             strict=True)]
    out: list[TensorRange] = []
    seen: set[int] = set()
    for i, ptr in enumerate(int(x) for x in params):
        if ptr == 0 or ptr in seen:
            continue
        seen.add(ptr)
        exact = [c for c in calls if c[0] == ptr]
        inside = [c for c in calls if c[0] < ptr < c[0] + c[1]]
        if exact:  # the latest call that passed this tensor names it
            out.append(TensorRange(exact[-1][2], ptr, exact[-1][1]))
        elif inside:
            base, nbytes, arg = inside[-1]
            out.append(TensorRange(f"{arg}+{ptr - base:#x}", ptr, nbytes - (ptr - base)))
        else:
            out.append(TensorRange(f"param{i}", ptr, None))
    return out

def ranges_from_tensor_trace(tensors: pd.DataFrame) -> list[TensorRange]:
    """Without ``event.log``: every distinct tensor of ``tensor.trace`` [call] rows (latest name per pointer)."""
    calls = tensors[(tensors["kind"] == "call") & tensors["arg_name"].notna()]
    last = calls.drop_duplicates(subset=["data_ptr"], keep="last")
    return [TensorRange(str(r.arg_name), int(r.data_ptr), int(r.nbytes)) for r in last.itertuples(index=False)]

def attribute_pages(pages: np.ndarray, ranges: Sequence[TensorRange]) -> tuple[np.ndarray, list[str]]:
    """Label index per page (into the returned names; ``other`` last). Vectorised per tensor."""
    pages = np.asarray(pages, dtype=np.uint64)
    ordered = sorted(ranges, key=lambda r: r.start)
    names = [r.name for r in ordered]
    labels = np.full(pages.size, len(names), dtype=np.int64)  # "other"
    top = int(pages.max()) + 0x10000 if pages.size else 0
    for k, r in enumerate(ordered):
        if r.nbytes is not None:
            end = r.start + max(r.nbytes, 1)
        else:
            end = ordered[k + 1].start if k + 1 < len(ordered) else max(top, r.start + 1)
        lo = np.uint64(r.start) & PAGE_MASK
        hi = np.uint64(end - 1) & PAGE_MASK
        mask = (labels == len(names)) & (pages >= lo) & (pages <= hi)
        labels[mask] = k
    return labels, [*names, OTHER]

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


# --------------------------------------------------------------------------------------------------
# The section's results (driver entry points)

PAPER_REFS = {key: fig.paper_ref for key, fig in FIGURES.items()}
#: The unit of each number, by the key's last part.
UNITS = {"accesses": "accesses", "pages": "pages", "max_clock": "cycles", "first_clock": "cycles",
         "last_clock": "cycles"}
#: The arrays of :class:`DmatPlotData` the drawing reads.
DRAWN_ARRAYS = ("hist", "x_edges", "y_edges", "row_label", "accesses_per_label", "pages_per_label")


@dataclass
class BinnedFigure:
    """One DMAT figure read and binned (``load``'s frames; dmat/inputs.py): what its results are made of."""

    name: str  # figure stem, e.g. "fig1"
    given: Path  # the input as given
    source: Path  # the file read (a trace directory's newest result)
    sparsified: Path | None  # the .dmat written from a raw trace
    trace_dir: str | None  # the trace directory that named the tensors, bundle-relative
    event_log: Path | None
    tensor_trace: Path | None
    ranges: list[TensorRange]  # ascending start
    plot: DmatPlotData
    accesses: int
    unfilled: int
    clock_entries: int
    level_note: str  # how the section's level was decided, when the file could not tell
    truth: dict[str, Any] | None  # the sample generator's ground truth of this figure
    synthetic: bool | None
    workloads: str | None  # how the bundle was collected ("ptx": stand-in kernels, named in the title)


def compute(frames: BinnedFigure | Sequence[BinnedFigure]) -> Result:
    """One figure's result; for a bundle's figures, the section's result with each as one of its ``parts``."""
    if isinstance(frames, BinnedFigure):
        return figure_result(frames)
    parts = [figure_result(f) for f in frames]
    data = {"section": SECTION.name, "paper_ref": SECTION.paper_ref, "figures": [p.data for p in parts],
            "trace_dirs": [f.trace_dir for f in frames if f.trace_dir]}

    def done(files: Mapping[str, Path]) -> str:
        return "\n".join(f"{p.lines[0]}\n{files[f'{f.name}.png']}" for f, p in zip(frames, parts, strict=True))

    return Result(numbers={k: v for p in parts for k, v in p.numbers.items()},
                  truth={k: v for p in parts for k, v in p.truth.items()}, units=UNITS, data=data, done=done,
                  input=frames[0].given, refs={k: v for p in parts for k, v in p.refs.items()}, parts=parts)


def figure_result(f: BinnedFigure) -> Result:
    """The results of one figure: its title, document, tensors table, numbers and text line."""
    import pandas as pd  # here only: the figure process imports this module (figures.py) without pandas

    plot, names = f.plot, f.plot.names
    ref = PAPER_REFS.get(f.name, "DMAT")
    # A paper figure is named once ("Fig. 1: DMAT, ..."), another by its input ("DMAT [name]: ...").
    heading = f"DMAT [{f.name}]" if ref == "DMAT" else f"{ref}: DMAT"
    pages = f"{plot.n_pages:,} page" + ("" if plot.n_pages == 1 else "s")
    title = f"{heading}, {f.accesses:,} accesses, {pages}, clock 0-{plot.max_clock:,} cycles"
    notes = []
    if f.workloads == "ptx" and f.name in FIGURES:
        notes.append(FIGURES[f.name].ptx_shows)  # PyTorch 2.11 ships no PTX: what ran instead
    if f.unfilled:
        notes.append(f"{f.unfilled:,} unfilled count slots not drawn")
    if plot.past_artifact_cutoff:
        notes.append(f"{plot.past_artifact_cutoff:,} accesses past clock {ARTIFACT_CLOCK_CUTOFF:,} drawn "
                     "(the artifact's plot drops them)")
    if f.level_note:
        notes.append(f.level_note)
    if notes:
        title += "\n(" + "; ".join(notes) + ")"
    truth = f.truth
    starts = {r.name: r.start for r in f.ranges}
    tensors = pd.DataFrame({
        "tensor": names,
        "address": [hex(starts[n]) if n in starts else "" for n in names],
        "pages": plot.pages_per_label,
        "accesses": plot.accesses_per_label.astype(np.int64),
    })
    if truth and isinstance(truth.get("tensor_ptrs"), dict):
        # The generator keys its truth by its own tensor names; match them to ours by pointer.
        by_ptr = {int(p): n for n, p in truth["tensor_ptrs"].items()}
        per = truth.get("accesses_in_dmat") or {}
        gt = [per.get(by_ptr.get(starts.get(n, -1))) for n in names]
        tensors["gt_accesses"] = pd.Series([int(v) if v is not None else "" for v in gt], dtype=object)
    data = {
        "figure": f.name, "paper_ref": ref, "title": title, "input": str(f.given), "source": str(f.source),
        "sparsified_dmat": str(f.sparsified) if f.sparsified else None,
        "naming": {"trace_dir": f.trace_dir,
                   "event_log": str(f.event_log) if f.event_log else None,
                   "tensor_trace": str(f.tensor_trace) if f.tensor_trace else None},
        "tensor_ranges": [{"name": r.name, "start": hex(r.start), "nbytes": r.nbytes} for r in f.ranges],
        "accesses": f.accesses, "pages": plot.n_pages, "clock_entries": f.clock_entries,
        "unfilled_slots_excluded": f.unfilled,
        "clock_cutoff": {
            "ours": None, "artifact": ARTIFACT_CLOCK_CUTOFF,
            "accesses_past_artifact_cutoff": plot.past_artifact_cutoff,
            "note": f"every clock is drawn; the artifact's dmat.py drops clock entries >= {ARTIFACT_CLOCK_CUTOFF:,}",
        },
        "section_level": f.level_note or None,
        "max_clock": plot.max_clock, "xbins": int(plot.hist.shape[2]), "ybins": int(plot.hist.shape[1]),
        "tensors": tensors.to_dict(orient="records"), "ground_truth": truth,
        "summary": None,  # the figure's rows (the driver's), here
    }
    numbers: dict[str, Any] = {f"{f.name}.accesses": f.accesses, f"{f.name}.pages": plot.n_pages,
                               f"{f.name}.max_clock": plot.max_clock}
    expected = truth.get("expected_accesses") if truth else None
    gts: dict[str, Any] = {f"{f.name}.accesses": sum(expected.values()) if isinstance(expected, dict) else None,
                           f"{f.name}.pages": truth.get("num_pages") if truth else None,
                           f"{f.name}.max_clock": truth.get("max_clock") if truth else None}
    # Per tensor: its accesses (truth: the generator's count, matched by pointer above) and the first and
    # last clock it is accessed at, the time order the figure shows (Q read first, O written last).
    tensor_truth = tensors["gt_accesses"] if "gt_accesses" in tensors else [None] * len(names)
    for i, n in enumerate(names):
        if n == OTHER and not plot.accesses_per_label[i]:
            continue  # the label for pages of no tensor, with none
        tkey = f"{f.name}.{n.replace('.', '_')}"
        numbers[f"{tkey}.accesses"] = int(plot.accesses_per_label[i])
        gts[f"{tkey}.accesses"] = tensor_truth[i] if tensor_truth[i] != "" else None
        numbers[f"{tkey}.first_clock"] = _cycles(plot.first_clock_per_label[i])
        numbers[f"{tkey}.last_clock"] = _cycles(plot.last_clock_per_label[i])
    named = ", ".join(f"{n} ({a:,})" for n, a in zip(names, plot.accesses_per_label.astype(np.int64), strict=True))
    line = (f"{f.name}: {f.accesses:,} accesses over {pages}, clock up to "
            f"{plot.max_clock:,}; tensors: {named}"
            + (f"; {f.unfilled:,} unfilled count slots excluded" if f.unfilled else "")
            + (f"; {plot.past_artifact_cutoff:,} accesses past clock {ARTIFACT_CLOCK_CUTOFF:,} kept "
               "(the artifact's plot drops them)" if plot.past_artifact_cutoff else "")
            + (f"; {f.level_note}" if f.level_note else "")
            + (f"; names from trace dir {f.trace_dir}" if f.trace_dir else "; no naming trace dir (pages unnamed)"))

    def done(files: Mapping[str, Path]) -> str:
        return str(files[f"{f.name}.png"])

    return Result(tables={f"dmat_{f.name}_tensors": tensors}, numbers=numbers, truth=gts, units=UNITS, data=data,
                  lines=[line], done=done, input=f.source, stem=f"dmat_{f.name}",
                  plots={"plot": plot, "title": title, "synthetic": f.synthetic},
                  refs=dict.fromkeys(numbers, ref), files={f"{f.name}.dmat": f.sparsified} if f.sparsified else {})


def _cycles(clock: float) -> int | None:
    """A tensor's first or last clock (NaN: the tensor was never accessed) as the integer it is."""
    return None if np.isnan(clock) else int(clock)


def figures(result: Result) -> list[Figure]:
    """A figure's drawing (:func:`.figures.dmat_figure_from_arrays`): the arrays it reads, nothing else; none
    for the section's result (its figures are its parts')."""
    if "plot" not in result.plots:
        return []
    plot: DmatPlotData = result.plots["plot"]
    name = result.data["figure"]
    return [Figure(name, "figures:dmat_figure_from_arrays", {k: getattr(plot, k) for k in DRAWN_ARRAYS},
                   {"names": list(plot.names), "n_pages": int(plot.n_pages), "max_clock": int(plot.max_clock),
                    "title": result.plots["title"], "synthetic": result.plots["synthetic"]}, key="")]
