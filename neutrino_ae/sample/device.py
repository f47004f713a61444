"""The modelled GPU (A100-like defaults) and the occupancy calculation.

Resident blocks per SM = the smallest of four limits: block slots, warp slots (threads), registers
(allocated per warp in units of ``reg_alloc_unit``) and shared memory (allocated in units of
``smem_alloc_unit`` plus ``smem_reserved_per_block`` the driver keeps per block).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

WARP = 32


@dataclass(frozen=True)
class Device:
    name: str = "A100-SXM4-40GB (modelled)"
    sms: int = 108
    clock_ghz: float = 1.41
    max_threads_per_sm: int = 2048
    max_warps_per_sm: int = 64
    max_blocks_per_sm: int = 32
    regs_per_sm: int = 65536
    reg_alloc_unit: int = 256  # registers are granted per warp in chunks of this many
    smem_per_sm: int = 164 * 1024
    smem_alloc_unit: int = 128
    smem_reserved_per_block: int = 1024
    dram_bytes_per_cycle: float = 1103.0  # 1555 GB/s / 1.41 GHz
    tensor_flops_per_cycle_per_sm: float = 2048.0  # dense fp16 mma: 312 TFLOP/s / 108 / 1.41 GHz
    issue_warp_instr_per_cycle_per_sm: float = 4.0  # four schedulers, one warp instruction each

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def cycles_to_us(self, cycles: float) -> float:
        return float(cycles) / (self.clock_ghz * 1e3)

    def cycles_to_ms(self, cycles: float) -> float:
        return float(cycles) / (self.clock_ghz * 1e6)


def blocks_per_sm(device: Device, threads: int, regs_per_thread: int, smem_per_block: int = 0) -> int:
    """Resident blocks of one kernel on one SM (the CUDA occupancy calculator's rule, simplified)."""
    if threads <= 0 or threads > 1024:
        raise ValueError(f"threads per block must be 1..1024, got {threads}")
    warps = math.ceil(threads / WARP)
    by_warps = device.max_warps_per_sm // warps
    by_threads = device.max_threads_per_sm // (warps * WARP)
    regs_per_warp = math.ceil(max(regs_per_thread, 1) * WARP / device.reg_alloc_unit) * device.reg_alloc_unit
    by_regs = device.regs_per_sm // (regs_per_warp * warps)
    if smem_per_block > 0:
        smem = math.ceil(smem_per_block / device.smem_alloc_unit) * device.smem_alloc_unit
        by_smem = device.smem_per_sm // (smem + device.smem_reserved_per_block)
    else:
        by_smem = device.max_blocks_per_sm
    n = min(device.max_blocks_per_sm, by_warps, by_threads, by_regs, by_smem)
    if n < 1:
        raise ValueError(f"a block of {threads} threads, {regs_per_thread} regs, {smem_per_block} B smem "
                         "does not fit on one SM")
    return n
