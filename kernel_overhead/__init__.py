"""Table 2: Kernel slowdown and additional registers. This folder owns the section end to end: its
analysis and CLI, its figures, how dynamic.ipynb collects it, its part of the sample bundle and its
GPU workloads. ``SECTION`` is what the rest of the suite knows about it (neutrino_ae.report.section).
"""

from neutrino_ae.report.section import Section

from .claims import CLAIMS

STATIC_PROSE = """
The cost of probing, per kernel and probe (`block_sched`, `gmem_bytes`, `tensorop_count`, `dmat`):

* **slowdown**: probed kernel time divided by the time of the same kernel without probes
  (Neutrino's `--benchmark` mode runs both and logs the ratio per launch; the table shows the
  median over launches, so one disturbed launch does not move a row);
* **extra registers**: registers of the probed kernel minus those of the original, from the
  assembler's `Used N registers` lines.

Kernels: CUTLASS GEMM, Stream-K GEMM and Conv2D; Triton group-GEMM and FlashAttention-2; PyTorch
normalisation, softmax, reductions, pooling, embedding and gather. The original notebook printed
the three groups from three scripts; here they form one table. The CUTLASS and Triton rows (the
**first five rows of Table 2**) were re-collected after the paper and differ slightly from it.
"""

DYNAMIC_PROSE = """
`kernel_overhead/collect.py` runs each kernel under `neutrino --benchmark -p <probe> --filter
distribution:copy`: the probed kernel and the pruned original are both timed, so the slowdown is
probed / original, and `process.log` gives the extra registers (probed − pruned). Kernels:
CUTLASS GEMM, Stream-K GEMM and Conv2D (each under its own key; they need the artifact's CUTLASS
build, otherwise those rows are skipped), Triton grouped GEMM and FlashAttention-2, PyTorch
Batch/LayerNorm, Softmax, Sum, Max/AvgPool, Embedding, Gather. Probes: block_sched, gmem_bytes,
tensorop_count, dmat. The paper's first five rows came from traces that were later re-collected:
expect similar, not identical, values.
"""

SECTION = Section(
    name="kernel_overhead",
    title="Kernel slowdown and additional registers",
    paper_ref="Table 2",
    order=30,
    runtime="1 s small sample, 1 s paper-scale sample",
    inputs=("kernel_overhead/cutlass_op", "kernel_overhead/triton_op", "kernel_overhead/pytorch_op"),
    load="inputs:load",
    compute="table:compute",
    figures="table:figures",
    command="kernel_overhead folder or one group folder",
    collect="collect:collect",
    sample="sample:build",
    static_prose=STATIC_PROSE,
    dynamic_prose=DYNAMIC_PROSE,
    claims=CLAIMS,
    # Table 2 is a table: shown in the paper's layout (kernels x probes, slowdown and registers), from the
    # section's HTML page; the full table is kernel_overhead.csv beside it, the heatmap a file.
    notebook_show=("kernel_overhead.html",),
    notebook_text="folded",
    ptx_workloads=("pytorch_op rows: CUDA C stand-ins for the PyTorch operators at their shapes (layer_norm, "
                   "softmax, reduce_sum, max_pool2d, embedding, gather kernels; PyTorch 2.11 ships no PTX); "
                   "triton_op rows: the suite's Triton attn and gmm from sm_80 PTX; cutlass_op rows only "
                   "where the artifact's CUTLASS benchmarks are built."),
)
