"""Fig. 12's claims, checked on every run (neutrino_ae.report.claims)."""

from neutrino_ae.report.claims import Claim

CLAIMS = (
    Claim("below-ncu", "Neutrino's exposed latency is below Nsight Compute's, for every workload and probe",
          "Fig. 12", left="{workload}.{probe}.neutrino_ratio", op="<", right="{workload}.{probe}.ncu_ratio"),
)
