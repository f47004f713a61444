"""Block dispatcher: blocks go, in linear index order, to the earliest-free block slot (FIFO).

Model
-----
* An SM has ``slots`` block slots (from the occupancy calculation). The first wave is placed
  round-robin: block ``i < sms*slots`` goes to SM ``i % sms``, slot ``i // sms``, and starts at
  ``(i // sms) * first_wave_issue_cycles`` (the dispatcher hands each SM one block at a time).
* Every later block takes the slot that frees first (ties: lowest SM, then slot) and starts
  ``gap`` cycles after the previous block in that slot ended. ``gap`` is the block-scheduling cost
  (context clear + dispatch), drawn per block.
* A block ends ``duration`` cycles after it starts.

The exact sequential rule ("next block → slot with the smallest free time") is evaluated in
vectorised batches: after sorting the slots by free time, block ``pos + j`` takes the ``j``-th slot
as long as no block placed earlier in the batch frees its slot before that slot's free time. The
batch stops at the first violation, so the result equals a heap-based simulation; the number of
batches is about the number of waves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neutrino_ae.formats.records import WARP_SCHED


@dataclass
class Schedule:
    start: np.ndarray  # float64, cycles on a global time axis (0 = launch)
    end: np.ndarray
    sm: np.ndarray  # int32
    slot: np.ndarray  # int32, slot index within the SM
    gap: np.ndarray  # float64, dispatch gap paid before the block (0 for first-wave blocks)
    has_predecessor: np.ndarray  # bool: the block reused a slot (its gap is a scheduling cost)

    @property
    def makespan(self) -> float:
        return float(self.end.max()) if self.end.size else 0.0


def dispatch_fifo(durations: np.ndarray, gaps: np.ndarray, sms: int, slots: int,
                  first_wave_issue_cycles: float = 0.0) -> Schedule:
    """Place ``len(durations)`` blocks on ``sms * slots`` slots (see module docstring)."""
    dur = np.asarray(durations, dtype=np.float64)
    gap_in = np.asarray(gaps, dtype=np.float64)
    n = dur.size
    if gap_in.size != n:
        raise ValueError("durations and gaps must have the same length")
    total = sms * slots
    start = np.zeros(n)
    sm = np.zeros(n, np.int32)
    slot = np.zeros(n, np.int32)
    gap = np.zeros(n)
    first = min(n, total)
    i = np.arange(first)
    sm[:first] = i % sms
    slot[:first] = i // sms
    start[:first] = (i // sms) * first_wave_issue_cycles
    free = np.full(total, np.inf)  # slots never used stay "busy forever" and are never chosen
    slot_id = sm[:first].astype(np.int64) * slots + slot[:first]
    free[slot_id] = start[:first] + dur[:first]
    ids = np.arange(total)
    pos = first
    while pos < n:
        order = np.lexsort((ids, free))
        m = min(n - pos, total)
        cand = order[:m]
        f = free[cand]
        b = np.arange(pos, pos + m)
        st = f + gap_in[b]
        en = st + dur[b]
        running_min = np.minimum.accumulate(en)
        ok = np.r_[True, running_min[:-1] > f[1:]]
        k = m if ok.all() else int(np.argmin(ok))
        cand, b = cand[:k], b[:k]
        start[b] = st[:k]
        gap[b] = gap_in[b]
        sm[b] = cand // slots
        slot[b] = cand % slots
        free[cand] = en[:k]
        pos += k
    has_pred = np.zeros(n, bool)
    has_pred[first:] = True
    return Schedule(start, start + dur, sm, slot, gap, has_pred)


@dataclass(frozen=True)
class ClockModel:
    """How clock64 values are formed. SM clocks are not synchronised: each SM's counter has its own
    offset. Warps of a block start ``warp_stagger_cycles`` apart (plus jitter) after the first."""

    base_cycles: int = 1_000_000_000_000
    sm_offset_max_cycles: int = 1 << 20
    warp_stagger_cycles: int = 2
    warp_start_jitter_cycles: int = 4
    warp_end_jitter_cycles: int = 8

    def sm_offsets(self, rng: np.random.Generator, sms: int) -> np.ndarray:
        return rng.integers(0, self.sm_offset_max_cycles, sms, dtype=np.int64)


def records_from_times(warp_start: np.ndarray, warp_end: np.ndarray, sm: np.ndarray, clock: ClockModel,
                       sm_offsets: np.ndarray) -> np.ndarray:
    """``WARP_SCHED`` records ``(blocks, warps, 1)`` from per-warp global start/end cycles."""
    ws = np.rint(warp_start).astype(np.int64)
    we = np.maximum(np.rint(warp_end).astype(np.int64), ws + 1)
    n, warps = ws.shape
    rec = np.empty((n, warps, 1), dtype=WARP_SCHED)
    rec["lstart"][:, :, 0] = (clock.base_cycles + sm_offsets[sm][:, None] + ws).astype(np.uint64)
    rec["elapse"][:, :, 0] = (we - ws).astype(np.uint32)
    rec["smid"][:, :, 0] = np.broadcast_to(sm[:, None], (n, warps)).astype(np.uint32)
    return rec


def warp_offsets(rng: np.random.Generator, n: int, warps: int, clock: ClockModel) -> np.ndarray:
    """Start delay of each warp after its block's first warp: ``w*stagger + U{0..jitter}``, 0 for warp 0."""
    delay = (np.arange(warps, dtype=np.int64) * clock.warp_stagger_cycles
             + rng.integers(0, clock.warp_start_jitter_cycles + 1, (n, warps)))
    delay[:, 0] = 0
    return delay


def block_warp_records(sched: Schedule, warps: int, clock: ClockModel, sm_offsets: np.ndarray,
                       rng: np.random.Generator) -> np.ndarray:
    """Records of every warp of blocks that run [start, end) as a unit (block_sched probe).

    Warp 0 starts at the block start and ends at the block end (its record is the block's); warp
    ``w`` starts :func:`warp_offsets` later and ends up to ``warp_end_jitter`` cycles early.
    """
    n = sched.start.size
    s0 = np.rint(sched.start)
    e0 = np.rint(sched.end)
    early = rng.integers(0, clock.warp_end_jitter_cycles + 1, (n, warps))
    early[:, 0] = 0
    ws = s0[:, None] + warp_offsets(rng, n, warps, clock)
    we = np.maximum(e0[:, None] - early, ws + 1)
    return records_from_times(ws, we, sched.sm, clock, sm_offsets)
