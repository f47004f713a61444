"""FlashAttention-2 forward (non-causal) in Triton, and a NumPy reference for checking it.

The Triton kernel is our own compact FA-2 (``attn_fwd`` in ``triton_kernels.py``, where it is
compiled to PTX ahead of time): each program owns ``BLOCK_M`` query rows of one (batch, head),
streams K/V in ``BLOCK_N`` tiles and keeps the running max / normaliser in registers (online
softmax in base 2). Triton and PyTorch are imported only when the kernel runs, so
:func:`attention_reference` works on any CPU machine.
"""

from __future__ import annotations

from typing import Any

import numpy as np

LOG2E = 1.4426950408889634


def attention_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    """softmax(q·kᵀ·scale)·v over the last two axes, in float64 (inputs of shape (..., N, D))."""
    q64, k64, v64 = (np.asarray(a, dtype=np.float64) for a in (q, k, v))
    s = np.einsum("...md,...nd->...mn", q64, k64) * scale
    s -= s.max(axis=-1, keepdims=True)  # numerically safe: exp of non-positive values
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("...mn,...nd->...md", p, v64)


def forward(q: Any, k: Any, v: Any, sm_scale: float, block_m: int = 128, block_n: int = 64,
            num_stages: int = 2, num_warps: int = 8) -> Any:
    """Non-causal attention of CUDA tensors shaped (batch, heads, seq, head_dim); returns ``o``.

    The kernel is named ``attn_fwd`` so ``neutrino -k attn`` selects it.
    """
    import torch

    from neutrino_ae.workloads.triton_kernels import attn_fwd

    if q.shape != k.shape or q.shape != v.shape or q.dim() != 4:
        raise ValueError(f"q, k, v must share one 4-d shape, got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    head_dim = q.shape[-1]
    if head_dim not in (16, 32, 64, 128, 256):
        raise ValueError(f"head_dim {head_dim} unsupported (16/32/64/128/256)")
    if min(block_m, block_n) < 16:
        raise ValueError("BLOCK_M and BLOCK_N must be >= 16 (tl.dot tile minimum)")
    o = torch.empty_like(q)
    batch, heads, n_ctx, _ = q.shape
    grid = (-(-n_ctx // block_m), batch * heads, 1)
    attn_fwd[grid](
        q, k, v, o, sm_scale * LOG2E,
        *q.stride(), *k.stride(), *v.stride(), *o.stride(),
        heads, n_ctx,
        HEAD_DIM=head_dim, BLOCK_M=block_m, BLOCK_N=block_n,
        num_stages=num_stages, num_warps=num_warps,
    )
    return o
