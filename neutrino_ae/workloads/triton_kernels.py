"""The suite's four Triton kernels, at module level so they can be compiled ahead of time.

Neutrino probes PTX only, and today's Triton cannot be run under its hook: Triton >= 3.3 launches
with ``cuLaunchKernelEx``, which Neutrino's hook driver does not wrap, and on a Hopper GPU Triton
emits ``sm_90a`` code (wgmma) that the probe engine's ``ptxas -arch=sm_90`` refuses. So the kernels
are compiled for an explicit ``sm_80`` target (A100 code: mma.sync, cp.async) by
``tools/triton_ptx.py``, the PTX is committed under ``neutrino_ae/workloads/ptx/triton/``, and the
workloads launch it through the CUDA driver (which JIT-compiles sm_80 PTX on H100/H200 as well).

Every runtime argument of a kernel stays a PTX parameter in declared order (no integer is
specialised to 1 or dropped); Triton 3.6 appends two scratch pointers (global, profile) after them.
A change here needs the PTX regenerated (``python tools/triton_ptx.py``); the tests compare each
kernel's source hash with the one recorded beside its PTX.

This module imports Triton: only the workloads that launch Triton kernels (lazily) and the tool
import it.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def attn_fwd(Q, K, V, Out, qk_scale_log2,
             sqz, sqh, sqm, sqd, skz, skh, skn, skd, svz, svh, svn, svd, soz, soh, som, sod,
             H, N_CTX,
             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """FlashAttention-2 forward, non-causal: each program owns BLOCK_M query rows of one (batch, head),
    streams K/V in BLOCK_N tiles and keeps the running max / normaliser (online softmax in base 2)."""
    pid_m = tl.program_id(0)
    pid_zh = tl.program_id(1)
    z = (pid_zh // H).to(tl.int64)
    h = (pid_zh % H).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < N_CTX

    q = tl.load(Q + z * sqz + h * sqh + offs_m[:, None] * sqm + offs_d[None, :] * sqd,
                mask=row_ok[:, None], other=0.0)
    k_base = K + z * skz + h * skh
    v_base = V + z * svz + h * svh

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in range(0, N_CTX, BLOCK_N):
        cols = start_n + offs_n
        col_ok = cols < N_CTX
        kt = tl.load(k_base + offs_d[:, None] * skd + cols[None, :] * skn, mask=col_ok[None, :], other=0.0)
        s = tl.dot(q, kt) * qk_scale_log2
        s = tl.where(col_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)  # exp2(-inf) = 0 on the first tile
        l_i = l_i * alpha + tl.sum(p, 1)
        vt = tl.load(v_base + cols[:, None] * svn + offs_d[None, :] * svd, mask=col_ok[:, None], other=0.0)
        acc = tl.dot(p.to(vt.dtype), vt, acc * alpha[:, None])
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(Out + z * soz + h * soh + offs_m[:, None] * som + offs_d[None, :] * sod,
             acc.to(Out.dtype.element_ty), mask=row_ok[:, None])


@triton.jit
def gmm_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Grouped GEMM: program (tile, g) computes one BM x BN tile of c[g] = a[g] @ b[g] (row-major, fp16 out)."""
    g = tl.program_id(1)
    tiles_n = tl.cdiv(N, BN)
    pm, pn = tl.program_id(0) // tiles_n, tl.program_id(0) % tiles_n
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    base_a, base_b, base_c = a + g * M * K, b + g * K * N, c + g * M * N
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        ka = k0 + rk
        x = tl.load(base_a + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        y = tl.load(base_b + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(x, y, acc)
    tl.store(base_c + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def zero_fill_persistent(out_ptr, numel, BLOCK: tl.constexpr):
    """Persistent zero-fill: program p stores zeros to tiles p, p + P, p + 2P, ... (P = the grid size,
    read at run time, so one PTX serves any number of SMs)."""
    pid = tl.program_id(0)
    num_programs = tl.num_programs(0)
    num_tiles = tl.cdiv(numel, BLOCK)
    for tile in range(pid, num_tiles, num_programs):
        offs = tile.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=out_ptr.dtype.element_ty), mask=offs < numel)


@triton.jit
def spin_kernel(out_ptr, iters, grow, BLOCK: tl.constexpr):
    """Compute-bound spin: program p runs ``iters + p * grow`` dependent FMAs per element, then stores
    its BLOCK values to out_ptr[p * BLOCK:]."""
    pid = tl.program_id(0)
    x = tl.arange(0, BLOCK).to(tl.float32)
    n = iters + pid * grow
    for _ in range(n):
        x = x * 0.999 + 0.5
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), x)
