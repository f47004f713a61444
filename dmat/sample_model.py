"""DMAT inputs (Fig. 1, Fig. 10a/b/c): the global-memory access stream of attention kernels.

Tensors (``q``, ``k``, ``v``, ``o``: fp16, contiguous ``(batch, heads, seq, head_dim)``; ``lse``
(Triton's ``M`` / the SDPA kernels' softmax log-sum-exp): fp32 ``(batch, heads, seq)``) sit in their
own 2 MiB-granular allocations. One block per (m-tile, batch*head). A block

1. loads its Q tile (``block_m`` rows),
2. for ``n`` in ``range(0, seq, block_n)`` loads the K tile and the V tile of rows ``[n, n+block_n)``,
3. stores its O tile and its ``block_m`` lse values.

Every load/store is a 16-byte vector access (8 halves); tile bytes are spread over the block's
threads in order, so load ``i`` of thread ``t`` touches tile offset ``(i*threads + t)*16``. The
``lse`` store is one 4-byte store by each of the first ``block_m`` threads (the other threads need
one record fewer: their last slot keeps the empty marker).

Timing (cycles since the thread's entry; all lanes of a warp share a clock):

* ``iteration = (4*block_m*block_n*head_dim) / (tensor_flops_per_cycle_per_sm / resident) / mma_efficiency
  + softmax_cycles_per_element * block_m*block_n/threads + exposed_latency_cycles``, ``resident``
  from the occupancy calculation; each block's iterations are scaled by a gamma(1, ``block_cv``)
  speed factor (contention), and each warp of a block is skewed by U{0..``warp_skew_cycles``}.
* ``schedule`` says when tiles are issued: ``prefetch`` (Triton, ``stages-1`` iterations ahead, K
  then V), ``kv_split`` (SDPA flash: V(n) at the start of iteration n, K(n+1) after QK^T, i.e. at
  ``k_issue_frac`` of iteration n) and ``serial`` (SDPA mem-efficient: K(n) at the start of
  iteration n, V(n) after the softmax, at ``v_issue_frac``; nothing is prefetched so
  ``exposed_latency_cycles`` > 0).
* Loads of one tile issue ``issue_spacing_cycles`` apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from neutrino_ae.formats.records import DMAT
from neutrino_ae.sample.device import Device, blocks_per_sm
from neutrino_ae.sample.dists import gamma

from . import FIGURES

TENSORS = ("q", "k", "v", "o", "lse")
_Q, _K, _V, _O, _L = range(5)


@dataclass(frozen=True)
class AttnKernel:
    fig: str
    name: str
    keyword: str
    block_m: int
    block_n: int
    warps: int
    regs: int
    smem: int
    schedule: str  # prefetch | kv_split | serial
    stages: int = 2
    grid_order: str = "m_bh"  # m_bh: (m_tiles, B*H) Triton; m_b_h: (m_tiles, B, H) flash; m_h_b: fmha
    lse_name: str = "M"
    mma_efficiency: float = 0.55
    softmax_cycles_per_element: float = 6.0
    exposed_latency_cycles: float = 0.0
    k_issue_frac: float = 0.35
    v_issue_frac: float = 0.45
    prologue_cycles: float = 900.0
    epilogue_cycles: float = 600.0
    issue_spacing_cycles: int = 2
    block_cv: float = 0.04
    warp_skew_cycles: int = 40

    @property
    def threads(self) -> int:
        return self.warps * 32

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AttnShape:
    batch: int
    heads: int
    seq: int
    head_dim: int = 64

    @property
    def tensor_bytes(self) -> int:
        return self.batch * self.heads * self.seq * self.head_dim * 2

    @property
    def lse_bytes(self) -> int:
        return self.batch * self.heads * self.seq * 4


def kernel_grid(k: AttnKernel, s: AttnShape) -> tuple[int, int, int]:
    m = -(-s.seq // k.block_m)
    if k.grid_order == "m_bh":
        return (m, s.batch * s.heads, 1)
    if k.grid_order == "m_b_h":
        return (m, s.batch, s.heads)
    if k.grid_order == "m_h_b":
        return (m, s.heads, s.batch)
    raise ValueError(f"unknown grid order {k.grid_order!r}")


def iteration_cycles(k: AttnKernel, s: AttnShape, device: Device) -> float:
    resident = blocks_per_sm(device, k.threads, k.regs, k.smem)
    flops = 4.0 * k.block_m * k.block_n * s.head_dim
    mma = flops / (device.tensor_flops_per_cycle_per_sm / resident) / k.mma_efficiency
    softmax = k.softmax_cycles_per_element * k.block_m * k.block_n / k.threads
    return mma + softmax + k.exposed_latency_cycles


@dataclass(frozen=True)
class Template:
    """Per-thread record slots in program order, identical for every block."""

    tensor: np.ndarray  # int, index into TENSORS
    tile: np.ndarray  # int, K/V tile index n (0 for q/o/lse)
    load: np.ndarray  # int, vector index within the tile
    iters: np.ndarray  # float, issue time in iterations after the prologue (may be < 0 = prologue)
    fixed: np.ndarray  # float, extra cycles (prologue/epilogue parts)


def build_template(k: AttnKernel, s: AttnShape) -> Template:
    per_q = k.block_m * s.head_dim * 2 // (k.threads * 16)
    per_kv = k.block_n * s.head_dim * 2 // (k.threads * 16)
    if per_q < 1 or per_kv < 1:
        raise ValueError("tile smaller than one 16-byte vector per thread; unsupported")
    n_tiles = -(-s.seq // k.block_n)
    tensor, tile, load, iters, fixed = [], [], [], [], []

    def add(t: int, n: int, count: int, it: float, fx: float) -> None:
        tensor.extend([t] * count)
        tile.extend([n] * count)
        load.extend(range(count))
        iters.extend([it] * count)
        fixed.extend([fx] * count)

    add(_Q, 0, per_q, 0.0, -k.prologue_cycles)
    for n in range(n_tiles):
        if k.schedule == "prefetch":
            ahead = k.stages - 1
            it = float(max(n - ahead, 0)) if n >= ahead else 0.0
            fx = -k.prologue_cycles / 2 if n < ahead else 0.0
            add(_K, n, per_kv, it, fx)
            add(_V, n, per_kv, it, fx + per_kv * k.issue_spacing_cycles)
        elif k.schedule == "kv_split":
            add(_K, n, per_kv, (n - 1 + k.k_issue_frac) if n else 0.0, 0.0 if n else -k.prologue_cycles / 2)
            add(_V, n, per_kv, float(n), 0.0)
        elif k.schedule == "serial":
            add(_K, n, per_kv, float(n), 0.0)
            add(_V, n, per_kv, n + k.v_issue_frac, 0.0)
        else:
            raise ValueError(f"unknown schedule {k.schedule!r}")
    per_o = per_q
    add(_O, 0, per_o, float(n_tiles), k.epilogue_cycles / 2)
    add(_L, 0, 1, float(n_tiles), k.epilogue_cycles)
    order = np.lexsort((np.arange(len(tensor)), np.asarray(iters) * 1e7 + np.asarray(fixed)))
    arr = [np.asarray(x)[order] for x in (tensor, tile, load, iters, fixed)]
    return Template(*arr)


@dataclass
class AttnLayout:
    kernel: AttnKernel
    shape: AttnShape
    ptrs: dict[str, int]  # device pointer of each tensor

    @property
    def grid(self) -> tuple[int, int, int]:
        return kernel_grid(self.kernel, self.shape)

    @property
    def blocks(self) -> int:
        g = self.grid
        return g[0] * g[1] * g[2]


def block_coords(k: AttnKernel, s: AttnShape, block_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(m-tile index, batch*heads index) of linear block ids (x fastest)."""
    gx, gy, _ = kernel_grid(k, s)
    m = block_ids % gx
    rest = block_ids // gx
    if k.grid_order == "m_bh":
        bh = rest
    elif k.grid_order == "m_b_h":
        b, h = rest % gy, rest // gy
        bh = b * s.heads + h
    else:  # m_h_b
        h, b = rest % gy, rest // gy
        bh = b * s.heads + h
    return m, bh


