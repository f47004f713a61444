"""Fig. 11's claims, checked on every run (neutrino_ae.report.claims)."""

from neutrino_ae.report.claims import Claim

CLAIMS = (
    Claim("dmat-largest", "dmat needs the most probe memory of the probes, for every model", "Fig. 11",
          left="{model}.dmat.probe_mem_max", op=">=", right="{model}.{probe}.probe_mem_max"),
    Claim("block-sched-small", "block_sched's buffer is small next to the workload's own peak memory", "Fig. 11",
          left="{model}.block_sched.probe_over_workload", op="<", right=0.1,
          expected="block_sched probe memory < 10 % of the workload's peak"),
)
