"""Benchmark inputs of a chosen size, made with the sample generator's GPU model.

The sample bundle's own traces are sized like the paper's (32768 blocks); the benchmarks need
the same kind of trace at 1M blocks / 1M warps / 512 MB, so they call the model's pieces
(occupancy, FIFO block dispatcher, per-warp clock records, attention memory streams) directly
with a larger grid, and stream the result to disk with ``TraceWriter`` in bounded chunks.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from neutrino_ae.formats.bintrace import TraceHeader
from neutrino_ae.formats.bintrace_write import SectionSpec, TraceWriter
from neutrino_ae.formats.level import Level

# The generators' heavy imports (the sample model, the event.log writer and with it pandas) are made
# inside the functions: every measuring child imports this module, and the raw-read child needs numpy
# only, so a module-level pandas import would add most of a second to each of them.

MB = 1_000_000
#: Part of the cache key: which model the inputs came from.
MODEL_TAG = "m1"

# block_sched: the fill kernel's 128-thread blocks (4 warps x 16 B): 1,048,576 blocks = 67.1 MB.
BLOCK_SCHED_BLOCKS = 1 << 20
BLOCK_SCHED_DEFAULT_MB = BLOCK_SCHED_BLOCKS * 4 * 16 / MB
BLOCK_SCHED_SMOKE_MB = 0.25
# warp_sched: 1024-thread blocks (32 warps x 16 B): 32768 blocks = 1,048,576 warps = 16.8 MB.
WARP_SCHED_WARPS = 1 << 20
WARP_SCHED_DEFAULT_MB = WARP_SCHED_WARPS * 16 / MB
WARP_SCHED_SMOKE_MB = 0.25

DMAT_DEFAULT_MB = 512.0
DMAT_SMOKE_MB = 2.0
EVENTLOG_DEFAULT_MB = 100.0
EVENTLOG_SMOKE_MB = 0.5

CHUNK_BLOCKS = 1 << 16


def bin_files(inp: Path) -> list[Path]:
    return [inp / "trace.bin"]


def eventlog_files(inp: Path) -> list[Path]:
    return [inp / "event.log"]


def bundle_files(inp: Path) -> list[Path]:
    root = inp / "bundle"
    return sorted(p for p in root.rglob("*") if p.is_file())


def _mb(size_mb: float | None, smoke: bool, default: float, smoke_default: float) -> float:
    if size_mb is not None:
        return float(size_mb)
    return smoke_default if smoke else default


# --------------------------------------------------------------------------------------------- block/warp traces


def make_block_sched(out: Path, size_mb: float | None, seed: int, smoke: bool) -> dict[str, Any]:
    """The Sec. 4.5 fill kernel (128 threads, 512 fp16 zeroed per block) with a grid of the requested
    size, through the sample model's occupancy, FIFO dispatcher, gap model and clock model."""
    from neutrino_ae.report.section.registry import section_module
    from neutrino_ae.sample.device import Device

    model = section_module("block_sched", "sample_model")
    BlockSchedParams, simulate_memory_bound = model.BlockSchedParams, model.simulate_memory_bound

    mb = _mb(size_mb, smoke, BLOCK_SCHED_DEFAULT_MB, BLOCK_SCHED_SMOKE_MB)
    params = BlockSchedParams(numel=0)
    per_block = params.fill_threads * params.fill_elems_per_thread
    block_bytes = math.ceil(params.fill_threads / 32) * 16
    n_blocks = max(1, round(mb * MB / block_bytes))
    params = BlockSchedParams(numel=n_blocks * per_block)
    rng = np.random.default_rng(seed)
    run = simulate_memory_bound(Device(), params.fill_kernel(), params.gap, params.clock,
                                params.first_wave_issue_cycles, rng)
    header = TraceHeader((n_blocks, 1, 1), (params.fill_threads, 1, 1), 0)
    _write_chunked(out / "trace.bin", header, run.records)
    return {"blocks": n_blocks, "warps": int(run.records.shape[0] * run.records.shape[1]),
            "model": "block_sched.sample_model.simulate_memory_bound(fill_kernel)", "truth": run.truth}


def make_warp_sched(out: Path, size_mb: float | None, seed: int, smoke: bool) -> dict[str, Any]:
    """The Sec. 7 kernel (32 warps per block, unequal warp work) under SHARED scheduling, through the
    sample model's warp scheduler, with as many blocks as the requested size needs."""
    from neutrino_ae.report.section.registry import section_module
    from neutrino_ae.sample.device import Device

    model = section_module("warp_sched", "sample_model")
    WarpKernel, WarpSchedParams, simulate = model.WarpKernel, model.WarpSchedParams, model.simulate

    mb = _mb(size_mb, smoke, WARP_SCHED_DEFAULT_MB, WARP_SCHED_SMOKE_MB)
    kernel = WarpKernel()
    params = WarpSchedParams(kernel=kernel)
    n_blocks = max(1, round(mb * MB / (kernel.warps * 16)))
    run = simulate(Device(), kernel, n_blocks, "shared", params.clock, np.random.default_rng(seed + 1))
    header = TraceHeader((n_blocks, 1, 1), (kernel.threads, 1, 1), 0)
    _write_chunked(out / "trace.bin", header, run.records)
    return {"blocks": n_blocks, "warps": n_blocks * kernel.warps, "policy": "shared",
            "model": "warp_sched.sample_model.simulate(shared)", "truth": run.truth}


