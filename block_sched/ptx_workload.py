"""Sec. 4.5 on any current GPU: the zero-fill, its two fixes, and their speed-ups, from PTX.

    python block_sched/ptx_workload.py raw          # fill_fp16_kernel: 32,768 blocks x 128 threads
    python block_sched/ptx_workload.py memset       # the driver's cuMemsetD16 (no kernel of ours)
    python block_sched/ptx_workload.py persistent   # the Triton persistent fill, one program per SM
    python block_sched/ptx_workload.py timing --out timing/events.json

``raw`` stands in for ``torch.zeros((4096, 4096), dtype=torch.float16)``: CUDA C with the launch
shape of PyTorch's vectorised fill (4 halves per thread, 128 threads per block), because PyTorch 2.11
ships no PTX for Neutrino to probe. ``persistent`` is the suite's Triton kernel, compiled ahead of
time for sm_80 (BLOCK 128, 8 warps, the seed's shape). ``timing`` runs the three without a probe and
times each with CUDA events (a warm-up, then ``--repeat`` calls), the speed-ups the paper reports.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from neutrino_ae.report.command.script import run_main
from neutrino_ae.workloads.cudadrv import Driver
from neutrino_ae.workloads.ptx_kernels import Kernels

HERE = Path(__file__).resolve().parent
FILL_CU = HERE / "fill.cu"
SOURCES = (FILL_CU,)
MODES = ("raw", "memset", "persistent")
ELEMENTS_PER_THREAD, THREADS = 4, 128
PERSISTENT_BLOCK = 128  # elements per tile: the seed's BLOCK_SIZE


class Fills:
    """The three ways to zero one fp16 tensor of ``numel`` elements."""

    def __init__(self, drv: Driver, numel: int) -> None:
        self.drv, self.numel = drv, numel
        self.out = drv.empty((numel,), "float16", name="x")
        self.ks = Kernels(drv)
        tiles = -(-numel // PERSISTENT_BLOCK)
        self.programs = max(1, min(drv.sm_count, tiles))

    def raw(self) -> None:
        grid = -(-self.numel // (ELEMENTS_PER_THREAD * THREADS))
        self.drv.launch(self.ks.cuda(FILL_CU, "fill_fp16_kernel"), (grid,), THREADS, [self.out, 0, self.numel])

    def memset(self) -> None:
        self.drv.memset_d16(self.out, 0, self.numel)

    def persistent(self) -> None:
        self.ks.triton("zero_fill_persistent")((self.programs,), out_ptr=self.out, numel=self.numel)

    def fill_ones(self) -> None:
        self.drv.memset_d16(self.out, 0x3C00, self.numel)  # fp16 1.0

    def zeros(self) -> bool:
        import numpy as np

        return bool((self.drv.download(self.out, (self.numel,), np.uint16) == 0).all())


def timing(fills: Fills, repeat: int) -> tuple[dict[str, float], dict[str, object]]:
    """(mean ms per call of each fill, what else the file records)."""
    ms = {}
    for mode in MODES:
        work = getattr(fills, mode)
        work()  # warm-up: module JIT and first-touch out of the timed calls
        fills.drv.synchronize()
        ms[mode] = fills.drv.time_ms(work, repeat)
    return ms, {"device": fills.drv.name(), "sm_count": fills.drv.sm_count, "numel": fills.numel,
                "dtype": "float16", "repeat": repeat, "persistent_programs": fills.programs,
                "source": "CUDA events around --repeat calls after one warm-up, no probe "
                          "(block_sched/ptx_workload.py timing)"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=(*MODES, "timing"))
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=20, help="timed calls per fill (timing only)")
    ap.add_argument("--out", type=Path, help="timing: the JSON file to write")
    ap.add_argument("--check", action="store_true", help="fill with ones first, verify zeros after")
    args = ap.parse_args(argv)
    if args.rows <= 0 or args.cols <= 0 or args.repeat <= 0:
        ap.error("--rows, --cols and --repeat must be positive")
    if args.mode == "timing" and args.out is None:
        ap.error("timing needs --out")
    drv = Driver()
    fills = Fills(drv, args.rows * args.cols)
    if args.mode == "timing":
        from neutrino_ae.formats.fill_timing import write_fill_timing

        ms, fields = timing(fills, args.repeat)
        write_fill_timing(args.out, ms, **fields)
        print("timing: " + ", ".join(f"{m} {v:.4f} ms" for m, v in ms.items()) + f" on {fields['device']}")
        return 0
    if args.check:
        fills.fill_ones()
    getattr(fills, args.mode)()
    drv.synchronize()
    drv.write_tensor_trace()
    ok = fills.zeros() if args.check else True
    print(f"{args.mode}: {args.rows}x{args.cols} fp16 zeros" + (f": {'ok' if ok else 'WRONG'}" if args.check else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(run_main(main))
