"""Warp (or block) slots on an SM, rebuilt from start/end times: each interval takes the lowest slot
that is free when it starts. Shared by warp scheduling (Fig. 13a/b) and block scheduling (Sec. 4.5)."""

from __future__ import annotations

import numpy as np

from neutrino_ae.sched import intervals as accel


def lowest_free_slots(group: np.ndarray, start: np.ndarray, end: np.ndarray,
                      tiebreak: np.ndarray | None = None) -> np.ndarray:
    """Slot of every interval: per group, intervals in start order take the lowest slot free at their start.

    A slot is free at ``t`` when its last interval ended at or before ``t``. Ties in start are
    broken by ``tiebreak`` (default: input order), then by input order. With numba: one packed sort
    and a heap loop (:func:`neutrino_ae.sched.intervals.lowest_free_kernel`); else :func:`lowest_free_slots_numpy`.
    """
    start = accel.i64(start)
    if not accel.use_numba(start.size) or start.size == 0:
        return lowest_free_slots_numpy(group, start, end, tiebreak)
    end = accel.i64(end)
    groups, gidx = accel.dense_ids(group)
    order, first, counts = accel.order_by_group_start(gidx, groups.size, start, tiebreak)
    out = np.empty(start.size, dtype=np.int64)
    out[order] = accel.lowest_free_kernel(start[order], end[order], first, counts)
    return out


def lowest_free_slots_numpy(group: np.ndarray, start: np.ndarray, end: np.ndarray,
                            tiebreak: np.ndarray | None = None) -> np.ndarray:
    """:func:`lowest_free_slots` in numpy (the path without numba).

    Greedy lowest-free is sequential within a group, so we step over the k-th start of every group
    at once: max(intervals per group) steps of numpy ops over (groups x slots), never a Python step
    per interval.
    """
    group = np.asarray(group, dtype=np.int64)
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    n = start.size
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    tb = np.arange(n) if tiebreak is None else np.asarray(tiebreak)
    order = np.lexsort((np.arange(n), tb, start, group))
    _, first, counts = np.unique(group[order], return_index=True, return_counts=True)
    s, e = start[order], end[order]
    floor = np.iinfo(np.int64).min
    cap = 8
    slot_end = np.full((first.size, cap), floor, dtype=np.int64)  # floor = never used, free for anyone
    used = np.zeros(first.size, dtype=np.int64)
    rows_all = np.arange(first.size)
    slots_sorted = np.empty(n, dtype=np.int64)
    for k in range(int(counts.max())):
        act = rows_all[counts > k]
        idx = first[act] + k
        if int(used[act].max()) >= cap:  # keep a never-used column so a free slot always exists
            slot_end = np.concatenate([slot_end, np.full_like(slot_end, floor)], axis=1)
            cap *= 2
        free = slot_end[act] <= s[idx][:, None]
        slot = np.argmax(free, axis=1)
        slot_end[act, slot] = e[idx]
        used[act] = np.maximum(used[act], slot + 1)
        slots_sorted[idx] = slot
    out[order] = slots_sorted
    return out
