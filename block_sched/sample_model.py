"""Sec. 4.5 workloads: ``torch.zeros((4096, 4096), fp16)`` and its two optimisations.

* ``fill``: ATen's vectorized_elementwise_kernel (FillFunctor<Half>): 128 threads x 4 halves per
  block = 1024 B stored per block; at paper scale 32768 blocks (4096*4096 halves).
* ``memset``: the driver's cuMemsetD16 kernel: ``memset_threads`` threads x ``memset_bytes_per_thread``
  (16 B stores) per block, so far fewer blocks than the fill kernel (and fewer dispatch gaps); its
  blocks are sized so that, at every scale, more of them than fit at once wait for a slot: the fix
  keeps a small scheduling cost, it does not remove it.
* ``persistent``: the Triton persistent kernel: ``persistent_programs_per_sm`` 256-thread programs per
  SM looping over 128-element tiles; each holds a ``persistent_smem_bytes`` shared-memory ring (its
  software pipeline), so one is resident per SM at a time and each SM pays the dispatch gap between
  its programs: ``programs_per_sm - 1`` gaps, the small cost the persistent kernel keeps.

Block running time (memory-bound): ``setup_cycles + bytes_per_block * concurrent / dram_bytes_per_cycle``
where ``concurrent = min(grid, sms * blocks_per_sm)`` blocks share DRAM bandwidth evenly. Per-block
durations are gamma(mean, ``duration_cv``); dispatch gaps gamma(``gap_mean_cycles``, ``gap_cv``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from neutrino_ae.sample.device import Device, blocks_per_sm
from neutrino_ae.sample.dispatch import ClockModel, Schedule, block_warp_records, dispatch_fifo
from neutrino_ae.sample.dists import gamma

FILL_KERNEL = ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIN3c104HalfEEENS_6detail5"
               "ArrayIPcLi1EEEEEviT0_T1_")
MEMSET_KERNEL = "cuMemsetD16_kernel_u16x8"
PERSISTENT_KERNEL = "zero_init_kernel_persistent"


@dataclass(frozen=True)
class GapModel:
    mean_cycles: float = 300.0
    cv: float = 0.2

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return gamma(rng, self.mean_cycles, self.cv, n)


@dataclass(frozen=True)
class MemoryBoundKernel:
    name: str
    grid: int
    threads: int
    regs: int
    bytes_per_block: int
    setup_cycles: float
    duration_cv: float

    def slots(self, device: Device) -> int:
        return blocks_per_sm(device, self.threads, self.regs)

    def mean_duration(self, device: Device) -> float:
        concurrent = min(self.grid, device.sms * self.slots(device))
        return self.setup_cycles + self.bytes_per_block * concurrent / device.dram_bytes_per_cycle


@dataclass(frozen=True)
class BlockSchedParams:
    numel: int  # fp16 elements zeroed (4096*4096 at paper scale)
    fill_threads: int = 128
    fill_elems_per_thread: int = 4
    fill_regs: int = 16
    fill_setup_cycles: float = 380.0
    duration_cv: float = 0.02
    gap: GapModel = field(default_factory=GapModel)
    first_wave_issue_cycles: float = 8.0
    memset_threads: int = 512
    memset_bytes_per_thread: int = 16
    memset_regs: int = 16
    memset_setup_cycles: float = 600.0
    persistent_threads: int = 256
    persistent_programs_per_sm: int = 2
    persistent_smem_bytes: int = 96 * 1024
    persistent_tile_elems: int = 128
    persistent_regs: int = 24
    persistent_iter_issue_cycles: float = 24.0
    persistent_setup_cycles: float = 400.0
    clock: ClockModel = field(default_factory=ClockModel)

    def fill_kernel(self) -> MemoryBoundKernel:
        per_block = self.fill_threads * self.fill_elems_per_thread
        return MemoryBoundKernel(FILL_KERNEL, self.numel // per_block, self.fill_threads, self.fill_regs,
                                 per_block * 2, self.fill_setup_cycles, self.duration_cv)

    def memset_kernel(self) -> MemoryBoundKernel:
        per_block = self.memset_threads * self.memset_bytes_per_thread
        return MemoryBoundKernel(MEMSET_KERNEL, (self.numel * 2) // per_block, self.memset_threads,
                                 self.memset_regs, per_block, self.memset_setup_cycles, self.duration_cv)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class KernelRun:
    kernel: MemoryBoundKernel
    schedule: Schedule
    records: np.ndarray  # WARP_SCHED (blocks, warps, 1)
    truth: dict[str, Any]


def _truth(device: Device, k: MemoryBoundKernel, s: Schedule, gap_mean: float, slots: int) -> dict[str, Any]:
    per_sm_gap = np.bincount(s.sm, weights=np.where(s.has_predecessor, s.gap, 0.0), minlength=device.sms)
    per_sm_run = np.bincount(s.sm, weights=s.end - s.start, minlength=device.sms)
    used = np.bincount(s.sm, minlength=device.sms) > 0
    reused = s.has_predecessor
    return {
        "kernel": k.name,
        "blocks": int(k.grid),
        "threads_per_block": int(k.threads),
        "blocks_per_sm": int(slots),
        "sms_used": int(used.sum()),
        "waves": int(-(-k.grid // (device.sms * slots))),
        "mean_dispatch_gap_cycles": float(gap_mean),
        "realised_mean_dispatch_gap_cycles": float(s.gap[reused].mean()) if reused.any() else 0.0,
        "dispatch_gaps": int(reused.sum()),
        "mean_block_running_cycles": float((s.end - s.start).mean()),
        "model_mean_block_cycles": float(k.mean_duration(device)),
        "scheduling_cycles_per_sm": float(per_sm_gap[used].mean()),
        "running_cycles_per_sm": float(per_sm_run[used].mean()),
        "makespan_cycles": float(s.makespan),
        "kernel_time_us": device.cycles_to_us(s.makespan),
    }


def simulate_memory_bound(device: Device, k: MemoryBoundKernel, gap: GapModel, clock: ClockModel,
                          first_wave_issue_cycles: float, rng: np.random.Generator) -> KernelRun:
    """Dispatch every block of ``k`` and build its block_sched records (all warps)."""
    slots = k.slots(device)
    dur = gamma(rng, k.mean_duration(device), k.duration_cv, k.grid)
    gaps = gap.draw(rng, k.grid)
    sched = dispatch_fifo(dur, gaps, device.sms, slots, first_wave_issue_cycles)
    offsets = clock.sm_offsets(rng, device.sms)
    warps = -(-k.threads // 32)
    rec = block_warp_records(sched, warps, clock, offsets, rng)
    return KernelRun(k, sched, rec, _truth(device, k, sched, gap.mean_cycles, slots))


def simulate_persistent(device: Device, p: BlockSchedParams, rng: np.random.Generator) -> KernelRun:
    """``persistent_programs_per_sm`` programs per SM, one resident at a time (its shared memory);
    program ``i`` handles tiles ``i, i+P, ...`` (P programs); between two programs an SM pays one
    dispatch gap."""
    tiles = -(-p.numel // p.persistent_tile_elems)
    grid = min(device.sms * p.persistent_programs_per_sm, tiles)
    slots = blocks_per_sm(device, p.persistent_threads, p.persistent_regs, p.persistent_smem_bytes)
    tiles_per_block = np.full(grid, tiles // grid) + (np.arange(grid) < tiles % grid)
    bytes_per_block = tiles_per_block * p.persistent_tile_elems * 2
    # The resident programs stream at once and share DRAM bandwidth, unless issue-bound.
    concurrent = min(grid, device.sms * slots)
    mem_cycles = bytes_per_block * concurrent / device.dram_bytes_per_cycle
    issue_cycles = tiles_per_block * p.persistent_iter_issue_cycles
    mean = p.persistent_setup_cycles + np.maximum(mem_cycles, issue_cycles)
    dur = mean * gamma(rng, 1.0, p.duration_cv, grid)
    gaps = p.gap.draw(rng, grid)
    sched = dispatch_fifo(dur, gaps, device.sms, slots, p.first_wave_issue_cycles)
    offsets = p.clock.sm_offsets(rng, device.sms)
    rec = block_warp_records(sched, -(-p.persistent_threads // 32), p.clock, offsets, rng)
    k = MemoryBoundKernel(PERSISTENT_KERNEL, grid, p.persistent_threads, p.persistent_regs,
                          int(bytes_per_block.mean()), p.persistent_setup_cycles, p.duration_cv)
    truth = _truth(device, k, sched, p.gap.mean_cycles, slots)
    truth.update(tiles=int(tiles), programs_per_sm=int(p.persistent_programs_per_sm),
                 smem_per_block=int(p.persistent_smem_bytes))
    return KernelRun(k, sched, rec, truth)
