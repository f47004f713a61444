"""The suite's own CUDA kernels (compiled to PTX for Neutrino) and the PTX signature of each entry, as the
tests expect them: one table for the builder's tests and the probe-engine tests."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_P, _I, _F = "u64", "u32", "f32"  # a pointer or long long; an int or unsigned int; a float
#: .cu file (relative to the repo) -> kernel -> PTX parameter types, in order.
KERNELS: dict[str, dict[str, list[str]]] = {
    "block_sched/fill.cu": {"fill_fp16_kernel": [_P, _I, _P]},
    "dmat/attention.cu": {"flash_fwd_kernel": [_P, _P, _P, _P, _I, _F],
                          "fmha_fwd_kernel": [_P, _P, _P, _P, _I, _F]},
    "neutrino_ae/workloads/cuda/ops.cu": {
        "layer_norm_kernel": [_P, _P, _I, _I, _F],
        "softmax_kernel": [_P, _P, _I, _I],
        "reduce_sum_kernel": [_P, _P, _I, _I],
        "max_pool2d_kernel": [_P, _P, _I, _I, _I, _I, _I, _I],
        "embedding_kernel": [_P, _P, _P, _I, _I],
        "gather_kernel": [_P, _P, _P, _I, _I, _I],
    },
    "neutrino_ae/workloads/cuda/layers.cu": {
        "gemm_fp16_kernel": [_P, _P, _P, _I, _I, _I],
        "conv2d_fp16_kernel": [_P, _P, _P] + [_I] * 8,
        "rms_norm_fp16_kernel": [_P, _P, _P, _I, _I, _F],
        "silu_mul_fp16_kernel": [_P, _P, _P, _P],
        "add_fp16_kernel": [_P, _P, _P, _P],
        "bn_relu_fp16_kernel": [_P, _P, _P, _P, _P, _I, _I],
    },
}
#: Kernels built on tensor cores (wmma -> wmma.mma.sync): the tensorop probes count something there.
TENSOR_CORE = frozenset({"flash_fwd_kernel", "gemm_fp16_kernel", "conv2d_fp16_kernel"})
#: Where the Triton PTX of the workloads is kept (name.ptx + name.json with the kernel's name), when it is.
TRITON_PTX = REPO / "neutrino_ae" / "workloads" / "ptx" / "triton"
