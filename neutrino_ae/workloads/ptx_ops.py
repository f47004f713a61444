"""Single-operator PTX workloads for Table 2 and Fig. 12, through the CUDA driver API.

    python -m neutrino_ae.workloads.ptx_ops <op>

The ``ptx`` family's counterpart of :mod:`neutrino_ae.workloads.ops`, at the same shapes:

* ``norm softmax sum pool embedding gather``: CUDA C stand-ins for the PyTorch operators
  (``neutrino_ae/workloads/cuda/ops.cu``): PyTorch 2.11 ships SASS only, which Neutrino cannot probe;
* ``attn gmm``: the suite's own Triton kernels (FA-2 forward, grouped GEMM) from sm_80 PTX compiled
  ahead of time (``tools/triton_ptx.py``);
* ``gemm conv``: CUDA C tensor-core kernels (``cuda/layers.cu``, wmma -> ``mma.sync``), Fig. 12's GEMM
  and convolution; stand-ins for the artifact's CUTLASS benchmarks.

Inputs are drawn once with a fixed seed (values do not change what the probes measure, only that no
NaN slows a kernel down); nothing is printed but one line naming the kernel and its launch.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from neutrino_ae.report.command.script import run_main
from neutrino_ae.workloads.cudadrv import Driver
from neutrino_ae.workloads.ptx_kernels import CUDA_DIR, Kernels

OPS_CU = CUDA_DIR / "ops.cu"
LAYERS_CU = CUDA_DIR / "layers.cu"
SOURCES = (OPS_CU, LAYERS_CU)
TORCH_STANDINS = ("norm", "softmax", "sum", "pool", "embedding", "gather")
TRITON_OPS = ("attn", "gmm")
TENSOR_CORE_OPS = ("gemm", "conv")
OPS = (*TORCH_STANDINS, *TRITON_OPS, *TENSOR_CORE_OPS)
#: op -> the kernel it launches (the ``-k`` keyword that selects it is a substring of this name)
KERNELS = {"norm": "layer_norm_kernel", "softmax": "softmax_kernel", "sum": "reduce_sum_kernel",
           "pool": "max_pool2d_kernel", "embedding": "embedding_kernel", "gather": "gather_kernel",
           "attn": "attn_fwd", "gmm": "gmm_kernel", "gemm": "gemm_fp16_kernel", "conv": "conv2d_fp16_kernel"}
ROW_BLOCK = 256


class Op:
    def __init__(self, drv: Driver) -> None:
        self.drv = drv
        self.ks = Kernels(drv)
        self.rng = np.random.default_rng(0)

    def randn(self, shape: tuple[int, ...], dtype: str = "float32", name: str = ""):
        return self.drv.upload(self.rng.standard_normal(shape, dtype=np.float32).astype(dtype), name)

    def norm(self) -> str:
        rows, cols = 8192, 1024
        x, y = self.randn((rows, cols)), self.drv.empty((rows, cols), "float32")
        self.drv.launch(self.ks.cuda(OPS_CU, "layer_norm_kernel"), (rows,), ROW_BLOCK, [x, y, rows, cols, 1e-5])
        return f"layer_norm_kernel <<<{rows}, {ROW_BLOCK}>>> ({rows}x{cols} fp32)"

    def _rowwise(self, kernel: str, out_cols: int | None) -> str:
        rows, cols = 8192, 4096
        x = self.randn((rows, cols))
        y = self.drv.empty((rows, out_cols or cols), "float32")
        self.drv.launch(self.ks.cuda(OPS_CU, kernel), (rows,), ROW_BLOCK, [x, y, rows, cols])
        return f"{kernel} <<<{rows}, {ROW_BLOCK}>>> ({rows}x{cols} fp32)"

    def softmax(self) -> str:
        return self._rowwise("softmax_kernel", None)

    def sum(self) -> str:
        return self._rowwise("reduce_sum_kernel", 1)

    def pool(self) -> str:
        n, c, h, w = 32, 128, 112, 112
        oh, ow = (h + 2 - 3) // 2 + 1, (w + 2 - 3) // 2 + 1
        x, y = self.randn((n, c, h, w)), self.drv.empty((n, c, oh, ow), "float32")
        grid = -(-n * c * oh * ow // ROW_BLOCK)
        self.drv.launch(self.ks.cuda(OPS_CU, "max_pool2d_kernel"), (grid,), ROW_BLOCK, [x, y, n, c, h, w, oh, ow])
        return f"max_pool2d_kernel <<<{grid}, {ROW_BLOCK}>>> ({n}x{c}x{h}x{w} fp32, 3x3/2)"

    def embedding(self) -> str:
        vocab, dim, n_idx = 50_000, 1024, 64 * 512
        w = self.randn((vocab, dim))
        idx = self.drv.upload(self.rng.integers(0, vocab, n_idx, dtype=np.int64))
        y = self.drv.empty((n_idx, dim), "float32")
        self.drv.launch(self.ks.cuda(OPS_CU, "embedding_kernel"), (n_idx,), ROW_BLOCK, [idx, w, y, n_idx, dim])
        return f"embedding_kernel <<<{n_idx}, {ROW_BLOCK}>>> ({vocab}x{dim} fp32 table)"

    def gather(self) -> str:
        rows, cols, k = 8192, 4096, 1024
        x = self.randn((rows, cols))
        idx = self.drv.upload(self.rng.integers(0, cols, (rows, k), dtype=np.int64))
        y = self.drv.empty((rows, k), "float32")
        grid = -(-rows * k // ROW_BLOCK)
        self.drv.launch(self.ks.cuda(OPS_CU, "gather_kernel"), (grid,), ROW_BLOCK, [x, idx, y, rows, cols, k])
        return f"gather_kernel <<<{grid}, {ROW_BLOCK}>>> ({rows}x{cols} fp32, {k} per row)"

    def attn(self) -> str:
        from neutrino_ae.workloads.ptx_attention import triton_attention

        return triton_attention(self.drv, self.ks, "attn_fwd_m128w4", (4, 32, 4096, 64), 0.5, self.rng)

    def gmm(self) -> str:
        groups, m, n, k = 4, 512, 512, 512
        a, b = self.randn((groups, m, k), "float16"), self.randn((groups, k, n), "float16")
        c = self.drv.empty((groups, m, n), "float16")
        grid = ((m // 64) * (n // 64), groups)
        self.ks.triton("gmm_kernel")(grid, a=a, b=b, c=c, M=m, N=n, K=k)
        return f"gmm_kernel <<<{grid}, 128>>> ({groups} x {m}x{n}x{k} fp16, Triton sm_80 PTX)"

    def gemm(self) -> str:
        m = n = k = 4096
        a, b = self.randn((m, k), "float16"), self.randn((k, n), "float16")
        c = self.drv.empty((m, n), "float16")
        grid = (n // 64, m // 64)
        self.drv.launch(self.ks.cuda(LAYERS_CU, "gemm_fp16_kernel"), grid, 128, [a, b, c, m, n, k])
        return f"gemm_fp16_kernel <<<{grid}, 128>>> ({m}x{n}x{k} fp16, wmma)"

    def conv(self) -> str:
        from neutrino_ae.workloads.ptx_layers import conv2d

        x = self.randn((32, 56, 56, 64), "float16")
        w = self.randn((64, 3, 3, 64), "float16")
        return conv2d(self.drv, self.ks, x, w, (32, 56, 56, 64), 64, 3, pad=1)


def run_op(op: str) -> int:
    drv = Driver()
    work: Callable[[], str] = getattr(Op(drv), op)
    what = work()
    drv.synchronize()
    print(f"{op}: {what}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in OPS:
        print(f"usage: python -m neutrino_ae.workloads.ptx_ops {{{','.join(OPS)}}}", file=sys.stderr)
        return 2
    return run_op(args[0])


if __name__ == "__main__":
    sys.exit(run_main(main))
