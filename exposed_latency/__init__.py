"""Fig. 12: Exposed latency vs. Nsight Compute. This folder owns the section end to end: its
analysis and CLI, its figures, how dynamic.ipynb collects it, its part of the sample bundle and its
GPU workloads. ``SECTION`` is what the rest of the suite knows about it (neutrino_ae.report.section).
"""

from neutrino_ae.report.section import Section

from .claims import CLAIMS

STATIC_PROSE = """
How much slower a workload runs while being profiled, Neutrino against Nsight Compute, for four
workloads (attention, group-GEMM, convolution, GEMM) and several probes. Bars are normalised to
the un-profiled run; Neutrino's bar is split into the time spent in the (probed) kernel, the
epilogue that copies the probe records back and writes the trace, and the prologue that sets the
probe buffers up, so the exposed part is visible. The original notebook's unused, hard-coded
proportions table is gone: every number here comes from the CSVs.
"""

DYNAMIC_PROSE = """
`exposed_latency/main.py` times one launch of each workload (attention, grouped GEMM, CUTLASS conv
and GEMM) per probe: Neutrino's prologue / kernel / epilogue from `event.log`, the un-probed
original, and the extra wall time of the same launch under Nsight Compute when `ncu` is on
PATH. The figure normalises both to the original kernel.
"""

SECTION = Section(
    name="exposed_latency",
    title="Exposed latency vs. Nsight Compute",
    paper_ref="Fig. 12",
    order=50,
    runtime="3 s small sample, 3 s paper-scale sample",
    inputs=tuple(f"exposed_latency/{w}.csv" for w in ("attn", "gmm", "conv", "gemm")),
    load="inputs:load",
    compute="analysis:compute",
    figures="analysis:figures",
    command_inputs="inputs ...",
    command="folder with {attn,gmm,conv,gemm}.csv, or CSV files",
    collect="main:collect",
    sample="sample:build",
    static_prose=STATIC_PROSE,
    dynamic_prose=DYNAMIC_PROSE,
    claims=CLAIMS,
    notebook_show=("exposed_latency.png",),  # one panel per workload; the per-workload PNGs are files
    notebook_text="folded",
    ptx_workloads=("attn and gmm: the suite's Triton kernels from sm_80 PTX; gemm and conv: CUDA C "
                   "tensor-core (wmma) stand-ins for the artifact's CUTLASS benchmarks."),
)
