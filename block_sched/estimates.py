"""The section's two estimators per SM, in numpy (no pandas, no matplotlib, no numba import), and the
artifact's line from them.

The artifact's metric (kept so the numbers stay comparable with the paper): take each block's
first-warp record (lstart, elapse, smid); per SM keep a FIFO list of blocks; visit blocks in
linear block-index order (not start-time order); for block b look only at the list's FIRST entry
p: if ``p.lstart + p.elapse <= b.lstart`` add the gap to the SM's scheduling total and pop p;
append b either way and add ``b.elapse`` to the SM's running total. Means are over the SMs that
ran at least one block. Unlike the original script this indexes SMs by their distinct ids (no
crash on non-contiguous smids) and takes the first warp as unit 0 whatever the block size.

Beside it, clearly named, the *slot-reuse* estimator: per SM sort starts and ends by time; with C
the SM's peak number of resident blocks, the i-th start (i >= C) refills the slot freed by the
(i-C)-th end, so its dispatch gap is ``start_(i) - end_(i-C)`` (never negative, because at most C
blocks are resident). It uses time order, so a late-listed block that finished early counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The padded (SMs x blocks per SM) tables of :func:`fifo_per_sm` may hold at most this many times
#: the records (SMs of very unequal load fall back to the stepping over active SMs).
PAD_LIMIT = 4


@dataclass
class FifoPerSM:
    """The artifact metric's per-SM totals (SMs that ran at least one block, ascending id)."""

    smid: np.ndarray
    blocks: np.ndarray
    running_cycles: np.ndarray
    scheduling_cycles: np.ndarray


