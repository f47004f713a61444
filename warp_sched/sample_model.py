"""Sec. 7 (Fig. 13): warp-level timelines under EXCLUSIVE vs SHARED block scheduling, with a tail.

The kernel has ``warps`` warps per block with unequal work: block ``b`` has a base duration
gamma(``block_mean_cycles``, ``block_cv``) and warp ``w`` runs ``base * (1 - imbalance * u)``,
``u ~ U(0, 1)`` (warp 0 always runs the full ``base``: it does the block's epilogue).

* EXCLUSIVE: a block owns its warp slots until its *last* warp ends; the next block in that block
  slot starts one dispatch gap later (the shared block dispatcher of :mod:`neutrino_ae.sample.dispatch`,
  slots from the occupancy calculation).
* SHARED: an SM has ``max_warps_per_sm`` warp slots; a new block starts one gap after the moment
  ``warps`` of them are free, even while warps of older blocks still run, so warps of different
  blocks interleave and more blocks than block slots can be resident.

Dispatch is in linear block order to the SM that can start the block first (ties: lowest SM), the
first wave round-robin. Evaluated in batches exactly like
:func:`~neutrino_ae.sample.dispatch.dispatch_fifo` (each SM at most once per batch; a batch stops where
an earlier placement would change the choice).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from neutrino_ae.sample.device import Device, blocks_per_sm
from neutrino_ae.sample.dispatch import ClockModel, dispatch_fifo, records_from_times, warp_offsets
from neutrino_ae.sample.dists import gamma


@dataclass(frozen=True)
class WarpKernel:
    name: str = "_attn_fwd_warp_specialized"
    threads: int = 1024
    regs: int = 32
    block_mean_cycles: float = 20000.0
    block_cv: float = 0.08
    imbalance: float = 0.5
    gap_mean_cycles: float = 300.0
    gap_cv: float = 0.2
    first_wave_issue_cycles: float = 8.0

    @property
    def warps(self) -> int:
        return -(-self.threads // 32)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class WarpSchedParams:
    kernel: WarpKernel = field(default_factory=WarpKernel)
    full_waves: int = 3  # exclusive/shared traces: full waves, then a partial last wave
    tail_blocks: int = 20
    tail_full_waves: int = 4  # the tail-effect trace
    tail_tail_blocks: int = 12
    clock: ClockModel = field(default_factory=ClockModel)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class WarpRun:
    policy: str
    block_start: np.ndarray  # (n,)
    warp_start: np.ndarray  # (n, W) global cycles
    warp_end: np.ndarray
    sm: np.ndarray
    records: np.ndarray  # WARP_SCHED (n, W, 1)
    truth: dict[str, Any]


def draw_warp_work(k: WarpKernel, n: int, rng: np.random.Generator) -> np.ndarray:
    base = gamma(rng, k.block_mean_cycles, k.block_cv, n)
    frac = 1.0 - k.imbalance * rng.random((n, k.warps))
    frac[:, 0] = 1.0
    return base[:, None] * frac


def schedule_shared(work: np.ndarray, gaps: np.ndarray, sms: int, warp_slots: int,
                    first_wave_issue_cycles: float) -> tuple[np.ndarray, np.ndarray]:
    """Block start times and SMs under the shared-warp-slot policy (module docstring)."""
    n, w = work.shape
    if w > warp_slots:
        raise ValueError("a block has more warps than an SM has warp slots")
    per_sm = warp_slots // w
    start = np.zeros(n)
    sm = np.zeros(n, np.int64)
    free = np.zeros((sms, warp_slots))
    first = min(n, sms * per_sm)
    i = np.arange(first)
    sm[:first] = i % sms
    start[:first] = (i // sms) * first_wave_issue_cycles
    # First wave: block i takes warp slots [(i//sms)*w, (i//sms+1)*w) of its SM.
    cols = (i // sms)[:, None] * w + np.arange(w)
    free[sm[:first, None], cols] = start[:first, None] + work[:first]
    free.sort(axis=1)
    ids = np.arange(sms)
    pos = first
    while pos < n:
        avail = free[:, w - 1]
        order = np.lexsort((ids, avail))
        m = min(n - pos, sms)
        cand = order[:m]
        b = np.arange(pos, pos + m)
        st = avail[cand] + gaps[b]
        rows = np.sort(np.concatenate([free[cand, w:], st[:, None] + work[b]], axis=1), axis=1)
        new_avail = rows[:, w - 1]
        running_min = np.minimum.accumulate(new_avail)
        ok = np.r_[True, running_min[:-1] > avail[cand[1:]]]
        k = m if ok.all() else int(np.argmin(ok))
        start[b[:k]] = st[:k]
        sm[b[:k]] = cand[:k]
        free[cand[:k]] = rows[:k]
        pos += k
    return start, sm


def max_resident_blocks(start: np.ndarray, end: np.ndarray, sm: np.ndarray, sms: int) -> np.ndarray:
    """Per SM, the largest number of blocks with at least one live warp at the same time."""
    t = np.r_[start, end]
    delta = np.r_[np.ones(start.size, np.int64), -np.ones(end.size, np.int64)]
    s = np.r_[sm, sm]
    order = np.lexsort((delta, t, s))  # at equal times an end (-1) comes before a start
    s, delta = s[order], delta[order]
    # One cumsum across all SMs is fine: each SM's count returns to 0 at its last end.
    level = np.cumsum(delta)
    out = np.zeros(sms, np.int64)
    np.maximum.at(out, s, level)
    return out


def tail_metrics(warp_end: np.ndarray, sm: np.ndarray, sms: int) -> dict[str, float]:
    block_end = warp_end.max(axis=1)
    last = np.full(sms, -np.inf)
    np.maximum.at(last, sm, block_end)
    used = np.isfinite(last)
    makespan = float(block_end.max())
    tail_start = float(last[used].min())
    tail = makespan - tail_start
    busy = np.clip(last[used] - tail_start, 0, None).sum()
    return {
        "makespan_cycles": makespan,
        "tail_start_cycles": tail_start,
        "tail_cycles": tail,
        "tail_fraction": tail / makespan if makespan else 0.0,
        "tail_idle_sm_fraction": float(1.0 - busy / (sms * tail)) if tail > 0 else 0.0,
    }


def simulate(device: Device, k: WarpKernel, grid: int, policy: str, clock: ClockModel,
             rng: np.random.Generator) -> WarpRun:
    work = draw_warp_work(k, grid, rng)
    gaps = gamma(rng, k.gap_mean_cycles, k.gap_cv, grid)
    slots = blocks_per_sm(device, k.threads, k.regs)
    offs = warp_offsets(rng, grid, k.warps, clock)
    if policy == "exclusive":
        # The block holds its slots until its last warp (start offset + work) ends.
        sched = dispatch_fifo((offs + work).max(axis=1), gaps, device.sms, slots, k.first_wave_issue_cycles)
        start, sm = sched.start, sched.sm.astype(np.int64)
    elif policy == "shared":
        start, sm = schedule_shared(work, gaps, device.sms, device.max_warps_per_sm, k.first_wave_issue_cycles)
    else:
        raise ValueError(f"policy must be 'exclusive' or 'shared', got {policy!r}")
    ws = np.rint(start)[:, None] + offs
    we = ws + np.rint(work)
    offsets = clock.sm_offsets(rng, device.sms)
    rec = records_from_times(ws, we, sm, clock, offsets)
    resident = max_resident_blocks(ws.min(axis=1), we.max(axis=1), sm, device.sms)
    truth = {
        "policy": policy,
        "kernel": k.name,
        "blocks": int(grid),
        "warps_per_block": int(k.warps),
        "block_slots_per_sm": int(slots),
        "waves": int(-(-grid // (device.sms * slots))),
        "last_wave_blocks": int(grid - (-(-grid // (device.sms * slots)) - 1) * device.sms * slots),
        "max_resident_blocks_per_sm": int(resident.max()),
        "mean_warp_cycles": float(work.mean()),
        "mean_dispatch_gap_cycles": float(k.gap_mean_cycles),
        **tail_metrics(we, sm, device.sms),
    }
    return WarpRun(policy, start, ws, we, sm, rec, truth)
