"""Sec. 4.5 optimisation 2: a persistent Triton kernel that zero-fills with one program per SM.

Each program walks the tiles ``pid, pid + P, pid + 2P, ...`` (P = number of programs), so the grid
has at most #SM blocks and block scheduling happens once per SM instead of once per tile. P is read
at run time (``tl.num_programs``), so the ahead-of-time PTX of ``zero_fill_persistent``
(``neutrino_ae/workloads/triton_kernels.py``; tiles of 128 elements, 8 warps, the paper seed's
shape and this script's default) fits any number of SMs.
"""

from __future__ import annotations

import argparse
import sys

# Run as a script (also under `neutrino ... python <this file>`): make the repo root importable.
from neutrino_ae.report.command.script import run_main
from neutrino_ae.workloads.gpu import cuda_torch


def zero_fill(x, block: int = 128, num_warps: int = 8, programs: int | None = None) -> int:
    """Zero ``x`` in place; returns the number of programs launched."""
    import torch

    from neutrino_ae.workloads.triton_kernels import zero_fill_persistent

    numel = x.numel()
    tiles = -(-numel // block)
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    grid = max(1, min(programs or sms, tiles))
    zero_fill_persistent[(grid,)](x, numel, BLOCK=block, num_warps=num_warps)
    return grid


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=100, help="number of zero-fill launches (default 100)")
    ap.add_argument("--block", type=int, default=128, help="elements per tile (power of two; default 128)")
    ap.add_argument("--num-warps", type=int, default=8)
    ap.add_argument("--check", action="store_true", help="pre-fill with ones and verify the result is all zeros")
    args = ap.parse_args(argv)
    if args.block <= 0 or args.block & (args.block - 1):
        ap.error("--block must be a power of two")
    torch = cuda_torch(triton=True, needed_by="persist.py")
    a = torch.empty((args.rows, args.cols), dtype=torch.float16, device="cuda")
    if args.check:
        a.fill_(1.0)
    grid = 0
    for _ in range(args.repeat):
        grid = zero_fill(a, args.block, args.num_warps)
    torch.cuda.synchronize()
    if args.check:
        ok = bool((a == 0).all().item())
        print(f"persist: {args.rows}x{args.cols} fp16 zeros with {grid} programs: {'ok' if ok else 'WRONG'}")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
