"""Sec. 4.5 baseline: zero a 4096x4096 fp16 tensor with PyTorch (one fill kernel of many small blocks).

Run it under ``neutrino -p block_sched`` to measure block scheduling cost, or under Nsight Systems
to time it. PyTorch is imported inside ``main`` so ``--help`` works on machines without it.
"""

from __future__ import annotations

import argparse
import sys

# Run as a script (also under `neutrino ... python <this file>`): make the repo root importable.
from neutrino_ae.report.command.script import run_main
from neutrino_ae.workloads.gpu import cuda_torch


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=1, help="number of torch.zeros calls (default 1)")
    ap.add_argument("--check", action="store_true", help="verify the result is all zeros")
    args = ap.parse_args(argv)
    torch = cuda_torch(needed_by="raw.py")
    for _ in range(args.repeat):
        x = torch.zeros((args.rows, args.cols), dtype=torch.float16, device="cuda")
    torch.cuda.synchronize()
    if args.check:
        ok = bool((x == 0).all().item())
        print(f"raw: {args.rows}x{args.cols} fp16 zeros: {'ok' if ok else 'WRONG'}")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
