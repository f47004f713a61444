"""Inputs of the end-to-end benchmarks (``benchmarks/e2e.py``) that the kernel benchmarks do not have.

``make_dmat_random`` writes a complete Neutrino trace directory (``probe.toml``, ``event.log``,
``tensor.trace``, ``kernel/``, ``result/<seconds>.bin``) holding a thread-level **random-access**
dmat trace, so that both our ``dmat/dmat.py`` and the artifact's ``neutrino/tools/dmat.py`` name the
tensors from the same files:

* tensors of the paper's Fig. 1 shape (4, 32, 4096, 64) fp16: q, k, v, o of 64 MiB each (1024 pages
  of 64 KiB each) and the fp32 log-sum-exp (2 MiB), at cuMemAlloc-like 2 MiB-aligned pointers;
* 256-thread blocks (the Fig. 1 kernel's 8 warps), 256 records of 16 bytes per thread, so one block
  is 1 MiB of trace and the "64 MB" paper-size trace is 64 blocks (67.1 MB);
* every record is an access to a uniformly random 16-byte-aligned address of a random tensor (the
  worst case for a sparsifier: almost every record is its own (clock, page) pair);
* clocks are cycles since the thread's entry, as the dmat probe saves them: one non-decreasing
  sequence per warp (the 32 lanes issue together), gaps exponential with a mean of 1000 cycles, so
  clocks stay near 256k cycles at any size (below the artifact plotter's 5,000,000 cut-off);
* about 2 % of slots are left unfilled (zeros), as a thread that issues fewer accesses than the
  probe buffer holds leaves them; both tools skip or set aside those slots.

The artifact's plotter divides by ``pages // 99`` and so needs at least 99 distinct pages: the
random addresses over 4 x 1024 pages give it that at every size (the sample model's attention
trace at 64 MB touches 66 pages and makes the artifact plotter fail with ZeroDivisionError).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from neutrino_ae.formats.bintrace import TraceHeader
from neutrino_ae.formats.bintrace_write import SectionSpec, TraceWriter
from neutrino_ae.formats.level import Level
from neutrino_ae.formats.records import DMAT

MB = 1_000_000
THREADS = 256
RECORDS_PER_THREAD = 256
BLOCK_BYTES = THREADS * RECORDS_PER_THREAD * DMAT.itemsize  # 1 MiB
#: 1x = the 64 MB random-access trace of issue 10 (64 blocks of 1 MiB = 67.1 MB).
DMAT_RANDOM_BLOCKS_1X = 64
SHAPE = (4, 32, 4096, 64)
TENSORS = ("q", "k", "v", "o")
TRACE_DIR = "Jan_24_10_02_13_301122"
RESULT_SECONDS = 3.562871
PID = 301122
MEAN_GAP_CYCLES = 1000.0
UNFILLED_SHARE = 0.02
CHUNK_BLOCKS = 16
#: The raw trace, relative to the input directory (the launch's working directory, as event.log says).
RESULT_FILE = Path("trace", TRACE_DIR, "result", f"{RESULT_SECONDS:.6f}.bin")


def dmat_random_result(inp: Path) -> Path:
    """The raw trace inside an input made by :func:`make_dmat_random`."""
    return inp / RESULT_FILE


def dmat_random_files(inp: Path) -> list[Path]:
    return [dmat_random_result(inp)]


def make_dmat_random(out: Path, blocks: int, seed: int) -> dict[str, Any]:
    """Write ``out/trace/<TRACE_DIR>/`` with a random-access dmat trace of ``blocks`` 1 MiB blocks."""
    from neutrino_ae.formats.eventlog.write import EventLogWriter
    from neutrino_ae.formats.tensortrace import TensorEvent, write_tensor_trace
    from neutrino_ae.sample.emit import KernelBuild, write_trace_dir
    from neutrino_ae.sample.host import DeviceAllocator
    from neutrino_ae.sample.probes import PROBES

    blocks = max(1, int(blocks))
    tensor_bytes = int(np.prod(SHAPE)) * 2
    lse_bytes = int(np.prod(SHAPE[:3])) * 4
    alloc = DeviceAllocator(0x7F3A00000000 + (PID % 97) * (1 << 32))
    ptrs = {name: alloc.alloc(tensor_bytes) for name in TENSORS}
    ptrs["M"] = alloc.alloc(lse_bytes)
    sizes = {name: tensor_bytes for name in TENSORS} | {"M": lse_bytes}

    trace_dir = out / "trace" / TRACE_DIR
    nrec_bytes = RECORDS_PER_THREAD * DMAT.itemsize
    raw_bytes = blocks * THREADS * nrec_bytes
    params = [ptrs["q"], ptrs["k"], ptrs["v"], 0x3F000000, ptrs["M"], ptrs["o"], *SHAPE[1:], *SHAPE[:2]]
    ev = EventLogWriter().pid(PID).cmd(["python", "dmat/fig1.py"]).line("[info] init success")
    for name in (*TENSORS, "M"):
        ev.mem_alloc(ptrs[name], sizes[name])
    ev.launch(int(round(RESULT_SECONDS * 1e9)), params, (blocks, 1, 1), (THREADS, 1, 1), 49152,
              probe_bytes=nrec_bytes, probe_level="thread",
              save=(f"./{RESULT_FILE.as_posix()}", raw_bytes + 48))
    write_trace_dir(trace_dir, [PROBES["dmat"]], ev, [KernelBuild("_attn_fwd", len(params), 128, 136)])
    t0 = int(RESULT_SECONDS * 1e9) - 2_000_000
    rows = [TensorEvent("call", t0 + 100 * i, SHAPE if name != "M" else SHAPE[:3], sizes[name], ptrs[name],
                        "_attn_fwd", "dmat/common.py", 197, arg_name=name)
            for i, name in enumerate((*TENSORS, "M"))]
    rows.append(TensorEvent("ret", t0 + 900_000, SHAPE, tensor_bytes, ptrs["o"], "forward", "dmat/common.py", 196))
    write_tensor_trace(trace_dir / "tensor.trace", rows)

    rng = np.random.default_rng(seed + 7)
    bases = np.array([ptrs[n] for n in (*TENSORS, "M")], dtype=np.uint64)
    slots = np.array([sizes[n] // 16 for n in (*TENSORS, "M")], dtype=np.uint64)
    # q, k, v, o equally; the small lse tensor gets a few accesses
    weights = np.array([0.245, 0.245, 0.245, 0.245, 0.02])
    header = TraceHeader((blocks, 1, 1), (THREADS, 1, 1), 49152)
    warps = THREADS // 32
    unfilled = 0
    max_clock = 0
    with TraceWriter(dmat_random_result(out), header, [SectionSpec(Level.THREAD, nrec_bytes)],
                     "v1") as w:
        for lo in range(0, blocks, CHUNK_BLOCKS):
            nb = min(CHUNK_BLOCKS, blocks - lo)
            gaps = rng.exponential(MEAN_GAP_CYCLES, (nb, warps, 1, RECORDS_PER_THREAD))
            clock = np.cumsum(gaps, axis=-1).astype(np.uint64)
            clock = np.broadcast_to(clock, (nb, warps, 32, RECORDS_PER_THREAD)).reshape(nb, THREADS, -1)
            tensor = rng.choice(bases.size, size=clock.shape, p=weights)
            offset = (rng.random(clock.shape) * slots[tensor]).astype(np.uint64) * np.uint64(16)
            rec = np.empty(clock.shape, dtype=DMAT)
            rec["clock"] = clock
            rec["addr"] = bases[tensor] + offset
            # a thread's unused buffer tail stays zero (clock 0, address 0)
            used = RECORDS_PER_THREAD - rng.binomial(RECORDS_PER_THREAD, UNFILLED_SHARE, (nb, THREADS))
            empty = np.arange(RECORDS_PER_THREAD) >= used[..., None]
            rec[empty] = np.zeros((), dtype=DMAT)
            unfilled += int(empty.sum())
            max_clock = max(max_clock, int(clock.max()))
            w.write(rec)
    records = blocks * THREADS * RECORDS_PER_THREAD
    return {"blocks": blocks, "threads": blocks * THREADS, "records": records, "unfilled_records": unfilled,
            "raw_bytes": raw_bytes, "max_clock": max_clock, "pages": int(sum(-(-s // 65536) for s in sizes.values())),
            "tensor_ptrs": {n: int(p) for n, p in ptrs.items()},
            "model": {"shape": list(SHAPE), "access": "uniform random address of a random tensor",
                      "clock": f"per-warp cumulative exponential gaps, mean {MEAN_GAP_CYCLES:g} cycles",
                      "unfilled_share": UNFILLED_SHARE}}
