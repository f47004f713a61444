"""Kernels of Table 2 (and the Fig. 12 workloads) with their launch shapes, as functions of the
problem sizes of the original benchmark commands (see docs/sample-model.md for every choice)."""

from __future__ import annotations

import math

from neutrino_ae.sample.costs import KernelSpec

F16, F32 = 2, 4


def _gemm(suite: str, test: str, name: str, m: int, n: int, k: int, bm: int, bn: int, bk: int, threads: int,
          regs: int, stages: int, grid: tuple[int, int, int] | None = None, eff: float = 0.7,
          groups: int = 1) -> KernelSpec:
    tiles = math.ceil(m / bm) * math.ceil(n / bn) * groups
    g = grid or (math.ceil(n / bn), math.ceil(m / bm) * groups, 1)
    flops = 2.0 * m * n * k * groups
    global_bytes = tiles * (bm + bn) * k * F16 + m * n * F16 * groups  # tile loads (L2 hits included) + C
    dram = (m * k + k * n + m * n) * F16 * groups
    smem = stages * (bm + bn) * bk * F16
    return KernelSpec(suite, test, name, g, (threads, 1, 1), regs, smem, flops, dram, global_bytes, 16,
                      alu_per_thread=flops / (g[0] * g[1] * g[2] * threads) / 64, mma_efficiency=eff,
                      num_params=1 if suite == "cutlass_op" else 9, footprint_bytes=dram)


def _elementwise(suite: str, test: str, name: str, grid: int, threads: int, regs: int, read: float,
                 write: float, vec: int, alu: float, smem: int = 0, params: int = 4) -> KernelSpec:
    return KernelSpec(suite, test, name, (grid, 1, 1), (threads, 1, 1), regs, smem, 0.0, read + write,
                      read + write, vec, alu, num_params=params, footprint_bytes=read + write)


def table2_kernels() -> list[KernelSpec]:
    ks = [
        _gemm("cutlass_op", "gemm", "_ZN7cutlass6KernelINS_4gemm6kernel4GemmINS1_11threadblock12MmaMultistageINS1_"
              "9GemmShapeILi128ELi128ELi32EEELi3EEEEEEvNT_6ParamsE", 4096, 4096, 4096, 128, 128, 32, 128, 168, 3),
        _gemm("cutlass_op", "streamk", "_ZN7cutlass6KernelINS_4gemm6kernel18GemmUniversalStreamkINS1_11threadblock"
              "12MmaMultistageINS1_9GemmShapeILi128ELi128ELi32EEELi3EEEEEEvNT_6ParamsE", 4096, 4096, 4096,
              128, 128, 32, 128, 186, 3, grid=(216, 1, 1)),
        # Conv2D n=256 h=w=56 c=k=128 r=s=3 as implicit GEMM: M = n*h*w, N = k, K = c*r*s.
        _gemm("cutlass_op", "conv", "_ZN7cutlass6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock"
              "22ImplicitGemmMultistageINS_4gemm9GemmShapeILi128ELi128ELi64EEELi3EEEEEEvNT_6ParamsE",
              256 * 56 * 56, 128, 128 * 9, 128, 128, 64, 128, 166, 3),
        _gemm("triton_op", "gmm", "grouped_matmul_kernel", 512, 512, 512, 128, 128, 32, 128, 134, 3,
              grid=(108, 1, 1), eff=0.5, groups=4),
    ]
    # Triton FlashAttention-2, (4, 32, 4096, 64), BLOCK_M 128, BLOCK_N 64, 2 stages, 4 warps.
    b, h, s, d = 4, 32, 4096, 64
    grid = (s // 128, b * h, 1)
    blocks = grid[0] * grid[1]
    qkv = b * h * s * d * F16
    ks.append(KernelSpec("triton_op", "attn", "_attn_fwd", grid, (128, 1, 1), 232, 49152,
                         4.0 * b * h * s * s * d, 4 * qkv, blocks * (2 * 128 * d * F16 + 2 * s * d * F16), 16,
                         alu_per_thread=6.0 * 128 * s / 128, mma_efficiency=0.55, num_params=27,
                         footprint_bytes=4 * qkv))
    n_bn = 32 * 256 * 28 * 28
    n_ln, d_ln = 8192, 1024
    pool_out = 32 * 64 * 56 * 56
    ks += [
        _elementwise("pytorch_op", "norm", "_ZN2at6native40batch_norm_collect_statistics_kernelIfffiEEv",
                     256, 512, 32, n_bn * F32, 256 * 2 * F32, 16, 40, smem=1024),
        _elementwise("pytorch_op", "norm", "_ZN2at6native37batch_norm_transform_input_kernelIfffiEEv",
                     n_bn // (512 * 4), 512, 24, n_bn * F32, n_bn * F32, 16, 24),
        _elementwise("pytorch_op", "norm", "_ZN2at6native53_GLOBAL__N__vectorized_layer_norm_kernelIffEEviT0_",
                     n_ln, 256, 40, n_ln * d_ln * F32, n_ln * d_ln * F32, 16, 60, smem=256),
        _elementwise("pytorch_op", "softmax", "_ZN2at6native43_GLOBAL__N__cunn_SoftMaxForwardILi4EffNS1_"
                     "25SoftMaxForwardEpilogueEEEvPT2_PKT0_l", 8192, 512, 38, 2 * 8192 * 4096 * F32,
                     8192 * 4096 * F32, 16, 90, smem=2048),
        _elementwise("pytorch_op", "sum", "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7SumOpsIffE"
                     "EjfLi4EEEEE"
                     "vT1_",
                     2048, 512, 32, 4096 * 4096 * F32, 4096 * F32, 16, 20, smem=2048),
        _elementwise("pytorch_op", "pool", "_ZN2at6native50_GLOBAL__N__max_pool_forward_nchwIffEEviPKT_lll"
                     "iiiiiiiiiPS3_Pl",
                     pool_out // 256, 256, 30, 9 * pool_out * F32, pool_out * (F32 + 8), 4, 60),
        _elementwise("pytorch_op", "pool", "_ZN2at6native50_GLOBAL__N__avg_pool2d_out_cuda_frameIffEEviPKT_"
                     "lllliiiiiiPS3_ibb",
                     pool_out // 256, 256, 28, 9 * pool_out * F32, pool_out * F32, 4, 50),
        _elementwise("pytorch_op", "embedding", "_ZN2at6native21indexSelectLargeIndexIfljLi2ELi2ELin2ELb1EEEvNS_4cuda"
                     "6detail10TensorInfoIT_T1_EES7_NS4_IT0_S6_EEiiS6_S6_l", 8192, 128, 26,
                     4096 * 1024 * F32 + 4096 * 8, 4096 * 1024 * F32, 4, 12),
        _elementwise("pytorch_op", "gather", "_ZN2at6native32_scatter_gather_elementwise_kernelILi128ELi4EZNS0_"
                     "16_cuda_scatter_gather_base_kernelILb0ELb1EEclEvE_EEviT1_", 4096 * 4096 // 512, 128, 28,
                     4096 * 4096 * (F32 + 8), 4096 * 4096 * F32, 4, 30),
    ]
    return ks


def fig12_kernels() -> dict[str, KernelSpec]:
    """The four Fig. 12 workloads (one launch each), from the same catalogue."""
    by_test = {k.test: k for k in table2_kernels() if k.suite != "pytorch_op"}
    return {"attn": by_test["attn"], "gmm": by_test["gmm"], "conv": by_test["conv"], "gemm": by_test["gemm"]}
