"""Optional compiled kernels (numba) for the sequential parts of the scheduling analyses.

The block_sched artifact metric (a first-entry FIFO per SM), the lowest-free warp slot per SM and
the per-SM busy sweep are recurrences: each step depends on the previous one within an SM, so numpy
can only step over positions for all SMs at once (thousands of numpy calls at 1M records). Here the
same rules run as plain loops, compiled by numba when it is installed (``pip install
neutrino-ae[fast]``). Without numba, or with ``NEUTRINO_AE_PURE_NUMPY=1`` in the environment, the
analyses use their numpy implementations; both paths give identical results
(tests/sched/test_sched_kernels.py). The switch is :mod:`neutrino_ae.jit`.

Kernels take contiguous int64 arrays only, so each compiles once per process (and is then cached on
disk with ``cache=True``: a notebook pays the compile time once per machine, not per kernel start).
The undecorated Python functions stay reachable as ``<kernel>.py_func`` (or are the kernels themselves
when numba is absent) so the rules can be checked on small inputs either way.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from neutrino_ae.jit import HAVE_NUMBA, jit, use_numba  # noqa: F401  (the switch, re-exported)

#: Group (SM) ids below this are mapped to dense indices with a lookup table instead of a sort.
DENSE_ID_LIMIT = 1 << 20


def i64(a: Any) -> np.ndarray:
    """Contiguous int64 view/copy: the only argument type the kernels are compiled for."""
    return np.ascontiguousarray(a, dtype=np.int64)


# --------------------------------------------------------------------------------------------- kernels


@jit
def dense_ids_kernel(ids: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ids (ascending) and each element's index into them, for ``0 <= ids < limit``."""
    n = ids.size
    seen = np.zeros(limit, np.int64)
    for i in range(n):
        seen[ids[i]] = 1
    k = 0
    for v in range(limit):
        if seen[v]:
            seen[v] = k
            k += 1
        else:
            seen[v] = -1
    uniq = np.empty(k, np.int64)
    for v in range(limit):
        if seen[v] >= 0:
            uniq[seen[v]] = v
    idx = np.empty(n, np.int64)
    for i in range(n):
        idx[i] = seen[ids[i]]
    return uniq, idx


