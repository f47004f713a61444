"""Attention from PTX: the suite's Triton FlashAttention-2 forward (``attn_fwd``), launched through
the driver API on q, k, v of shape (B, H, N, D) fp16, and the NumPy reference it is checked against.

Used by Table 2 / Fig. 12 (``ptx_ops attn``), DMAT's Fig. 1 / 10a (``dmat/ptx_workload.py``) and the
Llama layers of Fig. 11 (``ptx_layers``). The tensors are named q, k, v, o in ``tensor.trace`` so the
DMAT figure labels their pages.
"""

from __future__ import annotations

import numpy as np

from .attention import LOG2E, attention_reference
from .cudadrv import Buffer, Driver
from .ptx_kernels import Kernels

STD = 0.5  # the DMAT workloads' inputs: normal, std 0.5 (dmat/workload_common.py)


def qkv(drv: Driver, shape: tuple[int, int, int, int], rng: np.random.Generator) -> tuple[Buffer, ...]:
    """q, k, v drawn from N(0, STD) as fp16, uploaded and named; o allocated and named."""
    arrays = [(rng.standard_normal(shape, dtype=np.float32) * STD).astype(np.float16) for _ in range(3)]
    return (*(drv.upload(a, name) for a, name in zip(arrays, "qkv", strict=True)),
            drv.empty(shape, np.float16, name="o"))


def contiguous_strides(shape: tuple[int, ...]) -> list[int]:
    """Element strides of a C-contiguous array (what ``tensor.stride()`` gives)."""
    return [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape))]


def launch_triton(drv: Driver, ks: Kernels, config: str, bufs: tuple[Buffer, ...],
                  shape: tuple[int, int, int, int], scale: float,
                  strides: dict[str, list[int]] | None = None) -> str:
    """One ``attn_fwd`` launch of the compiled ``config`` on q, k, v, o (element strides per tensor,
    (B, H, N, D) order, contiguous unless given); a line describing it."""
    batch, heads, n_ctx, head_dim = shape
    fn = ks.triton(config)
    if fn.cfg.constexprs.get("HEAD_DIM") != head_dim:
        raise ValueError(f"{config} is compiled for head dim {fn.cfg.constexprs.get('HEAD_DIM')}, not {head_dim}")
    block_m = int(fn.cfg.constexprs["BLOCK_M"])
    grid = (-(-n_ctx // block_m), batch * heads)
    per = {t: (strides or {}).get(t, contiguous_strides(shape)) for t in "qkvo"}
    strides = {f"s{t}{a}": s for t in "qkvo" for a, s in zip("zhmd" if t in "qo" else "zhnd", per[t], strict=True)}
    q, k, v, o = bufs
    fn(grid, Q=q, K=k, V=v, Out=o, qk_scale_log2=scale * LOG2E, H=heads, N_CTX=n_ctx, **strides)
    dims = "x".join(map(str, shape))
    return f"{fn.cfg.kernel} <<<{grid}, {fn.cfg.threads}>>> {config} on {dims} fp16 (Triton sm_80 PTX)"


def triton_attention(drv: Driver, ks: Kernels, config: str, shape: tuple[int, int, int, int], scale: float,
                     rng: np.random.Generator) -> str:
    return launch_triton(drv, ks, config, qkv(drv, shape, rng), shape, scale)


def max_error(drv: Driver, bufs: tuple[Buffer, ...], shape: tuple[int, int, int, int], scale: float) -> float:
    """Largest absolute difference between the kernel's o and the float64 reference (a GPU check)."""
    q, k, v, o = (drv.download(b, shape, np.float16) for b in bufs)
    return float(np.abs(o.astype(np.float64) - attention_reference(q, k, v, scale)).max())
