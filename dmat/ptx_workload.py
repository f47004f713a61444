"""Fig. 1 / Fig. 10a-c on any current GPU: attention kernels from PTX, named for ``neutrino -k``.

    python dmat/ptx_workload.py fig1|fig10a|fig10b|fig10c [--shape B,H,N,D] [--check]

* ``fig1`` / ``fig10a``: the suite's Triton FlashAttention-2 itself (BLOCK_M 128 / 8 warps and
  BLOCK_M 64 / 4 warps), compiled ahead of time for sm_80 (``tools/triton_ptx.py``);
* ``fig10b``: ``flash_fwd_kernel``, a CUDA C flash-style stand-in for PyTorch SDPA's flash backend;
* ``fig10c``: ``fmha_fwd_kernel``, a CUDA C memory-efficient-style stand-in for SDPA's
  memory-efficient backend (``dmat/attention.cu``). PyTorch 2.11 ships no PTX, so SDPA's own kernels
  cannot be probed.

The default shape (2, 8, 1024, 64) is smaller than the paper's (4, 32, 4096, 64), so that each raw
trace stays around a hundred MB; the access pattern (Q first, K/V streamed in the loop, O last) is the
kernel's, not the shape's. q, k, v, o are named in the trace folder's ``tensor.trace``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

from neutrino_ae.report.script import run_main
from neutrino_ae.workloads.cudadrv import Driver
from neutrino_ae.workloads.ptx_attention import launch_triton, max_error, qkv
from neutrino_ae.workloads.ptx_kernels import Kernels

HERE = Path(__file__).resolve().parent
ATTENTION_CU = HERE / "attention.cu"
SOURCES = (ATTENTION_CU,)
DEFAULT_SHAPE = (2, 8, 1024, 64)
SEED, SCALE = 42, 0.5


class Workload(NamedTuple):
    kernel: str  # the PTX entry; the figure's -k keyword is a substring of it
    triton_config: str | None  # compiled Triton config, or None for CUDA C
    rows_per_block: int  # query rows per block (CUDA C kernels; 128 threads)
    family: str  # how results describe it


WORKLOADS: dict[str, Workload] = {
    "fig1": Workload("attn_fwd", "attn_fwd_m128", 0, "Triton FA-2 (sm_80 PTX), BLOCK_M 128, 8 warps"),
    "fig10a": Workload("attn_fwd", "attn_fwd_m64", 0, "Triton FA-2 (sm_80 PTX), BLOCK_M 64, 4 warps"),
    "fig10b": Workload("flash_fwd_kernel", None, 64, "CUDA C flash-style stand-in for SDPA's flash backend "
                                                     "(PyTorch 2.11 ships no PTX)"),
    "fig10c": Workload("fmha_fwd_kernel", None, 32, "CUDA C memory-efficient-style stand-in for SDPA's "
                                                    "memory-efficient backend (PyTorch 2.11 ships no PTX)"),
}


def parse_shape(text: str) -> tuple[int, int, int, int]:
    try:
        dims = tuple(int(x) for x in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape must be B,H,N,D integers, got {text!r}") from None
    if len(dims) != 4 or min(dims) <= 0 or dims[3] != 64:
        raise argparse.ArgumentTypeError(f"shape must be four positive integers B,H,N,64 (the kernels are built "
                                         f"for head dim 64), got {text!r}")
    return dims  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("figure", choices=tuple(WORKLOADS))
    ap.add_argument("--shape", type=parse_shape, default=DEFAULT_SHAPE,
                    help=f"B,H,N,D (default {','.join(map(str, DEFAULT_SHAPE))}; D must be 64)")
    ap.add_argument("--check", action="store_true", help="compare o with a float64 NumPy reference")
    args = ap.parse_args(argv)
    wl = WORKLOADS[args.figure]
    drv = Driver()
    ks = Kernels(drv)
    bufs = qkv(drv, args.shape, np.random.default_rng(SEED))
    if wl.triton_config:
        what = launch_triton(drv, ks, wl.triton_config, bufs, args.shape, SCALE)
    else:
        batch, heads, n_ctx, _ = args.shape
        grid = (-(-n_ctx // wl.rows_per_block), batch * heads)
        drv.launch(ks.cuda(ATTENTION_CU, wl.kernel), grid, 128, [*bufs, n_ctx, SCALE])
        what = f"{wl.kernel} <<<{grid}, 128>>> on {'x'.join(map(str, args.shape))} fp16 (CUDA C)"
    drv.synchronize()
    drv.write_tensor_trace()
    print(f"{args.figure}: {what}")
    if args.check:
        err = max_error(drv, bufs, args.shape, SCALE)
        print(f"{args.figure}: max |o - reference| = {err:.3g}")
        return 0 if err < 2e-2 else 1
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
