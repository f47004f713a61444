"""Fig. 11: Maximum probe memory usage. This folder owns the section end to end: its
analysis and CLI, its figures, how dynamic.ipynb collects it, its part of the sample bundle and its
GPU workloads. ``SECTION`` is what the rest of the suite knows about it (neutrino_ae.report.section).
"""

from neutrino_ae.report.section import Section

from .claims import CLAIMS

STATIC_PROSE = """
Neutrino allocates a buffer for the probes' records on every launch. Fig. 11 compares, per model
and probe, the **largest probe buffer** (the `[exec] probe-mem` lines of `event.log`) with the
**peak memory of the workload itself** (the `max memory:` line the workload prints in
`stdout.log`). Models: ResNet (batch 32), Stable Diffusion (batch 1), Mamba (batch 32),
Llama 1B/3B/8B (batch 32) and Llama 8B at batch 128 and 256.

As the original loop, it takes the first `max memory:` line of each `stdout.log` (the output
lists any file that holds several, with the values left out); unlike it, it names a missing or
unreadable log instead of stopping with a traceback.
"""

DYNAMIC_PROSE = """
`max_mem/collect.py` runs torch.compile'd sub-modules of each model under
`neutrino -p <probe> --memusage` (memory accounting only, no trace saving): compiling routes
every matmul to Triton/ATen kernels that Neutrino can probe (cuBLAS it cannot). The largest
probe buffer of any launch is compared with the workload's own peak memory. Without the
artifact's sub-module scripts (`collect_args={"max_mem": ["--compiled", DIR]}`) built-in
ResNet-block and Llama-layer sub-modules stand in; `sd-bs1` and `mamba-bs32` are then skipped.
"""

SECTION = Section(
    name="max_mem",
    title="Maximum probe memory usage",
    paper_ref="Fig. 11",
    order=40,
    runtime="1.5 s small sample, 2 s paper-scale sample",
    inputs=("max_mem",),
    load="inputs:load",
    compute="analysis:compute",
    figures="analysis:figures",
    command="max_mem folder: <model>/<probe>/<sub>/",
    collect="collect:collect",
    sample="sample:build",
    static_prose=STATIC_PROSE,
    dynamic_prose=DYNAMIC_PROSE,
    claims=CLAIMS,
    notebook_show=("max_mem.png",),
    notebook_text="folded",
    ptx_workloads=("each sub-module is built from the suite's CUDA C layer kernels (wmma GEMM and "
                   "implicit-GEMM convolution, RMSNorm, SiLU x up, add, batch-norm + ReLU) and its Triton "
                   "attention, at the model's sizes, instead of torch.compile'd modules (PyTorch 2.11 ships "
                   "no PTX); sd-bs1 and mamba-bs32 are stand-in blocks, not those models' own layers."),
)
