"""DMAT benchmark: a Fig. 1-kernel (Triton FA-2, BLOCK_M 128, BLOCK_N 64, 8 warps) thread-level dmat
trace of a chosen size from the sample model's attention access streams, and the timed
``.bin → .dmat → PNG`` pipeline of the dmat section.

The paper's shape (4, 32, 4096, 64) gives 4096 blocks of 1.09 MB each (4.4 GB raw); the benchmark
keeps seq 4096 and head dim 64 and picks the number of (batch*head) rows that reaches the size.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from neutrino_ae.formats.bintrace import TraceHeader
from neutrino_ae.formats.bintrace_write import SectionSpec, TraceWriter
from neutrino_ae.formats.level import Level
from neutrino_ae.formats.records import DMAT

SEQ = 4096
FIG = "fig1"


def write_dmat_trace(path: Path, target_bytes: int, seed: int) -> dict[str, Any]:
    """Write a thread-level dmat trace of about ``target_bytes`` (whole rows of 32 m-tile blocks)."""
    from neutrino_ae.report.section.registry import section_module
    from neutrino_ae.sample.device import Device

    _layout = section_module("dmat", "sample")._layout
    model = section_module("dmat", "sample_model")
    AttnShape, build_template, generate_chunks, kernel_grid = (
        model.AttnShape, model.build_template, model.generate_chunks, model.kernel_grid)
    kernel = model.KERNELS[FIG]
    # Tiny (smoke) sizes use a short sequence so one (batch*head) row of blocks is not already 35 MB.
    seq = SEQ if target_bytes >= 64_000_000 else 512
    one = AttnShape(batch=1, heads=1, seq=seq)
    nrec = int(build_template(kernel, one).tensor.size)
    m_tiles = kernel_grid(kernel, one)[0]
    row_bytes = m_tiles * kernel.threads * nrec * DMAT.itemsize
    heads = max(1, math.ceil(target_bytes / row_bytes))
    shape = AttnShape(batch=1, heads=heads, seq=seq)
    layout = _layout(FIG, shape, 301122)
    grid = kernel_grid(kernel, shape)
    header = TraceHeader(grid, (kernel.threads, 1, 1), kernel.smem)
    rng = np.random.default_rng(seed + 2)
    with TraceWriter(path, header, [SectionSpec(Level.THREAD, nrec * DMAT.itemsize)], "v1") as w:
        for chunk in generate_chunks(layout, Device(), rng, 16):
            w.write(chunk)
    return {"blocks": layout.blocks, "threads": layout.blocks * kernel.threads, "records_per_thread": nrec,
            "records": layout.blocks * kernel.threads * nrec, "grid": list(grid),
            "model": {"kernel": FIG, "shape": [1, heads, seq, shape.head_dim],
                      "generator": "dmat.sample_model.generate_chunks"}}


def bin_to_png(trace_path: Path, out: Path) -> dict[str, Any]:
    """The dmat section on a raw trace: chunked sparsification, ``.dmat`` written, binned, PNG drawn."""
    import importlib

    from neutrino_ae.report.section.registry import get

    dmat_figure = importlib.import_module(get("dmat").package).dmat_figure

    res = dmat_figure(trace_path, out, name="bench")
    png = res.files["bench.png"]
    return {"accesses": int(res.data["accesses"]), "pages": int(res.data["pages"]),
            "clock_entries": int(res.data["clock_entries"]), "png_bytes": png.stat().st_size,
            "dmat_bytes": Path(res.data["sparsified_dmat"]).stat().st_size if res.data["sparsified_dmat"] else 0}
