"""Fig. 1 / Fig. 10a-c on any current GPU: attention kernels from PTX, named for ``neutrino -k``.

    python dmat/ptx_workload.py <kernel> [--shape B,H,N,D] [--check]

The kernel of each figure is ``dmat.FIGURES[<fig>].ptx`` (what the collector passes):

* Fig. 1 / 10a: ``attn_fwd_m128`` / ``attn_fwd_m64``, the suite's Triton FlashAttention-2 itself
  (BLOCK_M 128 / 8 warps and BLOCK_M 64 / 4 warps), compiled ahead of time for sm_80
  (``tools/triton_ptx.py``);
* Fig. 10b: ``flash_fwd_kernel``, a CUDA C flash-style stand-in for PyTorch SDPA's flash backend;
* Fig. 10c: ``fmha_fwd_kernel``, a CUDA C memory-efficient-style stand-in for SDPA's
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

import numpy as np

from neutrino_ae.report.command.script import run_main
from neutrino_ae.workloads.cudadrv import Driver
from neutrino_ae.workloads.ptx_attention import launch_triton, max_error, qkv
from neutrino_ae.workloads.ptx_kernels import Kernels

HERE = Path(__file__).resolve().parent
ATTENTION_CU = HERE / "attention.cu"
SOURCES = (ATTENTION_CU,)
DEFAULT_SHAPE = (2, 8, 1024, 64)
SEED, SCALE = 42, 0.5


#: dmat/attention.cu's kernels: query rows per block (128 threads); the figure's -k keyword is in the name.
CUDA_ROWS_PER_BLOCK = {"flash_fwd_kernel": 64, "fmha_fwd_kernel": 32}
#: the compiled Triton attention configs (neutrino_ae/workloads/ptx/triton/); their kernel is attn_fwd
TRITON_CONFIGS = ("attn_fwd_m128", "attn_fwd_m64", "attn_fwd_m128w4")


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
    ap.add_argument("kernel", choices=(*TRITON_CONFIGS, *CUDA_ROWS_PER_BLOCK),
                    help="a Triton config or a CUDA C kernel (each figure's is dmat.FIGURES[<fig>].ptx)")
    ap.add_argument("--shape", type=parse_shape, default=DEFAULT_SHAPE,
                    help=f"B,H,N,D (default {','.join(map(str, DEFAULT_SHAPE))}; D must be 64)")
    ap.add_argument("--check", action="store_true", help="compare o with a float64 NumPy reference")
    args = ap.parse_args(argv)
    kernel = args.kernel
    drv = Driver()
    ks = Kernels(drv)
    bufs = qkv(drv, args.shape, np.random.default_rng(SEED))
    if kernel in CUDA_ROWS_PER_BLOCK:
        batch, heads, n_ctx, _ = args.shape
        grid = (-(-n_ctx // CUDA_ROWS_PER_BLOCK[kernel]), batch * heads)
        drv.launch(ks.cuda(ATTENTION_CU, kernel), grid, 128, [*bufs, n_ctx, SCALE])
        what = f"{kernel} <<<{grid}, 128>>> on {'x'.join(map(str, args.shape))} fp16 (CUDA C)"
    else:
        what = launch_triton(drv, ks, kernel, bufs, args.shape, SCALE)
    drv.synchronize()
    drv.write_tensor_trace()
    print(what)
    if args.check:
        err = max_error(drv, bufs, args.shape, SCALE)
        print(f"{kernel}: max |o - reference| = {err:.3g}")
        return 0 if err < 2e-2 else 1
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
