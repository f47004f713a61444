"""Fig. 13's computations: warp records in, sweeps, tails and tables out (no I/O, no plots; numpy only, pandas
imported by :func:`timeline_table` alone)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from neutrino_ae.sched import intervals as accel
from neutrino_ae.sched.slots import lowest_free_slots

if TYPE_CHECKING:  # pandas is imported where a table is built, after the command's line
    import pandas as pd

DEFAULT_TAIL_THRESHOLD = 0.9
#: The numpy sweeps cost about four times per warp what block_sched's numpy metric costs per block, so
#: numba pays for its start-up at a quarter of ``neutrino_ae.jit.NUMBA_MIN_ITEMS`` warps.
WARP_COST = 4

@dataclass
class WarpRecords:
    """One row per warp. ``lstart`` is relative to the earliest start in the trace."""

    path: Path
    lstart: np.ndarray  # int64
    elapse: np.ndarray  # int64
    smid: np.ndarray  # int64
    block: np.ndarray  # int64, -1 when unknown
    warp: np.ndarray  # int64 (warp index within its block), -1 when unknown
    grid_size: int | None = None
    block_size: int | None = None

    @property
    def end(self) -> np.ndarray:
        return self.lstart + self.elapse

    @property
    def n_sms(self) -> int:
        return accel.count_distinct(self.smid)

def align_clocks(lstart: np.ndarray, smid: np.ndarray, align: str = "sm") -> np.ndarray:
    """int64 start cycles: ``sm`` = relative to each SM's first start, ``global`` = to the trace's first start."""
    lstart = np.asarray(lstart).astype(np.uint64)
    if lstart.size == 0:
        return lstart.astype(np.int64)
    if align == "global":
        return (lstart - lstart.min()).astype(np.int64)
    if align != "sm":
        raise ValueError(f"clock alignment must be 'sm' or 'global', got {align!r}")
    smid = np.asarray(smid)
    if accel.use_numba(WARP_COST * lstart.size) and smid.dtype.kind in "iu":
        sms, gidx = accel.dense_ids(smid)
        return accel.group_min_offset_kernel(np.ascontiguousarray(lstart), gidx, sms.size)
    sms, inv = np.unique(smid, return_inverse=True)
    origin = np.full(sms.size, np.iinfo(np.uint64).max, dtype=np.uint64)
    np.minimum.at(origin, inv, lstart)
    return (lstart - origin[inv]).astype(np.int64)

def active_sweep(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step function of running intervals: ``count[i]`` holds on ``[times[i], times[i+1])``."""
    if accel.use_numba(WARP_COST * np.size(start)):
        return accel.step_merge_kernel(np.sort(accel.i64(start)), np.sort(accel.i64(end)))
    return active_sweep_numpy(start, end)