def records_per_thread(t: Template) -> int:
    return int(t.tensor.size)


def generate_chunks(layout: AttnLayout, device: Device, rng: np.random.Generator,
                    blocks_per_chunk: int) -> Iterator[np.ndarray]:
    """Yield DMAT records ``(n_blocks, threads, slots)`` chunk by chunk (bounded memory)."""
    k, s = layout.kernel, layout.shape
    t = build_template(k, s)
    it_cycles = iteration_cycles(k, s, device)
    threads = k.threads
    nrec = t.tensor.size
    row = s.head_dim * 2
    head_bytes = s.seq * row
    base = np.array([layout.ptrs[n] for n in TENSORS], dtype=np.uint64)
    lane = np.arange(threads, dtype=np.int64)
    warp = lane // 32
    is_lse = t.tensor == _L
    is_kv = (t.tensor == _K) | (t.tensor == _V)
    # Offsets that depend only on the template and the thread (bytes within the block's tile).
    within = (t.load[None, :] * threads + lane[:, None]) * 16
    within = np.where(is_lse[None, :], lane[:, None] * 4, within)
    spacing = t.load * k.issue_spacing_cycles
    # Only the first block_m threads store an lse value.
    empty = is_lse[None, :] & (lane[:, None] >= k.block_m)
    for first in range(0, layout.blocks, blocks_per_chunk):
        ids = np.arange(first, min(first + blocks_per_chunk, layout.blocks), dtype=np.int64)
        nb = ids.size
        m, bh = block_coords(k, s, ids)
        speed = gamma(rng, 1.0, k.block_cv, nb)
        skew = rng.integers(0, k.warp_skew_cycles + 1, (nb, k.warps))
        clock = (k.prologue_cycles + t.iters[None, :] * it_cycles * speed[:, None] + t.fixed[None, :]
                 + spacing[None, :])  # (nb, nrec)
        clock = np.rint(clock[:, None, :] + skew[:, warp][:, :, None]).astype(np.int64)
        np.maximum(clock, 0, out=clock)
        # Tile base of each (block, slot): q/o rows m*block_m.., k/v rows n*block_n.., lse rows m*block_m..
        tile_row = np.where(is_kv[None, :], t.tile[None, :] * k.block_n, (m * k.block_m)[:, None])
        off = np.where(is_lse[None, :], bh[:, None] * s.seq * 4 + tile_row * 4,
                       bh[:, None] * head_bytes + tile_row * row)
        addr = base[t.tensor][None, None, :] + (off[:, None, :] + within[None, :, :]).astype(np.uint64)
        out = np.empty((nb, threads, nrec), dtype=DMAT)
        out["clock"] = clock.astype(np.uint64)
        out["addr"] = addr
        # Slots no access filled keep the hook driver's zero fill (cuMemsetD32 0 before the launch).
        out["clock"][:, empty] = 0
        out["addr"][:, empty] = 0
        yield out


