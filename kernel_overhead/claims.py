"""Table 2's claims, checked on every run (neutrino_ae.report.claims)."""

from neutrino_ae.report.claims import Claim

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
)
