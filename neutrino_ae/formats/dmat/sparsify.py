"""The sparsifier: DMAT records of a dmat ``.bin`` (``records.DMAT``), chunk by chunk, into the
:class:`~.dmat.DmatData` of a ``.dmat`` (accesses counted per (clock, page); unfilled slots dropped
and counted by :func:`~.dmat.filled_mask`). Memory follows the distinct (clock, page) pairs, not the
trace; :mod:`.stream` bounds it for traces of any size.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from neutrino_ae.formats.dmat import PAGE_MASK, DmatData, filled_mask, from_pairs, run_starts


def sparsify(chunks: Iterable[np.ndarray], merge_every: int = 16) -> DmatData:
    """Count accesses per (clock, page) over chunks of DMAT records (any shape, ``records.DMAT``
    dtype). Unfilled slots (:func:`filled_mask`) are dropped and counted in ``unfilled``. Memory is bounded by
    the number of distinct (clock, page) pairs plus one chunk, not by the trace size."""
    acc_keys: list[np.ndarray] = []
    acc_counts: list[np.ndarray] = []
    pending = 0
    merged_clock = np.zeros(0, np.uint64)
    merged_page = np.zeros(0, np.uint64)
    merged_count = np.zeros(0, np.uint64)

    def merge() -> None:
        nonlocal merged_clock, merged_page, merged_count, acc_keys, acc_counts, pending
        if not acc_keys:
            return
        if len(acc_keys) == 1 and merged_clock.size == 0:  # one reduced run: nothing to merge
            (merged_clock, merged_page), merged_count = acc_keys[0], acc_counts[0]
            acc_keys, acc_counts, pending = [], [], 0
            return
        clk = np.concatenate([merged_clock, *(k[0] for k in acc_keys)])
        pg = np.concatenate([merged_page, *(k[1] for k in acc_keys)])
        cnt = np.concatenate([merged_count, *acc_counts])
        merged_clock, merged_page, merged_count = _reduce(clk, pg, cnt)
        acc_keys, acc_counts, pending = [], [], 0

    unfilled = 0
    for chunk in chunks:
        rec = chunk.reshape(-1)
        page = rec["addr"] & PAGE_MASK
        keep = filled_mask(rec["clock"], page)
        kept = int(np.count_nonzero(keep))
        unfilled += rec.size - kept
        if kept < rec.size:
            clock, page = rec["clock"][keep], page[keep]
        else:
            clock = rec["clock"]
        c, p, n = _reduce(clock, page, None)
        acc_keys.append((c, p))
        acc_counts.append(n)
        pending += 1
        if pending >= merge_every:
            merge()
    merge()
    data = from_pairs(merged_clock, merged_page, merged_count, presorted=True)  # _reduce sorts by (clock, page)
    data.unfilled = unfilled
    return data


def _reduce(clock: np.ndarray, page: np.ndarray,
            count: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum counts of equal (clock, page) keys (``count=None``: every record counts 1); the result is
    ordered by (clock, page)."""
    if clock.size == 0:
        return clock.astype(np.uint64), page.astype(np.uint64), np.zeros(0, np.uint64)
    packed = _pack(clock, page)
    if packed is None:
        return _reduce_lexsort(clock, page, np.ones(clock.size, np.uint64) if count is None else count)
    # One sort of a packed (clock, page) uint64 key instead of a two-key lexsort: several times
    # faster, and the key order is exactly (clock, page).
    key, shift, page_shift, page_min = packed
    if count is None:
        key.sort()
        idx = run_starts(key)
        n = np.diff(np.r_[idx, key.size]).astype(np.uint64)
    else:
        order = np.argsort(key, kind="stable")  # the runs being merged are sorted: timsort merges them
        key = key[order]
        idx = run_starts(key)
        n = np.add.reduceat(np.asarray(count, np.uint64)[order], idx)
    k = key[idx]
    c = k >> np.uint64(shift)
    p = ((k & np.uint64((1 << shift) - 1)) << np.uint64(page_shift)) + page_min
    return c, p, n.astype(np.uint64)


def _pack(clock: np.ndarray, page: np.ndarray) -> tuple[np.ndarray, int, int, np.uint64] | None:
    """``clock << shift | (page - page_min) >> page_shift`` as uint64, or None when it needs > 64 bits."""
    clock = np.asarray(clock, np.uint64)
    page = np.asarray(page, np.uint64)
    page_min = page.min()
    rel = page - page_min
    # Pages of 64 KiB have 16 zero low bits (page_min too): drop them to save key bits.
    page_shift = 16 if int(np.bitwise_or.reduce(rel)) & 0xFFFF == 0 else 0
    rel >>= np.uint64(page_shift)
    shift = max(1, int(rel.max()).bit_length())
    # shift 64 would be a no-op shift on x86 (count taken mod 64), so it must stay below.
    if shift > 63 or int(clock.max()).bit_length() + shift > 64:
        return None
    return (clock << np.uint64(shift)) | rel, shift, page_shift, page_min


def _reduce_lexsort(clock: np.ndarray, page: np.ndarray,
                    count: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.lexsort((page, clock))
    c, p, n = clock[order], page[order], count[order]
    first = np.r_[True, (c[1:] != c[:-1]) | (p[1:] != p[:-1])]
    idx = np.flatnonzero(first)
    return c[idx].astype(np.uint64), p[idx].astype(np.uint64), np.add.reduceat(n, idx).astype(np.uint64)
