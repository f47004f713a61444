"""DMAT computations: tensor ranges, page attribution and the binned timeline (no I/O, no plots)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from neutrino_ae.errors import TraceFormatError
from neutrino_ae.formats.dmat import PAGE_MASK, DmatData

OTHER = "other"

UNNAMED = "unnamed"

DEFAULT_XBINS = 500

DEFAULT_YBINS = 1024

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

def bin_dmat(data: DmatData, labels: np.ndarray, names: list[str], xbins: int = DEFAULT_XBINS,
             ybins: int = DEFAULT_YBINS) -> DmatPlotData:
    """Histogram every (clock, page, count) pair into (label, page-row, clock-bin) cells."""
    pages = np.unique(data.pages)
    n_pages = pages.size
    clock = data.pair_clock()
    max_clock = int(clock.max()) if clock.size else 0
    page_idx = np.searchsorted(pages, data.pair_page)
    if clock.size and (np.any(page_idx >= n_pages) or np.any(pages[np.minimum(page_idx, n_pages - 1)]
                                                             != data.pair_page)):
        raise TraceFormatError(data.source, "a (clock, page) pair names a page missing from the page list")
    ny = max(1, min(ybins, n_pages))
    nx = max(1, xbins)
    # Integer bin arithmetic (no float rounding at the edges): bin = value * nbins // span.
    xspan = max_clock + 1
    xb = (clock.astype(np.uint64) * np.uint64(nx) // np.uint64(xspan)).astype(np.int64) if clock.size else clock
    yb = page_idx * ny // max(n_pages, 1)
    lab = labels[page_idx] if clock.size else np.zeros(0, np.int64)
    cell = (lab * ny + yb) * nx + xb
    hist = np.bincount(cell, weights=data.pair_count.astype(np.float64), minlength=len(names) * ny * nx)
    hist = hist.reshape(len(names), ny, nx)
    page_rows = np.arange(n_pages) * ny // max(n_pages, 1)
    counts = np.zeros((ny, len(names)), np.int64)
    np.add.at(counts, (page_rows, labels), 1)
    return DmatPlotData(
        names, hist, np.arange(nx + 1) * (xspan / nx), np.arange(ny + 1) * (n_pages / ny), int(n_pages),
        max_clock, hist.sum(axis=(1, 2)), np.bincount(labels, minlength=len(names)),
        counts.argmax(axis=1),
    )