@jit
def artifact_fifo_kernel(lstart: np.ndarray, elapse: np.ndarray, gidx: np.ndarray,
                         n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The artifact's first-entry FIFO per group, visiting blocks in input (block-index) order.

    Each group's list is a linked list through ``nxt`` (the next block of the same group), so one
    pass over the blocks suffices: append b, then compare b's start with the end of the list's first
    entry (which existed before b) and pop it when it has ended. Returns blocks, running and
    scheduling cycles per group.
    """
    n = lstart.size
    head = np.full(n_groups, -1, np.int64)
    tail = np.full(n_groups, -1, np.int64)
    nxt = np.empty(n, np.int64)
    blocks = np.zeros(n_groups, np.int64)
    running = np.zeros(n_groups, np.int64)
    sched = np.zeros(n_groups, np.int64)
    for b in range(n):
        g = gidx[b]
        h = head[g]
        if h < 0:
            head[g] = b
        else:
            nxt[tail[g]] = b
            h_end = lstart[h] + elapse[h]
            if h_end <= lstart[b]:
                sched[g] += lstart[b] - h_end
                head[g] = nxt[h]
        tail[g] = b
        blocks[g] += 1
        running[g] += elapse[b]
    return blocks, running, sched


@jit
def heap_pop(key: np.ndarray, val: np.ndarray, n: int) -> int:
    """Remove the root of the binary min-heap ``key[:n]`` (``val`` moves with ``key``; the same array
    may be passed as both); returns the new size."""
    n -= 1
    k_last = key[n]
    v_last = val[n]
    j = 0
    while True:
        c = 2 * j + 1
        if c >= n:
            break
        if c + 1 < n and key[c + 1] < key[c]:
            c += 1
        if key[c] >= k_last:
            break
        key[j] = key[c]
        val[j] = val[c]
        j = c
    if n > 0:
        key[j] = k_last
        val[j] = v_last
    return n


@jit
def heap_push(key: np.ndarray, val: np.ndarray, n: int, k: int, v: int) -> int:
    """Add ``(k, v)`` to the binary min-heap ``key[:n]``; returns the new size."""
    j = n
    while j > 0:
        p = (j - 1) // 2
        if key[p] <= k:
            break
        key[j] = key[p]
        val[j] = val[p]
        j = p
    key[j] = k
    val[j] = v
    return n + 1


@jit
def lowest_free_kernel(start: np.ndarray, end: np.ndarray, first: np.ndarray,
                       counts: np.ndarray) -> np.ndarray:
    """Lowest free slot of every interval, intervals already ordered by (group, start, tiebreak).

    Two binary heaps per group: busy slots keyed by end, and freed slot numbers. Before interval i
    takes a slot, every busy slot with ``end <= start_i`` is freed (a slot freed at t is reusable at
    t, zero-length intervals included); the lowest freed slot is taken, else a new one (numbered
    after every slot used so far, hence higher than any freed one).
    """
    n = start.size
    out = np.empty(n, np.int64)
    cap = 1
    for c in counts:
        cap = max(cap, c)
    b_end = np.empty(cap, np.int64)
    b_slot = np.empty(cap, np.int64)
    free = np.empty(cap, np.int64)
    for g in range(first.size):
        nb = 0
        nf = 0
        used = 0
        for i in range(first[g], first[g] + counts[g]):
            s = start[i]
            while nb > 0 and b_end[0] <= s:  # free every busy slot that has ended by s
                slot = b_slot[0]
                nb = heap_pop(b_end, b_slot, nb)
                nf = heap_push(free, free, nf, slot, slot)
            if nf > 0:
                slot = free[0]
                nf = heap_pop(free, free, nf)
            else:
                slot = used
                used += 1
            out[i] = slot
            nb = heap_push(b_end, b_slot, nb, end[i], slot)
    return out


@jit
def peak_and_reuse_kernel(starts: np.ndarray, ends: np.ndarray, first: np.ndarray,
                          counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group (starts and ends each sorted within the group): peak residency and slot-reuse total.

    Residency right after the i-th start is i+1 minus the ends at or before it (an end at the same
    cycle leaves first); with C the peak, the slot-reuse total is ``sum_{i>=C} start_i - end_{i-C}``.
    """
    ng = first.size
    peak = np.zeros(ng, np.int64)
    total = np.zeros(ng, np.int64)
    for g in range(ng):
        lo = first[g]
        m = counts[g]
        # Branch-free merge: which of (next start, next end) comes first is data-dependent and
        # mispredicted about half the time, so it is turned into arithmetic (10 -> 7 ms at 1M blocks).
        i = 0
        j = 0
        best = 0
        big = np.iinfo(np.int64).max
        while i < m:
            e = ends[lo + j] if j < m else big
            take_end = np.int64(e <= starts[lo + i])
            j += take_end
            i += 1 - take_end
            best = max(best, i - j)
        acc = 0
        for i in range(best, m):
            acc += starts[lo + i] - ends[lo + i - best]
        peak[g] = best
        total[g] = acc
    return peak, total


@jit
def step_merge_kernel(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct event times of globally sorted starts and ends, and the open count after each."""
    n = starts.size
    m = ends.size
    times = np.empty(n + m, np.int64)
    count = np.empty(n + m, np.int64)
    i = 0
    j = 0
    k = 0
    cur = 0
    while i < n or j < m:
        if j >= m or (i < n and starts[i] <= ends[j]):
            t = starts[i]
        else:
            t = ends[j]
        while i < n and starts[i] == t:
            cur += 1
            i += 1
        while j < m and ends[j] == t:
            cur -= 1
            j += 1
        times[k] = t
        count[k] = cur
        k += 1
    return times[:k], count[:k]


@jit
def busy_steps_kernel(starts: np.ndarray, ends: np.ndarray, first: np.ndarray, counts: np.ndarray,
                      times: np.ndarray) -> np.ndarray:
    """Number of busy groups on each step of ``times`` (all distinct event times, ascending).

    Per group (starts and ends sorted within it) the events at one cycle are taken together, so an
    interval ending exactly when the next starts keeps the group busy; a change of busy/idle adds
    +-1 at that cycle's position in ``times``.
    """
    delta = np.zeros(times.size, np.int64)
    for g in range(first.size):
        lo = first[g]
        m = counts[g]
        i = 0
        j = 0
        cur = 0
        while i < m or j < m:
            if j >= m or (i < m and starts[lo + i] <= ends[lo + j]):
                t = starts[lo + i]
            else:
                t = ends[lo + j]
            before = cur
            while i < m and starts[lo + i] == t:
                cur += 1
                i += 1
            while j < m and ends[lo + j] == t:
                cur -= 1
                j += 1
            if (before > 0) != (cur > 0):
                pos = np.searchsorted(times, t)
                delta[pos] += 1 if cur > 0 else -1
    return np.cumsum(delta)


@jit
def group_min_offset_kernel(values: np.ndarray, gidx: np.ndarray, n_groups: int) -> np.ndarray:
    """``values - min(values of the same group)`` for uint64 clocks, as int64."""
    n = values.size
    lo = np.full(n_groups, np.iinfo(np.uint64).max, np.uint64)
    for i in range(n):
        if values[i] < lo[gidx[i]]:
            lo[gidx[i]] = values[i]
    out = np.empty(n, np.int64)
    for i in range(n):
        out[i] = np.int64(values[i] - lo[gidx[i]])
    return out


@jit
def group_sort_kernel(values: np.ndarray, gidx: np.ndarray, first: np.ndarray) -> tuple[np.ndarray, bool]:
    """``values`` sorted within each group (group g occupies ``[first[g], first[g+1])`` of the result).

    Block-sched records come in block order, in which every SM's starts and ends are nearly sorted
    already, so a scatter by group followed by an insertion sort costs about one pass. Insertion
    sort is quadratic on disorder, so it gives up (returns False) after a few shifts per element
    and the caller sorts another way.
    """
    n = values.size
    out = np.empty(n, np.int64)
    pos = first.copy()
    for i in range(n):
        g = gidx[i]
        out[pos[g]] = values[i]
        pos[g] += 1
    for g in range(first.size):
        lo = first[g]
        hi = pos[g]
        budget = 4 * (hi - lo) + 64
        for i in range(lo + 1, hi):
            v = out[i]
            j = i - 1
            while j >= lo and out[j] > v:
                out[j + 1] = out[j]
                j -= 1
            budget -= i - 1 - j
            out[j + 1] = v
            if budget < 0:
                return out, False
    return out, True


@jit
def split_records_kernel(words: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns of 16-byte (lstart u8, elapse u4, smid u4) records seen as rows of two uint64 words.

    One pass over a (possibly strided) memmap view: numpy would make a strided copy per field
    and then a cast per column.
    """
    n = words.shape[0]
    lstart = np.empty(n, np.uint64)
    elapse = np.empty(n, np.int64)
    smid = np.empty(n, np.int64)
    for i in range(n):
        lstart[i] = words[i, 0]
        w = words[i, 1]
        elapse[i] = np.int64(w & np.uint64(0xFFFFFFFF))
        smid[i] = np.int64(w >> np.uint64(32))
    return lstart, elapse, smid


def record_words(rec: np.ndarray, items: int | None = None) -> np.ndarray | None:
    """A BLOCK_SCHED structured array (last axis contiguous) seen as uint64 words, the last axis doubled,
    for :func:`split_records_kernel`; None when the compiled path does not apply (no numba, big-endian
    host, another record layout, fewer than :data:`NUMBA_MIN_ITEMS` records used: ``items``, default all)."""
    dt = rec.dtype
    if not use_numba(rec.size if items is None else items) or sys.byteorder != "little" or dt.itemsize != 16:
        return None
    if dt.names != ("lstart", "elapse", "smid"):
        return None
    if [dt.fields[k][0].str for k in dt.names] != ["<u8", "<u4", "<u4"] or rec.ndim == 0 or rec.strides[-1] != 16:
        return None
    return rec.view(np.uint64)


# --------------------------------------------------------------------------------------------- helpers


def dense_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ids (ascending) and each element's index into them (``np.unique(..., return_inverse=True)``).

    Small non-negative ids (SM numbers) go through a lookup table in O(n) instead of a sort.
    """
    ids = i64(ids)
    if ids.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lo, hi = int(ids.min()), int(ids.max())
    if lo >= 0 and hi < DENSE_ID_LIMIT:
        if use_numba(ids.size):
            return dense_ids_kernel(ids, hi + 1)
        present = np.bincount(ids, minlength=hi + 1) > 0
        return np.flatnonzero(present), (np.cumsum(present) - 1)[ids]
    uniq, inv = np.unique(ids, return_inverse=True)
    return uniq, inv.reshape(-1).astype(np.int64)


def count_distinct(ids: np.ndarray) -> int:
    """``np.unique(ids).size`` without a sort for small non-negative ids."""
    ids = np.asarray(ids)
    if ids.size == 0:
        return 0
    if ids.dtype.kind in "iu" and int(ids.min()) >= 0 and int(ids.max()) < DENSE_ID_LIMIT:
        return int(np.count_nonzero(np.bincount(ids.astype(np.int64, copy=False))))
    return int(np.unique(ids).size)


def group_sorted(gidx: np.ndarray, n_groups: int, *values: np.ndarray) -> tuple[list[np.ndarray], np.ndarray,
                                                                                 np.ndarray]:
    """Each of ``values`` sorted within its group (groups in index order), with first position and count per group.

    With numba, an adaptive sort of nearly sorted groups (:func:`group_sort_kernel`) is tried
    first. Otherwise one sort of a packed (group, value) int64 key per array when the bits fit (numpy's
    vectorised int64 sort is several times faster than a lexsort); a lexsort when they do not.
    """
    gidx = i64(gidx)
    counts = np.bincount(gidx, minlength=n_groups).astype(np.int64)
    first = np.zeros(n_groups, np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    out = []
    gbits = max(1, int(n_groups - 1).bit_length())
    for v in values:
        v = i64(v)
        if v.size == 0:
            out.append(v.copy())
            continue
        if use_numba(v.size):
            done, ok = group_sort_kernel(v, gidx, first)
            if ok:
                out.append(done)
                continue
        lo = int(v.min())
        span_bits = max(1, (int(v.max()) - lo).bit_length())
        if span_bits + gbits <= 62:
            key = np.sort((gidx << span_bits) | (v - lo))
            out.append((key & np.int64((1 << span_bits) - 1)) + lo)
        else:
            out.append(v[np.lexsort((v, gidx))])
    return out, first, counts


def order_by_group_start(gidx: np.ndarray, n_groups: int, start: np.ndarray,
                         tiebreak: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Permutation ordering by (group, start, tiebreak, input position), first position and count per group."""
    gidx = i64(gidx)
    start = i64(start)
    n = start.size
    counts = np.bincount(gidx, minlength=n_groups).astype(np.int64)
    first = np.zeros(n_groups, np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    if tiebreak is None:
        rank_to_pos = None
    else:
        tb = np.asarray(tiebreak)
        # Trace tiebreaks (block, warp) already follow input order; then the position is the rank.
        rank_to_pos = None if n < 2 or bool(np.all(tb[1:] >= tb[:-1])) else np.argsort(tb, kind="stable")
    rank = np.arange(n, dtype=np.int64)
    if rank_to_pos is not None:
        rank[rank_to_pos] = np.arange(n, dtype=np.int64)
    lo = int(start.min()) if n else 0
    span_bits = max(1, (int(start.max()) - lo).bit_length()) if n else 1
    rbits = max(1, int(n - 1).bit_length())
    gbits = max(1, int(n_groups - 1).bit_length())
    if gbits + span_bits + rbits <= 62:
        key = np.sort((((gidx << span_bits) | (start - lo)) << rbits) | rank)
        order = key & np.int64((1 << rbits) - 1)
    else:
        order = np.lexsort((rank, start, gidx))
        return order.astype(np.int64), first, counts
    if rank_to_pos is not None:
        order = rank_to_pos[order]
    return order.astype(np.int64), first, counts