def _write_chunked(path: Path, header: TraceHeader, records: np.ndarray) -> None:
    with TraceWriter(path, header, [SectionSpec(Level.WARP, 16)], "v1") as w:
        for lo in range(0, records.shape[0], CHUNK_BLOCKS):
            w.write(records[lo:lo + CHUNK_BLOCKS])


# --------------------------------------------------------------------------------------------- dmat


def make_dmat(out: Path, size_mb: float | None, seed: int, smoke: bool) -> dict[str, Any]:
    from benchmarks.cases import dmatgen

    mb = _mb(size_mb, smoke, DMAT_DEFAULT_MB, DMAT_SMOKE_MB)
    return dmatgen.write_dmat_trace(out / "trace.bin", int(mb * MB), seed)


# --------------------------------------------------------------------------------------------- event.log


def make_eventlog(out: Path, size_mb: float | None, seed: int, smoke: bool) -> dict[str, Any]:
    """An event.log of about ``size_mb`` written with ``EventLogWriter``: a long benchmark-mode run
    (mem allocs, probed launches with every line kind, a few noise lines the parser must skip)."""
    from neutrino_ae.formats.eventlog.write import EventLogWriter

    target = int(_mb(size_mb, smoke, EVENTLOG_DEFAULT_MB, EVENTLOG_SMOKE_MB) * MB)
    rng = np.random.default_rng(seed + 3)
    path = out / "event.log"
    written = 0
    launches = 0
    t_ns = 1_000_000
    with open(path, "w", encoding="utf-8") as fh:
        head = EventLogWriter().pid(1860576).cmd(["python", "kernel_overhead/cutlass_op/gemm.py"])
        head.l2_flush(50 << 20).line("[info] neutrino hook loaded")
        fh.write(head.text())
        written += len(head.text())
        batch = 2000
        while written < target:
            w = EventLogWriter()
            ptr = rng.integers(0x7F00_0000_0000 >> 12, 0x7FFF_0000_0000 >> 12, (batch, 6)) << 12
            grid = rng.integers(1, 65536, batch)
            block = rng.choice([64, 128, 256, 512], batch)
            dur = rng.gamma(4.0, 0.05, (batch, 4))
            for i in range(batch):
                if i % 50 == 0:
                    w.mem_alloc(int(ptr[i, 0]), int(rng.integers(1, 1 << 30)))
                    w.line("[jit] cuModuleGetFunction 0 name _Z11gemm_kernelILi128ELi128EEvPKfS1_Pfiii")
                t_ns += int(rng.integers(10_000, 1_000_000))
                units = math.ceil(int(block[i]) / 32)
                probe_mem = int(grid[i]) * units * 16
                w.launch(t_ns, [int(p) for p in ptr[i]], (int(grid[i]), 1, 1), (int(block[i]), 1, 1),
                         shared=int(rng.integers(0, 49152)), probe_bytes=16, probe_mem=probe_mem,
                         save=(f"./trace/Jan_23_06_27_37_268336/result/{t_ns / 1e9:.6f}.bin", probe_mem + 48),
                         timing=tuple(float(x) for x in dur[i, :3]),
                         benchmark=tuple(float(x) for x in dur[i]),
                         failed=bool(i % 997 == 996))
            text = w.text()
            fh.write(text)
            written += len(text)
            launches += batch
    return {"launches": launches, "bytes": path.stat().st_size}


# --------------------------------------------------------------------------------------------- bundles


def _make_bundle(out: Path, scale: str, seed: int) -> dict[str, Any]:
    from neutrino_ae.sample import ensure_sample_bundle

    ensure_sample_bundle(out / "bundle", scale=scale, seed=seed, progress=False)
    files = bundle_files(out)
    return {"scale": scale, "files": len(files), "bytes": sum(p.stat().st_size for p in files)}


def make_bundle_small(out: Path, size_mb: float | None, seed: int, smoke: bool) -> dict[str, Any]:
    return _make_bundle(out, "small", seed)


def make_bundle_paper(out: Path, size_mb: float | None, seed: int, smoke: bool) -> dict[str, Any]:
    # --smoke checks the harness, not the paper-scale bundle: it runs this case on the small one.
    return _make_bundle(out, "small" if smoke else "paper", seed)
