"""Table 2's claims, checked on every run (neutrino_ae.report.claims)."""

from neutrino_ae.report.claims import Claim

CLAIMS = (
    Claim("dmat-costliest", "dmat (a record per memory access) is the most expensive probe for every kernel",
          "Table 2", left="{group}.{kernel}.dmat.slowdown", op=">=", right="{group}.{kernel}.{probe}.slowdown"),
    Claim("registers", "Probing adds registers, never removes them", "Table 2",
          left="{group}.{kernel}.{probe}.extra_registers", op=">=", right=0),
)
