"""Fig. 1, Fig. 10a/b/c: Densified memory access timeline (DMAT). This folder owns the section end to end: its
inputs and analysis (on the section driver), its figures, how dynamic.ipynb collects it, its part of the
sample bundle and its GPU workloads. ``SECTION`` is what the rest of the suite knows about it
(neutrino_ae.report.section); :func:`dmat_figure` is one figure without the command line.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

from neutrino_ae.report.section import Section

from .claims import CLAIMS

if TYPE_CHECKING:
    from neutrino_ae.report.results import SectionResult


class Figure(NamedTuple):
    paper_ref: str  # "Fig. 10a"
    shows: str  # what it plots (the notebook's caption after the reference)
    keyword: str  # the ``neutrino -k`` keyword that picks its kernel in the workload ``dmat/<key>.py``
    ptx: str  # its ptx-family kernel (dmat/ptx_workload.py): a compiled Triton config, or a dmat/attention.cu kernel
    ptx_shows: str  # what that kernel is, in the figure of a ptx run (a stand-in says so)


#: The DMAT figures, in the paper's order, by key: input ``dmat/<key>.dmat`` (raw traces under
#: ``dmat/raw/<key>/``), workload ``dmat/<key>.py``, figure ``<key>.png``. The one list of them:
#: collection, the sample model and the notebook cells all iterate over it.
FIGURES: dict[str, Figure] = {
    "fig1": Figure("Fig. 1", "Triton FlashAttention-2", "attn", "attn_fwd_m128",
                   "workload: the suite's Triton FA-2, sm_80 PTX"),
    "fig10a": Figure("Fig. 10a", "Triton FlashAttention-2, BLOCK_M 64, 4 warps", "attn", "attn_fwd_m64",
                     "workload: the suite's Triton FA-2, sm_80 PTX"),
    "fig10b": Figure("Fig. 10b", "PyTorch SDPA, flash backend", "flash", "flash_fwd_kernel",
                     "workload: flash_fwd_kernel, a CUDA C stand-in for SDPA's flash back end"),
    "fig10c": Figure("Fig. 10c", "PyTorch SDPA, memory-efficient backend", "fmha", "fmha_fwd_kernel",
                     "workload: fmha_fwd_kernel, a CUDA C stand-in for SDPA's memory-efficient back end"),
}

STATIC_PROSE = """
A **densified memory access timeline** (DMAT) plots every global-memory access of a kernel:
time (GPU clock since kernel entry) on the x axis, memory page on the y axis, colour for how many
accesses hit that page at that time. It shows access patterns that counters cannot, such as the
streaming of K/V tiles in attention kernels. Four plots, all of attention kernels with q, k, v of
shape (4, 32, 4096, 64) in fp16 (the sample bundle models a smaller shape, so its plots are shorter):

* **Fig. 1**: Triton FlashAttention-2 (BLOCK_M 128, BLOCK_N 64, 2 stages, 8 warps);
* **Fig. 10a**: the same kernel with BLOCK_M 64 and 4 warps;
* **Fig. 10b**: PyTorch SDPA, flash backend; **Fig. 10c**: PyTorch SDPA, memory-efficient backend.

The artifact's plotter silently dropped every access after clock 5,000,000; here the whole
kernel is plotted.
"""

DYNAMIC_PROSE = """
`neutrino -p dmat -k <keyword>` records the clock and address of every global load/store of the
matching kernel. The collector sparsifies each raw trace into the paper's `.dmat` file (accesses
per 64 KiB page per clock), which the DMAT plotter of the static notebook reads. Workloads,
all with q, k, v of shape (4, 32, 4096, 64) fp16, seed 42, scale 0.5, non-causal:
`dmat/fig1.py` (our Triton FlashAttention-2, BLOCK_M 128 / BLOCK_N 64 / 2 stages / 8 warps),
`dmat/fig10a.py` (64 / 64 / 2 / 4), `dmat/fig10b.py` (PyTorch SDPA, flash backend, keyword
`flash`), `dmat/fig10c.py` (SDPA memory-efficient backend, keyword `fmha`).

DMAT traces are large and slow to collect (minutes per figure): `collect_args={"dmat": ["--figures",
"fig1"]}` collects only the figures named. The pattern depends on the GPU
(the paper notes an RTX 3080 reproduces its plots exactly) and varies a little run to run.
"""

SECTION = Section(
    name="dmat",
    title="Densified memory access timeline (DMAT)",
    paper_ref="Fig. 1, Fig. 10a/b/c",
    order=20,
    runtime="3 s small sample, 16 s paper-scale sample",
    inputs=tuple(f"dmat/{key}.dmat" for key in FIGURES),
    optional_inputs=("dmat/raw/**/*",),
    load="inputs:load",
    compute="analysis:compute",
    figures="analysis:figures",
    command_inputs="input",
    command="dmat result .bin, .dmat file, or trace directory",
    command_default=False,
    collect="collect:collect",
    sample="sample:build",
    static_prose=STATIC_PROSE,
    dynamic_prose=DYNAMIC_PROSE,
    claims=CLAIMS,
    notebook_figures=tuple((f"{key}.png", f"{fig.paper_ref}: {fig.shows}") for key, fig in FIGURES.items()),
    ptx_workloads=("Fig. 1 / 10a: the suite's Triton FlashAttention-2 itself (sm_80 PTX compiled ahead of "
                   "time); Fig. 10b: `flash_fwd_kernel`, a CUDA C flash-style stand-in for SDPA's flash "
                   "backend; Fig. 10c: `fmha_fwd_kernel`, a CUDA C memory-efficient-style stand-in for "
                   "SDPA's memory-efficient backend (PyTorch 2.11 ships no PTX). q, k, v of shape (2, 8, "
                   "1024, 64) by default, smaller than the paper's (4, 32, 4096, 64)."),
)


def dmat_figure(path: str | os.PathLike[str], out_dir: str | os.PathLike[str], name: str | None = None,
                xbins: int | None = None, ybins: int | None = None) -> SectionResult:
    """What ``python dmat/dmat.py <path> --out <out_dir> [--name] [--xbins] [--ybins]`` computes and writes,
    drawn here and not printed (for tests, benchmarks, notebooks); ``plot`` holds the binned arrays."""
    from neutrino_ae.report.section import driver

    source = driver.source_of([path], {"name": name, "xbins": xbins, "ybins": ybins}, out_dir)
    results = driver.compute(SECTION, source)
    done = driver.finish(SECTION, source, results, out_dir)
    done.plot = list(results.values())[-1].plots["plot"]  # type: ignore[attr-defined]
    return done
