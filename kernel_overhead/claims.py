"""Table 2's claims, checked on every run (neutrino_ae.report.claims).

Shape claims hold on any bundle; the ground-truth claims judge a sample bundle against the costs the
execution model injected (docs/sample-model.md, "Probe costs").
"""

from neutrino_ae.report.claims import Claim, Truth

#: "Few" extra registers, as this suite reads Table 2 (its per-probe register columns are small
#: numbers); the bound is ours, not a number the paper publishes.
FEW_REGISTERS = 32

CLAIMS = (
    Claim("dmat-costliest", "dmat (a record per memory access) is the most expensive probe for every kernel",
          "Table 2", left="{group}.{kernel}.dmat.slowdown", op=">=", right="{group}.{kernel}.{probe}.slowdown"),
    # Signed, as ptxas gives it: ptxas allocates the probed and pruned builds each on its own and can
    # give the probed one fewer registers (a negative value, marked in the table), which is no overhead.
    Claim("few-registers", "Probes cost few extra registers per thread (probed - pruned, as ptxas allocates them)",
          f"Table 2: extra registers per kernel x probe are small numbers (the bound {FEW_REGISTERS} is this "
          "suite's reading of 'small')",
          left="{group}.{kernel}.{probe}.extra_registers", op="<=", right=FEW_REGISTERS,
          expected=f"probed - pruned <= {FEW_REGISTERS} registers for every kernel x probe "
                   "(a negative value, a probed build ptxas allocated fewer registers, holds)"),
    Truth("slowdown-truth", "Each kernel x probe slowdown is the injected one",
          "sample model: ground_truth.kernel_overhead.rows[].model_slowdown (noise-free), the median over "
          "the cell's launches where a folder holds several kernels",
          key="{group}.{kernel}.{probe}.slowdown", rtol=0.05,
          why="each probed and pruned time carries lognormal noise (sigma 1 %), so one launch's ratio ~1.4 %; "
              "the median of 3-5 launches stays within ~3.5 sigma: 5 %"),
    Truth("registers-truth", "Each kernel x probe's extra registers are the injected ones",
          "sample model: ground_truth.kernel_overhead.rows[].extra_regs (the largest of a folder's kernels)",
          key="{group}.{kernel}.{probe}.extra_registers",
          why="process.log prints each build's register count as an integer: nothing to round"),
)