def draw_block_factors(layout: AttnLayout, rng: np.random.Generator,
                       blocks_per_chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """Every block's speed factor and its warps' skews, drawn chunk by chunk exactly as
    :func:`generate_chunks` draws them (same ``rng`` calls in the same order, so the same values)."""
    k = layout.kernel
    speeds, skews = [], []
    for first in range(0, layout.blocks, blocks_per_chunk):
        nb = min(first + blocks_per_chunk, layout.blocks) - first
        speeds.append(gamma(rng, 1.0, k.block_cv, nb))
        skews.append(rng.integers(0, k.warp_skew_cycles + 1, (nb, k.warps)))
    return np.concatenate(speeds), np.concatenate(skews)


@dataclass(frozen=True)
class WarpAccesses:
    """The records of some blocks, one item per (block, warp, slot): the 32 lanes of a warp share the
    clock and touch consecutive addresses, ``stride`` bytes apart from ``addr0`` (the first filled lane);
    ``filled`` lanes (the first ones) hold an access, the others keep the zero fill."""

    clock: np.ndarray  # int64 (nb, warps, nrec)
    addr0: np.ndarray  # uint64 (nb, warps, nrec)
    stride: np.ndarray  # int64 (nrec,): 16 (vector loads/stores) or 4 (lse)
    filled: np.ndarray  # int64 (warps, nrec): filled lanes of the warp's slot


def warp_accesses(layout: AttnLayout, device: Device, speed: np.ndarray, skew: np.ndarray,
                  ids: np.ndarray) -> WarpAccesses:
    """The records :func:`generate_chunks` yields for blocks ``ids`` (with their ``speed`` and ``skew``
    from :func:`draw_block_factors`), aggregated per warp: the same clocks (the same floating-point
    operations in the same order) and addresses, 32 times fewer items."""
    k, s = layout.kernel, layout.shape
    t = build_template(k, s)
    it_cycles = iteration_cycles(k, s, device)
    threads = k.threads
    row = s.head_dim * 2
    head_bytes = s.seq * row
    base = np.array([layout.ptrs[n] for n in TENSORS], dtype=np.uint64)
    lane0 = np.arange(k.warps, dtype=np.int64) * 32  # first lane of each warp
    is_lse = t.tensor == _L
    is_kv = (t.tensor == _K) | (t.tensor == _V)
    within = np.where(is_lse[None, :], lane0[:, None] * 4, (t.load[None, :] * threads + lane0[:, None]) * 16)
    spacing = t.load * k.issue_spacing_cycles
    filled = np.where(is_lse[None, :], np.clip(k.block_m - lane0, 0, 32)[:, None], 32)
    m, bh = block_coords(k, s, ids)
    clock = (k.prologue_cycles + t.iters[None, :] * it_cycles * speed[:, None] + t.fixed[None, :]
             + spacing[None, :])  # (nb, nrec)
    clock = np.rint(clock[:, None, :] + skew[:, :, None]).astype(np.int64)
    np.maximum(clock, 0, out=clock)
    tile_row = np.where(is_kv[None, :], t.tile[None, :] * k.block_n, (m * k.block_m)[:, None])
    off = np.where(is_lse[None, :], bh[:, None] * s.seq * 4 + tile_row * 4, bh[:, None] * head_bytes + tile_row * row)
    addr0 = base[t.tensor][None, None, :] + (off[:, None, :] + within[None, :, :]).astype(np.uint64)
    return WarpAccesses(clock, addr0, np.where(is_lse, 4, 16).astype(np.int64), filled.astype(np.int64))


def expected_accesses(layout: AttnLayout) -> dict[str, int]:
    """Number of recorded accesses per tensor implied by shapes and tiles (no simulation)."""
    k, s = layout.kernel, layout.shape
    n_blocks = layout.blocks
    per_q = k.block_m * s.head_dim * 2 // 16
    per_kv_tile = k.block_n * s.head_dim * 2 // 16
    n_tiles = -(-s.seq // k.block_n)
    return {"q": n_blocks * per_q, "k": n_blocks * n_tiles * per_kv_tile, "v": n_blocks * n_tiles * per_kv_tile,
            "o": n_blocks * per_q, "lse": n_blocks * k.block_m}


# The four DMAT figures' kernels (Fig. 1, Fig. 10a-c) and the section's model parameters.
FLASH_KERNEL = ("_ZN5flash15flash_fwd_kernelI23Flash_fwd_kernel_traitsILi64ELi128ELi128ELi4ELb0ELb0EN7cutlass"
                "6half_tE19Flash_kernel_traitsILi64ELi128ELi128ELi4ES4_EELb0ELb0ELb0ELb0ELb1ELb1ELb0ELb0EEEvNS_"
                "16Flash_fwd_paramsE")
FMHA_KERNEL = "fmha_cutlassF_f16_aligned_64x64_rf_sm80"

# Each figure's kernel, in the order of FIGURES (Fig. 1, Fig. 10a, 10b, 10c); its -k keyword is the figure's.
_KERNEL_SPECS: tuple[dict[str, Any], ...] = (
    dict(name="_attn_fwd", block_m=128, block_n=64, warps=8, regs=128, smem=49152, schedule="prefetch", stages=2,
         grid_order="m_bh", lse_name="M", mma_efficiency=0.55),
    dict(name="_attn_fwd", block_m=64, block_n=64, warps=4, regs=128, smem=40960, schedule="prefetch", stages=2,
         grid_order="m_bh", lse_name="M", mma_efficiency=0.55),
    dict(name=FLASH_KERNEL, block_m=128, block_n=128, warps=4, regs=255, smem=49152, schedule="kv_split", stages=1,
         grid_order="m_b_h", lse_name="softmax_lse", mma_efficiency=0.7),
    dict(name=FMHA_KERNEL, block_m=64, block_n=64, warps=4, regs=128, smem=40960, schedule="serial", stages=1,
         grid_order="m_h_b", lse_name="logsumexp", mma_efficiency=0.5, exposed_latency_cycles=900.0),
)
KERNELS: dict[str, AttnKernel] = {fig: AttnKernel(fig=fig, keyword=FIGURES[fig].keyword, **spec)
                                  for fig, spec in zip(FIGURES, _KERNEL_SPECS, strict=True)}


@dataclass(frozen=True)
class DmatParams:
    shape: AttnShape
    write_raw: bool  # raw result/*.bin (small scales) or stream straight into sparsify (paper)
    blocks_per_chunk: int = 16
    extra_regs_dmat: int = 8
