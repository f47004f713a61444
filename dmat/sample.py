"""``dmat/``: Fig. 1 / Fig. 10a-c. Raw dmat traces (small scales) and the sparsified ``.dmat`` files.

At ``paper`` scale the raw traces would be several GB each, so no ``result/*.bin`` is written (the
trace dir keeps probe.toml, event.log, tensor.trace and kernel/ for tensor naming): the model is
evaluated per warp and streamed into the ``.dmat`` in bounded memory (:mod:`.sample_stream`), which
gives the same file as sparsifying the per-thread records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from neutrino_ae.formats.bintrace import TraceHeader, open_trace
from neutrino_ae.formats.bintrace_write import SectionSpec, TraceWriter
from neutrino_ae.formats.dmat import DmatData, page_of, write_dmat
from neutrino_ae.formats.dmat.sparsify import sparsify
from neutrino_ae.formats.eventlog.write import EventLogWriter
from neutrino_ae.formats.level import Level
from neutrino_ae.formats.records import DMAT
from neutrino_ae.formats.tensortrace import TensorEvent, write_tensor_trace
from neutrino_ae.sample.device import Device, blocks_per_sm
from neutrino_ae.sample.emit import KernelBuild, result_path, write_trace_dir
from neutrino_ae.sample.generate import SampleContext, generator
from neutrino_ae.sample.host import DeviceAllocator
from neutrino_ae.sample.probes import PROBES

from . import FIGURES
from .sample_model import (
    KERNELS,
    TENSORS,
    AttnLayout,
    AttnShape,
    DmatParams,
    build_template,
    expected_accesses,
    generate_chunks,
    iteration_cycles,
)
from .sample_stream import StreamedDmat, write_model_dmat

#: This section's sample parameters by scale: the q/k/v shape, and whether raw traces are written
#: (at ``paper`` scale they would be GBs, so the model streams straight into the sparsifier).
PARAMS = {"tiny": DmatParams(AttnShape(1, 2, 256, 64), write_raw=True),
          "small": DmatParams(AttnShape(1, 8, 512, 64), write_raw=True),
          "paper": DmatParams(AttnShape(4, 32, 4096, 64), write_raw=False, blocks_per_chunk=16)}

#: (trace dir, result file seconds) of each figure's raw trace, in the order of FIGURES.
TRACE_DIRS = dict(zip(FIGURES, (("Jan_24_10_02_13_301122", 3.562871), ("Jan_24_10_09_40_301533", 3.118406),
                                ("Jan_24_10_15_02_302011", 2.904117), ("Jan_24_10_21_37_302490", 2.877305)),
                      strict=True))


def _caller(fig: str, keyword: str) -> tuple[str, str, int]:
    """(function, file, line) that tensor.trace names for the workload's call: the Triton workloads
    call a shared ``forward``, the SDPA ones ``scaled_dot_product_attention`` in their own script."""
    if keyword == "attn":
        return ("forward", "dmat/common.py", 196)
    return ("scaled_dot_product_attention", f"dmat/{fig}.py", 16)

Bar = Callable[[Iterable[Any], int, str], Iterable[Any]]


def _layout(fig: str, shape: AttnShape, pid: int) -> AttnLayout:
    alloc = DeviceAllocator(0x7F3A00000000 + (pid % 97) * (1 << 32))
    ptrs = {name: alloc.alloc(shape.tensor_bytes) for name in ("q", "k", "v", "o")}
    ptrs["lse"] = alloc.alloc(shape.lse_bytes)
    return AttnLayout(KERNELS[fig], shape, ptrs)


def _params_line(lay: AttnLayout) -> list[int]:
    p, s = lay.ptrs, lay.shape
    if lay.kernel.keyword == "attn":
        strides = [s.heads * s.seq * s.head_dim, s.seq * s.head_dim, s.head_dim, 1] * 4
        half_as_bits = 0x3F000000  # sm_scale = 0.5 as fp32 bits
        return [p["q"], p["k"], p["v"], half_as_bits, p["lse"], p["o"], *strides, s.batch, s.heads, s.seq]
    # SDPA kernels take a params struct; its pointer fields are listed (our simplification).
    return [p["q"], p["k"], p["v"], p["o"], p["lse"]]


def _tensor_trace(fig: str, lay: AttnLayout, t0: int) -> list[TensorEvent]:
    s = lay.shape
    shp = (s.batch, s.heads, s.seq, s.head_dim)
    func, file, line = _caller(fig, lay.kernel.keyword)
    rows = []
    for i, name in enumerate(("q", "k", "v")):
        rows.append(TensorEvent("call", t0 + 1000 * i, shp, s.tensor_bytes, lay.ptrs[name], func, file, line,
                                arg_name=name))
    kern = lay.kernel.name if lay.kernel.keyword == "attn" else "_efficient_attention_forward" \
        if lay.kernel.keyword == "fmha" else "_scaled_dot_product_flash_attention"
    for i, name in enumerate(("q", "k", "v", "o")):
        rows.append(TensorEvent("call", t0 + 5000 + 100 * i, shp, s.tensor_bytes, lay.ptrs[name], kern, file,
                                line + 1, arg_name=name))
    rows.append(TensorEvent("call", t0 + 5400, shp[:3], s.lse_bytes, lay.ptrs["lse"], kern, file, line + 1,
                            arg_name=lay.kernel.lse_name))
    rows.append(TensorEvent("ret", t0 + 900000, shp, s.tensor_bytes, lay.ptrs["o"], func, file, line))
    return rows


def _write_one(root: Path, fig: str, params: DmatParams, device: Device, rng: np.random.Generator,
               bar: Bar) -> dict[str, Any]:
    dirname, seconds = TRACE_DIRS[fig]
    pid = int(dirname.rsplit("_", 1)[1])
    lay = _layout(fig, params.shape, pid)
    k, s = lay.kernel, lay.shape
    template = build_template(k, s)
    nrec = int(template.tensor.size)
    trace_dir = root / "dmat" / "raw" / fig / dirname
    probe = PROBES["dmat"]
    ev = EventLogWriter().pid(pid).cmd(["python", f"dmat/{fig}.py"]).line("[info] init success")
    for name in ("q", "k", "v", "o"):
        ev.mem_alloc(lay.ptrs[name], s.tensor_bytes)
    ev.mem_alloc(lay.ptrs["lse"], s.lse_bytes)
    header = TraceHeader(lay.grid, (k.threads, 1, 1), k.smem)
    raw_bytes = lay.blocks * k.threads * nrec * 16
    rel = f"./trace/{dirname}/result/{seconds:.6f}.bin"
    ev.launch(int(round(seconds * 1e9)), _params_line(lay), lay.grid, (k.threads, 1, 1), k.smem,
              probe_bytes=nrec * 16, probe_level="thread",
              save=(rel, raw_bytes + 48) if params.write_raw else None)
    regs_probed = min(255, k.regs + params.extra_regs_dmat)
    write_trace_dir(trace_dir, [probe], ev, [KernelBuild(k.name, len(_params_line(lay)), k.regs, regs_probed)])
    write_tensor_trace(trace_dir / "tensor.trace", _tensor_trace(fig, lay, int(seconds * 1e9) - 2_000_000))

    dmat_path = root / "dmat" / f"{fig}.dmat"
    if params.write_raw:
        n_chunks = -(-lay.blocks // params.blocks_per_chunk)
        chunks = generate_chunks(lay, device, rng, params.blocks_per_chunk)
        out = result_path(trace_dir, seconds)
        with TraceWriter(out, header, [SectionSpec(Level.THREAD, nrec * 16)], layout="v1") as w:
            for c in bar(chunks, n_chunks, f"dmat {fig} raw"):
                w.write(c)
        trace = open_trace(out, levels=["thread"])
        data = sparsify(c for _, c in trace.iter_chunks(0, DMAT, chunk_bytes=16 << 20))
        write_dmat(dmat_path, data)
        summary = _summary(lay, data)
    else:
        # No raw trace: the same records, evaluated per warp and streamed into the .dmat (sample_stream.py).
        dmat_path.parent.mkdir(parents=True, exist_ok=True)
        summary = write_model_dmat(dmat_path, lay, device, rng, params.blocks_per_chunk, bar, f"dmat {fig}")
    return {
        "kernel": k.name,
        "keyword": k.keyword,
        "config": {"block_m": k.block_m, "block_n": k.block_n, "warps": k.warps, "stages": k.stages,
                   "schedule": k.schedule, "grid_order": k.grid_order},
        "grid": list(lay.grid),
        "blocks": lay.blocks,
        "threads_per_block": k.threads,
        "blocks_per_sm": blocks_per_sm(device, k.threads, k.regs, k.smem),
        "records_per_thread": nrec,
        "iteration_cycles": iteration_cycles(k, s, device),
        "kv_iterations": -(-s.seq // k.block_n),
        "tensor_ptrs": {n: int(p) for n, p in lay.ptrs.items()},
        "tensor_bytes": {n: (s.tensor_bytes if n != "lse" else s.lse_bytes) for n in TENSORS},
        "lse_arg_name": k.lse_name,
        "expected_accesses": expected_accesses(lay),
        "accesses_in_dmat": summary.accesses_by_tensor,
        "num_pages": int(summary.pages.size),
        "num_clocks": summary.num_clocks,
        "max_clock": summary.max_clock,
        "raw_trace": (trace_dir / "result" / f"{seconds:.6f}.bin").relative_to(root).as_posix()
        if params.write_raw else None,
        "dmat": f"dmat/{fig}.dmat",
    }


def _summary(lay: AttnLayout, data: DmatData) -> StreamedDmat:
    """What the ground truth says of a sparsified ``.dmat`` (as :func:`write_model_dmat` returns it)."""
    pages = page_of(data.pair_page)
    s = lay.shape
    per_tensor = {}
    for name in TENSORS:
        lo = lay.ptrs[name]
        hi = lo + (s.tensor_bytes if name != "lse" else s.lse_bytes)
        sel = (pages >= lo - (lo & 0xFFFF)) & (pages < hi)
        per_tensor[name] = int(data.pair_count[sel].sum(dtype=np.uint64))
    return StreamedDmat(data.pages, int(data.clocks.size), int(data.clocks.max()) if data.clocks.size else 0,
                        per_tensor, data.unfilled)


def _build(root: Path, device: Device, params: DmatParams, rngs: dict[str, np.random.Generator],
          bar: Bar) -> dict[str, Any]:
    truth: dict[str, Any] = {"shape": [params.shape.batch, params.shape.heads, params.shape.seq,
                                       params.shape.head_dim], "dtype": "float16"}
    for fig in FIGURES:
        truth[fig] = _write_one(root, fig, params, device, rngs[fig], bar)
    return truth


def build(root: Path, ctx: SampleContext) -> dict[str, Any]:
    """The SECTION.sample entry: write ``root/dmat/`` of the sample bundle; return its ground truth."""
    params = PARAMS[ctx.scale]
    ctx.model["dmat"] = {**asdict(params), "kernels": {fig: k.to_dict() for fig, k in KERNELS.items()}}
    return _build(root, ctx.cfg.device, params,
                  dict(zip(FIGURES, (generator(s) for s in ctx.seed.spawn(len(FIGURES))), strict=True)), ctx.bar)
