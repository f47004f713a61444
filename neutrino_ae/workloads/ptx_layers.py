"""Model layers from PTX kernels (``neutrino_ae/workloads/cuda/layers.cu`` and the Triton attention):
what Fig. 11's sub-modules and Fig. 12's GEMM and convolution launch in the ``ptx`` family.

Each function launches on device buffers the caller owns and returns a line describing the launch.
Tensors are fp16, activations row-major (tokens x hidden) or NHWC; the kernels need the tile sizes
their file documents (GEMM: M, N multiples of 64, K of 16; convolution: C % 16 == 0, K % 64 == 0).
"""

from __future__ import annotations

from .cudadrv import Buffer, Driver
from .ptx_kernels import CUDA_DIR, Kernels

LAYERS_CU = CUDA_DIR / "layers.cu"
TILE = 64  # GEMM / implicit-GEMM tile per block (128 threads)
ELEMENTWISE_BLOCK = 256


def gemm(drv: Driver, ks: Kernels, a: Buffer, b: Buffer, c: Buffer, m: int, n: int, k: int) -> str:
    """c (m x n) = a (m x k) @ b (k x n)."""
    grid = (n // TILE, m // TILE)
    drv.launch(ks.cuda(LAYERS_CU, "gemm_fp16_kernel"), grid, 128, [a, b, c, m, n, k])
    return f"gemm_fp16_kernel <<<{grid}, 128>>> ({m}x{n}x{k} fp16, wmma)"


def conv2d(drv: Driver, ks: Kernels, x: Buffer, w: Buffer, nhwc: tuple[int, int, int, int], k: int, r: int,
           pad: int, y: Buffer | None = None) -> str:
    """y (NHWK) = conv(x (NHWC), w (KRSC)), stride 1, 'same' size when pad = r // 2."""
    n, h, wd, c = nhwc
    oh, ow = h + 2 * pad - r + 1, wd + 2 * pad - r + 1
    y = y or drv.empty((n, oh, ow, k), "float16")
    grid = (-(-n * oh * ow // TILE), k // TILE)
    drv.launch(ks.cuda(LAYERS_CU, "conv2d_fp16_kernel"), grid, 128, [x, w, y, n, h, wd, c, k, r, r, pad])
    return f"conv2d_fp16_kernel <<<{grid}, 128>>> ({n}x{h}x{wd}x{c} -> {k}, {r}x{r}, fp16 implicit GEMM)"


def _grid(n: int) -> tuple[int]:
    return (-(-n // ELEMENTWISE_BLOCK),)


def rms_norm(drv: Driver, ks: Kernels, x: Buffer, w: Buffer, y: Buffer, rows: int, cols: int) -> None:
    drv.launch(ks.cuda(LAYERS_CU, "rms_norm_fp16_kernel"), (rows,), ELEMENTWISE_BLOCK, [x, w, y, rows, cols, 1e-6])


def silu_mul(drv: Driver, ks: Kernels, gate: Buffer, up: Buffer, y: Buffer, n: int) -> None:
    drv.launch(ks.cuda(LAYERS_CU, "silu_mul_fp16_kernel"), _grid(n), ELEMENTWISE_BLOCK, [gate, up, y, n])


def add(drv: Driver, ks: Kernels, a: Buffer, b: Buffer, y: Buffer, n: int) -> None:
    drv.launch(ks.cuda(LAYERS_CU, "add_fp16_kernel"), _grid(n), ELEMENTWISE_BLOCK, [a, b, y, n])


def bn_relu(drv: Driver, ks: Kernels, x: Buffer, scale: Buffer, shift: Buffer, y: Buffer, n: int, c: int,
            relu: bool = True) -> None:
    drv.launch(ks.cuda(LAYERS_CU, "bn_relu_fp16_kernel"), _grid(n), ELEMENTWISE_BLOCK,
               [x, scale, shift, y, n, c, int(relu)])