def dense_sm(smid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct SM ids (ascending) and each record's index into them; O(n) for ids below 2**20."""
    if smid.size and smid.min() >= 0 and smid.max() < (1 << 20):
        present = np.bincount(smid) > 0
        return np.flatnonzero(present), (np.cumsum(present) - 1)[smid]
    sms, inv = np.unique(smid, return_inverse=True)
    return sms, inv.reshape(-1)


def fifo_per_sm(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> FifoPerSM:
    """The artifact's first-entry FIFO per SM in numpy.

    Blocks of an SM enter its list in block-index order and every block is appended, so the list is
    always ``seq[head:k]`` of the SM's index-ordered sequence ``seq``; the only state is ``head``, which
    advances by at most one per visited block. That is sequential within an SM, so the loop steps over
    the position ``k`` for all SMs at once: max(blocks per SM) steps (about grid/SMs), each a handful of
    numpy operations over the SMs. Starts are laid out as a (position, SM) table, padded with the
    smallest int64 (which never pops a head), so a step reads one contiguous row.
    """
    lstart = np.asarray(lstart, dtype=np.int64)
    elapse = np.asarray(elapse, dtype=np.int64)
    smid = np.asarray(smid, dtype=np.int64)
    n = lstart.size
    sms, g = dense_sm(smid)
    ns = sms.size
    counts = np.bincount(g, minlength=ns)
    if n == 0:
        return FifoPerSM(sms, counts, np.zeros(ns, np.int64), np.zeros(ns, np.int64))
    order = np.argsort(g.astype(np.uint16) if ns <= (1 << 16) else g, kind="stable")  # index order within an SM
    first = np.zeros(ns, np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    running = np.add.reduceat(elapse[order], first)  # exact int64 sums (bincount's weights are float)
    width = int(counts.max())
    if ns * width > PAD_LIMIT * n + 4096:
        return FifoPerSM(sms, counts, running, _fifo_stepping(lstart, elapse, g, counts))
    gs = g[order]
    pos = np.arange(n, dtype=np.int64) - first[gs]
    flat = pos * ns + gs  # (position, SM) table, row-major
    start = np.full(width * ns, np.iinfo(np.int64).min, np.int64)
    start[flat] = lstart[order]
    end = np.zeros(width * ns, np.int64)
    end[flat] = lstart[order] + elapse[order]
    start = start.reshape(width, ns)
    head = np.arange(ns, dtype=np.int64)  # flat index of each SM's list head in ``end``
    sched = np.zeros(ns, np.int64)
    e = np.empty(ns, np.int64)
    pop = np.empty(ns, bool)
    gap = np.empty(ns, np.int64)
    for k in range(1, width):
        s = start[k]
        np.take(end, head, out=e)
        np.less_equal(e, s, out=pop)
        np.subtract(s, e, out=gap)
        np.add(sched, gap, out=sched, where=pop)
        np.add(head, ns, out=head, where=pop)
    return FifoPerSM(sms, counts, running, sched)


def _fifo_stepping(lstart: np.ndarray, elapse: np.ndarray, g: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """:func:`fifo_per_sm` without the padded table (SMs of very unequal load): each step takes the
    SMs that still have a block at that position."""
    n = lstart.size
    order = np.argsort(g, kind="stable")
    first = np.zeros(counts.size, np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    start = lstart[order]
    end = start + elapse[order]
    head = first.copy()
    sched = np.zeros(counts.size, np.int64)
    for k in range(1, int(counts.max()) if n else 0):
        act = np.flatnonzero(counts > k)
        cur = first[act] + k
        h = head[act]
        # head < cur always holds for k >= 1 (one pop per step at most), so the list is never empty here.
        pop = end[h] <= start[cur]
        sched[act] += np.where(pop, start[cur] - end[h], 0)
        head[act] = h + pop
    return sched


@dataclass
class SlotReuse:
    """The slot-reuse estimator per SM (SMs that ran at least one block, ascending id): the SM's peak number
    of resident blocks C and ``sum start_(i) - end_(i-C)`` over its time-ordered starts and ends."""

    smid: np.ndarray
    peak_resident: np.ndarray
    slot_reuse_cycles: np.ndarray

    def on(self, smid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Peak residency and slot-reuse cycles in the order of ``smid`` (ascending ids, such as the FIFO
        metric's): as they are where the SMs are the same, else as floats, NaN for an SM not listed here."""
        if np.array_equal(self.smid, smid):
            return self.peak_resident, self.slot_reuse_cycles
        peak, total = np.full(smid.size, np.nan), np.full(smid.size, np.nan)
        pos = np.searchsorted(self.smid, smid)
        found = (pos < self.smid.size) & (self.smid[np.minimum(pos, self.smid.size - 1)] == smid)
        peak[found] = self.peak_resident[pos[found]]
        total[found] = self.slot_reuse_cycles[pos[found]]
        return peak, total


def share_of_running(cycles: np.ndarray, running_cycles: np.ndarray) -> np.ndarray:
    """``cycles / running_cycles`` per SM, NaN where an SM ran for 0 cycles."""
    running = running_cycles.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(running > 0, cycles / running, np.nan)


def slot_reuse_per_sm(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> SlotReuse:
    """The slot-reuse estimator in numpy (the rule is in this module's docstring)."""
    lstart = np.asarray(lstart, dtype=np.int64)
    end = lstart + np.asarray(elapse, dtype=np.int64)
    smid = np.asarray(smid, dtype=np.int64)
    n = lstart.size
    if n == 0:
        return SlotReuse(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    sms, sm_idx = dense_sm(smid)
    lo = min(int(lstart.min()), int(end.min()))
    span_bits = max(1, (max(int(lstart.max()), int(end.max())) - lo + 1).bit_length())
    if span_bits + max(1, int(sms.size).bit_length()) > 62:
        return _slot_reuse_lexsort(lstart, end, smid)
    counts = np.bincount(sm_idx, minlength=sms.size)
    first = np.r_[0, np.cumsum(counts)[:-1]]
    # One sort of a packed (SM, time) int64 key instead of lexsorts (10x faster at 1M blocks). Starts
    # and ends share the packing, so the two sorted key arrays compare directly.
    high = sm_idx.astype(np.int64) << span_bits
    by_sm = _grouped_by_sm(sm_idx, sms.size)
    skey = _sorted(high | (lstart - lo), by_sm)
    ekey = _sorted(high | (end - lo), by_sm)
    mask = np.int64((1 << span_bits) - 1)
    starts = (skey & mask) + lo
    ends = (ekey & mask) + lo
    # Residency right after an SM's i-th start (ends at a tie leave first) is (starts so far) minus
    # (the SM's ends <= that start); in global positions the SM's offset cancels out.
    resident = np.arange(1, n + 1) - np.searchsorted(ekey, skey, side="right")
    peak = np.maximum.reduceat(resident, first)
    sm_of = np.repeat(np.arange(sms.size), counts)
    pos = np.arange(n) - first[sm_of]
    c = peak[sm_of]
    use = np.flatnonzero(pos >= c)
    gaps = np.zeros(n, np.int64)
    gaps[use] = starts[use] - ends[use - c[use]]
    return SlotReuse(sms, peak, np.add.reduceat(gaps, first))


def _grouped_by_sm(sm_idx: np.ndarray, sms: int) -> np.ndarray | None:
    """A stable order grouping the records by SM (a counting sort of 8- or 16-bit indices); None for more
    SMs than that."""
    if sms > (1 << 16):
        return None
    return np.argsort(sm_idx.astype(np.uint8 if sms <= (1 << 8) else np.uint16), kind="stable")


def _sorted(keys: np.ndarray, by_sm: np.ndarray | None) -> np.ndarray:
    """``np.sort(keys)`` for packed (SM, time) keys. Grouped by SM first, each SM's keys are in block-index
    order, which is nearly time order (blocks are dispatched in about index order): long sorted runs, which
    a stable (run-merging) sort finishes in a fraction of a quicksort's time."""
    if by_sm is None:
        return np.sort(keys)
    return np.sort(keys[by_sm], kind="stable")


def _slot_reuse_lexsort(lstart: np.ndarray, end: np.ndarray, smid: np.ndarray) -> SlotReuse:
    """:func:`slot_reuse_per_sm` with lexsorts, for clock spans too wide to pack with the SM index."""
    n = lstart.size
    s_order = np.lexsort((lstart, smid))
    sms, first, counts = np.unique(smid[s_order], return_index=True, return_counts=True)
    e_order = np.lexsort((end, smid))  # same SM grouping, ends in time order
    starts = lstart[s_order]
    ends = end[e_order]
    # Peak residency per SM: sweep +1/-1 events sorted by (sm, time, ends before starts at a tie).
    ev_sm = np.r_[smid, smid]
    ev_t = np.r_[lstart, end]
    ev_d = np.r_[np.ones(n, np.int64), -np.ones(n, np.int64)]
    ev = np.lexsort((ev_d, ev_t, ev_sm))
    running = np.cumsum(ev_d[ev])  # per-SM counts: every SM's events sum to zero, so no reset is needed
    ev_first = np.searchsorted(ev_sm[ev], sms)
    peak = np.maximum.reduceat(running, ev_first)
    sm_idx = np.repeat(np.arange(sms.size), counts)
    pos = np.arange(n) - first[sm_idx]
    c = peak[sm_idx]
    use = pos >= c
    gaps = np.zeros(n, np.int64)
    gaps[use] = starts[use] - ends[first[sm_idx[use]] + pos[use] - c[use]]
    return SlotReuse(sms, peak, np.add.reduceat(gaps, first))


def line_of(grid_size: int, running_cycles: np.ndarray, scheduling_cycles: np.ndarray) -> tuple[str, float, float]:
    """The artifact's line and the two means it truncates, from per-SM running and scheduling cycles
    (one entry per SM that ran at least one block)."""
    n = len(running_cycles)
    mean_run = int(running_cycles.sum()) / n if n else 0.0
    mean_sched = int(scheduling_cycles.sum()) / n if n else 0.0
    return f"No.block:{grid_size} Running:{int(mean_run)} Scheduling:{int(mean_sched)}(cycle)", mean_run, mean_sched


def _gt(truth: dict | None, key: str) -> float | None:
    """A ground-truth number of a trace (None: no truth, or not this one)."""
    return None if not truth or key not in truth else float(truth[key])
