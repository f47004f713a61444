"""Sec. 7 / Fig. 13 on any current GPU: the Triton spin kernel, launched from sm_80 PTX.

    python warp_sched/ptx_workload.py exclusive|shared|tail [--iters 20000]

The suite's own spin kernel (``neutrino_ae/workloads/triton_kernels.py``), compiled ahead of time by
``tools/triton_ptx.py`` (Triton >= 3.3 cannot run under Neutrino's hook driver) and launched with
``cuLaunchKernel``. The grid follows this GPU's SM count, read from the driver: one block per SM
(exclusive), four (shared), 2.5 waves with per-block work growing with the block index (tail).
"""

from __future__ import annotations

import argparse
import sys

from neutrino_ae.report.command.script import run_main
from neutrino_ae.workloads.cudadrv import Driver
from neutrino_ae.workloads.ptx_kernels import Kernels

MODES = ("exclusive", "shared", "tail")
BLOCK = 128  # elements per program: the spin kernel's BLOCK constexpr


def grid_of(mode: str, sms: int, iters: int) -> tuple[int, int]:
    """(programs, per-program growth of the iteration count)."""
    grid = {"exclusive": sms, "shared": 4 * sms, "tail": sms * 5 // 2}[mode]
    return grid, (max(1, iters // grid) if mode == "tail" else 0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=MODES)
    ap.add_argument("--iters", type=int, default=20000, help="FMA iterations per thread")
    args = ap.parse_args(argv)
    if args.iters <= 0:
        ap.error("--iters must be positive")
    drv = Driver()
    sms = drv.sm_count
    grid, grow = grid_of(args.mode, sms, args.iters)
    out = drv.empty((grid, BLOCK), "float32")
    Kernels(drv).triton("spin_kernel")((grid,), out_ptr=out, iters=args.iters, grow=grow)
    drv.synchronize()
    print(f"{args.mode}: grid {grid} on {sms} SMs, {args.iters} iterations (spin_kernel, Triton sm_80 PTX)")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