def active_sweep_numpy(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`active_sweep` in numpy (the path without numba)."""
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    t, inv = np.unique(np.r_[start, end], return_inverse=True)
    delta = np.zeros(t.size, dtype=np.int64)
    np.add.at(delta, inv, np.r_[np.ones(start.size, np.int64), -np.ones(end.size, np.int64)])
    return t, np.cumsum(delta)

def busy_sm_sweep(smid: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step function of the number of SMs with at least one running warp.

    The steps are at every distinct start/end time (the times of :func:`active_sweep`); events of one
    SM at the same cycle are taken together, so back-to-back warps do not flicker the SM idle.
    """
    start = accel.i64(start)
    if not accel.use_numba(WARP_COST * start.size) or start.size == 0:
        return busy_sm_sweep_numpy(smid, start, end)
    end = accel.i64(end)
    times, _ = accel.step_merge_kernel(np.sort(start), np.sort(end))
    sms, gidx = accel.dense_ids(smid)
    (starts, ends), first, counts = accel.group_sorted(gidx, sms.size, start, end)
    return times, accel.busy_steps_kernel(starts, ends, first, counts, times)

def busy_sm_sweep_numpy(smid: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`busy_sm_sweep` in numpy (the path without numba)."""
    smid = np.asarray(smid, dtype=np.int64)
    start = np.asarray(start, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    n = start.size
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ev_sm = np.r_[smid, smid]
    ev_t = np.r_[start, end]
    ev_d = np.r_[np.ones(n, np.int64), -np.ones(n, np.int64)]
    order = np.lexsort((ev_t, ev_sm))
    sm, t, d = ev_sm[order], ev_t[order], ev_d[order]
    # Collapse equal (sm, t) events so a warp ending as another starts does not flicker the SM idle.
    head = np.flatnonzero(np.r_[True, (sm[1:] != sm[:-1]) | (t[1:] != t[:-1])])
    sm, t, d = sm[head], t[head], np.add.reduceat(d, head)
    # Each SM's deltas sum to zero, so a global cumsum is the per-SM running count.
    busy = np.cumsum(d) > 0
    prev = np.r_[False, busy[:-1]]
    prev[np.r_[True, sm[1:] != sm[:-1]]] = False
    change = busy.astype(np.int64) - prev.astype(np.int64)
    times, inv = np.unique(t, return_inverse=True)
    delta = np.zeros(times.size, dtype=np.int64)
    np.add.at(delta, inv, change)
    return times, np.cumsum(delta)

@dataclass
class Tail:
    threshold: float
    n_sms: int
    kernel_start: int
    kernel_end: int
    tail_start: int
    reached: bool  # whether the busy share ever reached the threshold

    @property
    def tail_cycles(self) -> int:
        return self.kernel_end - self.tail_start

    @property
    def tail_fraction(self) -> float:
        span = self.kernel_end - self.kernel_start
        return self.tail_cycles / span if span else 0.0

def find_tail(times: np.ndarray, busy: np.ndarray, n_sms: int, threshold: float = DEFAULT_TAIL_THRESHOLD) -> Tail:
    """Tail start = end of the last interval with ``busy >= threshold * n_sms`` (kernel start if never)."""
    if not 0 < threshold <= 1:
        raise ValueError(f"tail threshold must be in (0, 1], got {threshold}")
    times = np.asarray(times, dtype=np.int64)
    busy = np.asarray(busy)
    if times.size == 0:
        return Tail(threshold, n_sms, 0, 0, 0, False)
    hit = np.flatnonzero(busy[:-1] >= threshold * n_sms)
    reached = hit.size > 0
    tail_start = int(times[hit[-1] + 1]) if reached else int(times[0])
    return Tail(threshold, n_sms, int(times[0]), int(times[-1]), tail_start, reached)

def integrate_step(times: np.ndarray, values: np.ndarray, lo: int, hi: int) -> float:
    """Integral of a step function (``values[i]`` on ``[times[i], times[i+1])``) over ``[lo, hi]``."""
    if times.size < 2 or hi <= lo:
        return 0.0
    left = np.clip(times[:-1], lo, hi)
    right = np.clip(times[1:], lo, hi)
    return float(np.sum((right - left) * values[:-1].astype(np.float64)))

def pick_timeline_sms(rec: WarpRecords, n: int = 2) -> list[int]:
    """The SM that hosted the most distinct blocks, then the one at the median of that count."""
    key = np.where(rec.block >= 0, rec.block, np.arange(rec.block.size))  # unknown block: each warp its own
    pairs = np.unique(np.stack([rec.smid, key]), axis=1)
    sms, nblocks = np.unique(pairs[0], return_counts=True)
    order = np.lexsort((sms, -nblocks))
    picks = [int(sms[order[0]])]
    if n > 1 and sms.size > 1:
        for i in np.linspace(0, sms.size - 1, n)[1:].round().astype(int)[::-1]:
            cand = int(sms[order[i]])
            if cand not in picks:
                picks.append(cand)
            if len(picks) == n:
                break
    return picks

def timeline_columns(rec: WarpRecords, sms: Sequence[int]) -> dict[str, np.ndarray]:
    """Warps of the chosen SMs with their reconstructed slot, times relative to the SM's first start: the
    columns ``smid, block, warp, slot, start, end``."""
    sel = np.flatnonzero(np.isin(rec.smid, np.asarray(sms, dtype=np.int64)))
    sm = rec.smid[sel]
    start = rec.lstart[sel]
    end = start + rec.elapse[sel]
    tb = rec.block[sel] * (np.int64(1) << 20) + np.maximum(rec.warp[sel], 0)
    slot = lowest_free_slots(sm, start, end, tiebreak=tb)
    # Origin per SM so every panel starts at 0.
    uniq, inv = np.unique(sm, return_inverse=True)
    origin = np.full(uniq.size, np.iinfo(np.int64).max)
    np.minimum.at(origin, inv, start)
    return {"smid": sm, "block": rec.block[sel], "warp": rec.warp[sel], "slot": slot,
            "start": start - origin[inv], "end": end - origin[inv]}


def timeline_table(rec: WarpRecords, sms: Sequence[int]) -> pd.DataFrame:
    """:func:`timeline_columns` as a DataFrame (the timeline's CSV table)."""
    import pandas as pd

    return pd.DataFrame(timeline_columns(rec, sms))


def per_sm_stats(cols: dict[str, np.ndarray]) -> list[dict[str, int]]:
    """Per SM of a timeline (:func:`timeline_columns`), in SM order: its warps, distinct blocks, warp slots
    used (highest slot + 1) and span (last warp end, cycles since its first start)."""
    sms, inv = np.unique(cols["smid"], return_inverse=True)
    warps = np.bincount(inv, minlength=sms.size)
    blocks = np.bincount(np.unique(np.stack([inv, cols["block"]]), axis=1)[0], minlength=sms.size)
    slots = np.full(sms.size, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(slots, inv, cols["slot"])
    span = np.full(sms.size, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(span, inv, cols["end"])
    return [{"smid": int(s), "warps": int(w), "blocks": int(b), "slots": int(sl) + 1, "span_cycles": int(e)}
            for s, w, b, sl, e in zip(sms, warps, blocks, slots, span, strict=True)]

def peak_resident_blocks(smid: np.ndarray, block: np.ndarray, start: np.ndarray, end: np.ndarray) -> int:
    """Most blocks resident on one SM at once (a block spans its first warp start to its last warp end)."""
    block = np.asarray(block, dtype=np.int64)
    if block.size == 0 or block.min() < 0:
        return 0
    ub, inv = np.unique(block, return_inverse=True)
    b_start = np.full(ub.size, np.iinfo(np.int64).max)
    b_end = np.full(ub.size, np.iinfo(np.int64).min)
    np.minimum.at(b_start, inv, np.asarray(start, dtype=np.int64))
    np.maximum.at(b_end, inv, np.asarray(end, dtype=np.int64))
    b_sm = np.zeros(ub.size, np.int64)
    b_sm[inv] = np.asarray(smid, dtype=np.int64)
    ev_sm, ev_t = np.r_[b_sm, b_sm], np.r_[b_start, b_end]
    ev_d = np.r_[np.ones(ub.size, np.int64), -np.ones(ub.size, np.int64)]
    order = np.lexsort((ev_d, ev_t, ev_sm))  # ends before starts at a tie: a freed slot is reused at once
    return int(np.cumsum(ev_d[order]).max())  # per-SM sums are zero, so the global cumsum is per SM

@dataclass
class LastWaveTail:
    """From the first SM finishing all of its work to the kernel end (the generator's definition too)."""

    start: int
    end: int
    fraction: float  # of the kernel span
    idle_sm_fraction: float  # SM capacity left idle inside it

def last_wave_tail(smid: np.ndarray, start: np.ndarray, end: np.ndarray) -> LastWaveTail:
    smid = np.asarray(smid, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    sms, inv = np.unique(smid, return_inverse=True)
    last = np.full(sms.size, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last, inv, end)
    k0, k1 = int(np.min(start)), int(last.max())
    t0 = int(last.min())
    tail = k1 - t0
    busy = np.clip(last - t0, 0, None).sum()
    return LastWaveTail(t0, k1, tail / (k1 - k0) if k1 > k0 else 0.0,
                        float(1 - busy / (sms.size * tail)) if tail > 0 else 0.0)
