"""Probe costs: extra registers, probe memory and slowdown of probed kernels (Table 2, Fig. 11/12).

Original kernel time (cycles)::

    T = launch_overhead + max(flops / (sms * tensor_flops_per_cycle_per_sm * mma_efficiency),
                              dram_bytes / (dram_bytes_per_cycle * dram_efficiency),
                              issue-bound time of alu_per_thread instructions)

A probe adds, per thread, ``per_entry`` + ``per_exit`` instructions (per warp for warp-level probes),
``per_mem`` per global load/store and ``per_mma`` per mma instruction, and stores its records. The
probed time is::

    T_probed = T * occupancy_factor + (1 - overlap) * extra_issue_cycles + saved_bytes / dram_bytes_per_cycle
    occupancy_factor = 1 + occupancy_sensitivity * (slots_orig / slots_probed - 1)

where ``slots`` is the occupancy with the original / probed register count. Extra registers are
``live_regs`` of the probe minus a per-kernel slack U{0..slack_max} the allocator finds free,
capped so the kernel stays within 255 registers. Measured times carry lognormal noise
(``noise_sigma``) independently on original and probed runs. A ``count`` datamodel first runs a
counting pass (``per_mem_count`` instructions per access) that is reported as prologue time.

Probe memory per launch (Fig. 11): ``grid * units * bytes``, units = ceil(block/32) for warp-level
and block for thread-level probes; for ``dmat`` bytes = 16 * (global accesses per thread).

Nsight Compute replay model (Fig. 12): ``ncu = session_ms + passes * (T + restore + per_pass_ms)``,
``restore = 2 * footprint_bytes / d2d_gbps`` (save and restore of the memory the kernel writes and
reads between replay passes), ``passes`` = passes of the ncu sections closest to each probe.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from neutrino_ae.sample.device import Device, blocks_per_sm
from neutrino_ae.sample.dists import lognormal_factor


@dataclass(frozen=True)
class ProbeCost:
    name: str
    warp_level: bool
    bytes_per_unit: int
    per_entry: float
    per_exit: float
    per_mem: float
    per_mma: float
    live_regs: int
    overlap: float
    ncu_passes: int
    per_mem_count: float = 0.0  # counting pass (count datamodels)


PROBE_COSTS: dict[str, ProbeCost] = {
    "block_sched": ProbeCost("block_sched", True, 16, 4, 10, 0, 0, 4, 0.0, 1),
    "gmem_bytes": ProbeCost("gmem_bytes", False, 8, 2, 4, 3, 0, 4, 0.5, 4),
    "tensorop_count": ProbeCost("tensorop_count", False, 8, 2, 4, 0, 1, 2, 0.6, 2),
    "dmat": ProbeCost("dmat", False, 16, 4, 2, 9, 0, 8, 0.2, 12, per_mem_count=2),
}
PROBE_ORDER = ("block_sched", "gmem_bytes", "tensorop_count", "dmat")


@dataclass(frozen=True)
class CostModel:
    launch_overhead_cycles: float = 3000.0
    dram_efficiency: float = 0.85
    occupancy_sensitivity: float = 0.3
    slack_max: int = 2
    noise_sigma: float = 0.01
    ncu_session_ms: float = 1.8
    ncu_per_pass_ms: float = 0.12
    d2d_gbps: float = 1300.0
    probes: dict[str, ProbeCost] = field(default_factory=lambda: dict(PROBE_COSTS))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class KernelSpec:
    suite: str
    test: str
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    regs: int
    smem: int
    flops: float
    dram_bytes: float
    global_bytes: float  # bytes through ld/st.global (L2 hits included): sets accesses per thread
    vec_bytes: int  # bytes per access
    alu_per_thread: float
    mma_efficiency: float = 0.7
    num_params: int = 4
    footprint_bytes: float = 0.0

    @property
    def grid_size(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def total_threads(self) -> int:
        return self.grid_size * self.threads

    @property
    def mem_per_thread(self) -> int:
        return max(1, math.ceil(self.global_bytes / self.vec_bytes / self.total_threads))

    @property
    def mma_per_thread(self) -> float:
        # mma.m16n8k16 = 4096 flops per warp instruction, executed by every lane of the warp.
        warps = self.grid_size * math.ceil(self.threads / 32)
        return self.flops / 4096.0 / warps

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def original_cycles(k: KernelSpec, device: Device, m: CostModel) -> float:
    compute = k.flops / (device.sms * device.tensor_flops_per_cycle_per_sm * k.mma_efficiency)
    memory = k.dram_bytes / (device.dram_bytes_per_cycle * m.dram_efficiency)
    issue = k.alu_per_thread * k.total_threads / 32 / (device.issue_warp_instr_per_cycle_per_sm * device.sms)
    return m.launch_overhead_cycles + max(compute, memory, issue)


def extra_registers(k: KernelSpec, p: ProbeCost, m: CostModel, rng: np.random.Generator) -> int:
    slack = int(rng.integers(0, m.slack_max + 1))
    return int(min(max(p.live_regs - slack, 1), 255 - k.regs))


def probe_units(k: KernelSpec, p: ProbeCost) -> int:
    return k.grid_size * (math.ceil(k.threads / 32) if p.warp_level else k.threads)


def probe_record_bytes(k: KernelSpec, p: ProbeCost) -> int:
    """Bytes saved per unit (for dmat: one 16-byte record per global access of the thread)."""
    return p.bytes_per_unit * (k.mem_per_thread if p.name == "dmat" else 1)


def probe_memory(k: KernelSpec, p: ProbeCost) -> int:
    return probe_units(k, p) * probe_record_bytes(k, p)


@dataclass(frozen=True)
class ProbedRun:
    original_ms: float
    kernel_ms: float
    prologue_ms: float
    epilogue_ms: float
    extra_regs: int
    probe_bytes: int  # per unit
    probe_mem: int
    model_slowdown: float  # noise-free


def probed_cycles(k: KernelSpec, p: ProbeCost, extra_regs: int, device: Device, m: CostModel) -> float:
    t = original_cycles(k, device, m)
    slots_o = blocks_per_sm(device, k.threads, k.regs, k.smem)
    slots_p = blocks_per_sm(device, k.threads, k.regs + extra_regs, k.smem)
    occ = 1.0 + m.occupancy_sensitivity * (slots_o / slots_p - 1.0)
    per_thread = p.per_mem * k.mem_per_thread + p.per_mma * k.mma_per_thread
    if p.warp_level:
        per_thread += (p.per_entry + p.per_exit) / 32.0
    else:
        per_thread += p.per_entry + p.per_exit
    issue = per_thread * k.total_threads / 32 / (device.issue_warp_instr_per_cycle_per_sm * device.sms)
    store = probe_memory(k, p) / device.dram_bytes_per_cycle
    return t * occ + (1.0 - p.overlap) * issue + store


def simulate_probed(k: KernelSpec, p: ProbeCost, extra_regs: int, device: Device, m: CostModel,
                    host_prologue_ms: float, host_epilogue_ms: float, rng: np.random.Generator) -> ProbedRun:
    """One probed launch with measurement noise (host costs are given by the caller)."""
    t0 = original_cycles(k, device, m)
    tp = probed_cycles(k, p, extra_regs, device, m)
    orig = device.cycles_to_ms(t0) * lognormal_factor(rng, m.noise_sigma)
    kern = device.cycles_to_ms(tp) * lognormal_factor(rng, m.noise_sigma)
    prologue = host_prologue_ms
    if p.per_mem_count:
        count_issue = p.per_mem_count * k.mem_per_thread * k.total_threads / 32 / (
            device.issue_warp_instr_per_cycle_per_sm * device.sms)
        prologue += device.cycles_to_ms(t0 + count_issue)
    return ProbedRun(float(orig), float(kern), float(prologue), float(host_epilogue_ms), extra_regs,
                     probe_record_bytes(k, p), probe_memory(k, p), tp / t0)


def ncu_ms(k: KernelSpec, p: ProbeCost, device: Device, m: CostModel, rng: np.random.Generator) -> float:
    t = device.cycles_to_ms(original_cycles(k, device, m))
    restore = 2.0 * k.footprint_bytes / (m.d2d_gbps * 1e6)
    return float((m.ncu_session_ms + p.ncu_passes * (t + restore + m.ncu_per_pass_ms))
                 * lognormal_factor(rng, m.noise_sigma))

