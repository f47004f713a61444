"""DMAT benchmark: a FlashAttention-2-like thread-level ``dmat`` trace of a chosen size, and the
``.bin → .dmat → PNG`` pipeline that is timed.

Memory model (FA-2 forward, BLOCK_M 128, BLOCK_N 64, head dim 64, fp16, 8 warps): a block loads its
Q tile once, then for every K/V tile loads 2 x 16 B of K and 2 x 16 B of V per thread, and stores
its O tile at the end. The probe saves (clock since the thread's entry, address) per access; the
32 threads of a warp read the clock at the same instruction, so they share clock values. Blocks
that run past the sequence end stop early, leaving empty (all-ones) slots as the ``count``
datamodel does.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from neutrino_ae.formats.bintrace import Level, SectionSpec, TraceHeader, TraceWriter
from neutrino_ae.formats.records import DMAT, EMPTY_MARKER

SEQ = 4096
HEAD_DIM = 64
BLOCK_M = 128
BLOCK_N = 64
THREADS = 256
N_ITERS = SEQ // BLOCK_N
Q_LOADS = BLOCK_M * HEAD_DIM * 2 // THREADS // 16  # 4 x 16 B per thread
KV_LOADS = BLOCK_N * HEAD_DIM * 2 // THREADS // 16  # 2 x 16 B of K and of V per thread per tile
RECORDS = Q_LOADS + N_ITERS * 2 * KV_LOADS + Q_LOADS  # Q, K/V per tile, O stores
ITER_CYCLES = 1200
TENSOR_BYTES = 4 * 32 * SEQ * HEAD_DIM * 2
BASES = {"q": 0x7F20_0000_0000, "k": 0x7F30_0000_0000, "v": 0x7F40_0000_0000, "o": 0x7F50_0000_0000}
CHUNK_BLOCKS = 16


def _block_records(blocks: np.ndarray, rng: np.random.Generator, grid_m: int) -> np.ndarray:
    nb = blocks.size
    m = blocks % grid_m
    bh = blocks // grid_m
    t = np.arange(THREADS)
    warp = t // 32
    head_off = (bh * SEQ * HEAD_DIM * 2).astype(np.uint64)  # byte offset of this (batch, head)

    # Record kinds in issue order: Q loads, then per tile K loads and V loads, then O stores.
    kind = np.r_[np.zeros(Q_LOADS), np.tile(np.r_[np.ones(KV_LOADS), 2 * np.ones(KV_LOADS)], N_ITERS),
                 3 * np.ones(Q_LOADS)].astype(np.int64)
    it = np.r_[np.zeros(Q_LOADS), np.repeat(np.arange(N_ITERS), 2 * KV_LOADS), np.full(Q_LOADS, N_ITERS - 1)]
    j = np.r_[np.arange(Q_LOADS), np.tile(np.r_[np.arange(KV_LOADS), np.arange(KV_LOADS)], N_ITERS),
              np.arange(Q_LOADS)].astype(np.int64)

    # Clocks: a base schedule per record, a per-warp start skew and per-warp cumulative jitter.
    base = np.where(kind == 0, 40 + 6 * j, 0) + np.where((kind == 1) | (kind == 2),
                                                         200 + it * ITER_CYCLES + (kind == 2) * 500 + 6 * j, 0)
    base = base + np.where(kind == 3, 200 + N_ITERS * ITER_CYCLES + 6 * j, 0)
    skew = rng.integers(0, 64, (nb, 8)) + np.arange(8) * 4
    jitter = np.cumsum(rng.integers(0, 3, (nb, 8, RECORDS)), axis=2)
    clk_w = base[None, None, :] + skew[:, :, None] + jitter  # (nb, 8 warps, R)
    clock = clk_w[:, warp, :].astype(np.uint64)  # (nb, THREADS, R)

    # Addresses: Q/O rows of this block's M tile (2 threads per 128-byte row), K/V rows of tile `it`.
    row_q = (m[:, None] * BLOCK_M + t[None, :] // 2)[:, :, None]
    col_q = ((t % 2) * 64)[None, :, None] + 16 * j[None, None, :]
    row_kv = (it[None, None, :] * BLOCK_N + (t // 4)[None, :, None])
    col_kv = ((t % 4) * 32)[None, :, None] + 16 * j[None, None, :]
    off_q = row_q * (HEAD_DIM * 2) + col_q
    off_kv = row_kv * (HEAD_DIM * 2) + col_kv
    base_addr = np.array([BASES["q"], BASES["k"], BASES["v"], BASES["o"]], dtype=np.uint64)[kind]
    off = np.where((kind == 1) | (kind == 2), off_kv, off_q).astype(np.uint64)
    addr = base_addr[None, None, :] + head_off[:, None, None] + off

    rec = np.empty((nb, THREADS, RECORDS), dtype=DMAT)
    rec["clock"] = clock
    rec["addr"] = addr
    # The last M tile of every 7th head stops after 7/8 of the tiles (a ragged count, like masking).
    short = (m == grid_m - 1) & (bh % 7 == 0)
    if short.any():
        cut = Q_LOADS + (N_ITERS * 7 // 8) * 2 * KV_LOADS
        rec["clock"][short, :, cut:] = EMPTY_MARKER
    return rec


def write_dmat_trace(path: Path, target_bytes: int, seed: int) -> dict[str, Any]:
    """Write a thread-level dmat trace of about ``target_bytes`` (a whole number of blocks)."""
    rng = np.random.default_rng(seed + 2)
    block_bytes = THREADS * RECORDS * DMAT.itemsize
    n_blocks = max(1, math.ceil(target_bytes / block_bytes))
    grid_m = SEQ // BLOCK_M
    header = TraceHeader((grid_m, math.ceil(n_blocks / grid_m), 1), (THREADS, 1, 1), 0)
    n_blocks = header.grid_size
    with TraceWriter(path, header, [SectionSpec(Level.THREAD, RECORDS * DMAT.itemsize)], "v1") as w:
        for lo in range(0, n_blocks, CHUNK_BLOCKS):
            blocks = np.arange(lo, min(n_blocks, lo + CHUNK_BLOCKS))
            w.write(_block_records(blocks, rng, grid_m))
    return {"blocks": n_blocks, "threads": n_blocks * THREADS, "records_per_thread": RECORDS,
            "records": n_blocks * THREADS * RECORDS,
            "model": {"kernel": "FA-2 fwd", "block_m": BLOCK_M, "block_n": BLOCK_N, "head_dim": HEAD_DIM,
                      "seq": SEQ, "iter_cycles": ITER_CYCLES}}


def bin_to_png(trace_path: Path, out: Path) -> dict[str, Any]:
    """Sparsify the raw trace in bounded chunks, write the ``.dmat``, read it back, draw the PNG."""
    from neutrino_ae.formats.bintrace import open_trace
    from neutrino_ae.formats.dmat import read_dmat, sparsify, write_dmat

    trace = open_trace(trace_path, levels=["thread"])
    data = sparsify(trace.iter_chunks(0, DMAT, chunk_bytes=32 << 20))
    dmat_path = write_dmat(out / "bench.dmat", data)
    del data
    back = read_dmat(dmat_path)
    png = plot(back, out)
    return {"clocks": int(back.clocks.size), "pairs": int(back.pair_page.size), "pages": int(back.pages.size),
            "accesses": back.num_accesses, "dmat_bytes": dmat_path.stat().st_size, "png": str(png)}


def plot(data: Any, out: Path) -> Path:
    """The section's DMAT plot of ``data`` as a PNG in ``out``."""
    from dmat import dmat as dmat_section

    return dmat_section.bench_plot(data, out)
