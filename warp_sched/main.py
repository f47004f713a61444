"""Sec. 7 / Fig. 13 collection: per-warp start/end/SM traces of three launches of one Triton kernel.

Every warp of the ``block_sched`` probe (warp:16) saves (start clock, elapsed cycles, SM id), so one
probe gives the per-warp timelines. Our workload is a compute-bound spin kernel (a fixed FMA chain
per thread), launched three ways:

* ``exclusive``: one block per SM (grid = #SMs): each block's warps have the SM's schedulers alone;
* ``shared``: four blocks per SM (grid = 4 x #SMs): warps of different blocks share the schedulers;
* ``tail``: 2.5 waves of blocks with per-block work that grows with the block index, so the last
  wave leaves SMs idle (the tailing effect of Fig. 13c/d).

This is our reconstruction of the experiment (the artifact's own workload is not published);
expect the same qualitative picture, not the paper's cycle counts. Output layout:
``<out>/exclusive_sched/``, ``<out>/shared_sched/`` (trace dirs) and ``<out>/tail/<tracedir>/``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from neutrino_ae.report.command.script import run_main
from neutrino_ae.workloads.gpu import cuda_torch
from neutrino_ae.workloads.neutrino import script_collector

MODES = ("exclusive", "shared", "tail")


def run_mode(mode: str, iters: int) -> int:
    torch = cuda_torch(triton=True, needed_by="warp_sched/main.py")
    from neutrino_ae.workloads.triton_kernels import spin_kernel

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    grid = {"exclusive": sms, "shared": 4 * sms, "tail": sms * 5 // 2}[mode]
    grow = max(1, iters // grid) if mode == "tail" else 0
    out = torch.empty((grid, 128), device="cuda", dtype=torch.float32)
    spin_kernel[(grid,)](out, iters, grow, BLOCK=128, num_warps=4)
    torch.cuda.synchronize()
    print(f"{mode}: grid {grid} on {sms} SMs, {iters} iterations")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", choices=MODES, help="run one launch mode (no profiling)")
    ap.add_argument("--iters", type=int, default=20000, help="FMA iterations per thread")
    ap.add_argument("--out", type=Path, default=Path("traces/warp_sched"))
    ap.add_argument("--neutrino", default="neutrino")
    ap.add_argument("--repeats", type=int, default=1, help="accepted for a uniform interface; unused")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--family", choices=("paper", "ptx"), default="paper",
                    help="paper: the kernel run by Triton; ptx: the same kernel from sm_80 PTX (ptx_workload.py)")
    args = ap.parse_args(argv)
    if args.run:
        return run_mode(args.run, args.iters)

    from neutrino_ae.workloads.neutrino import CollectError, run_neutrino

    me = str(Path(__file__).resolve())
    ptx = str(Path(__file__).resolve().with_name("ptx_workload.py"))
    failed = 0
    for mode in MODES:
        workload = ([sys.executable, ptx, mode] if args.family == "ptx" else [sys.executable, me, "--run", mode])
        cmd = ["-p", "block_sched", "-k", "spin", *workload, "--iters", str(args.iters)]
        if mode == "tail":
            dest, name = args.out / "tail", None
        else:
            dest, name = args.out, f"{mode}_sched"  # replaced only by a collection that passed its check
        try:
            res = run_neutrino(cmd, None, dest, args.neutrino, timeout=args.timeout, dest_name=name, log_name=mode,
                               replace=name is not None)
        except CollectError as exc:
            print(f"failed {mode}: {exc}")
            failed += 1
            continue
        print(f"{mode}: {res.trace_dir}")
    return 1 if failed else 0


#: The SECTION.collect entry: this script run as a subprocess into ``<trace_root>/warp_sched/``.
collect = script_collector("warp_sched", __file__)


if __name__ == "__main__":
    sys.exit(run_main(main))
