"""Fig. 1 / Fig. 10a-c claims, checked on every run (neutrino_ae.report.claims)."""

from neutrino_ae.report.claims import Claim

CLAIMS = (
    Claim("accesses", "Every DMAT plot holds the kernel's global-memory accesses", "Fig. 1, Fig. 10a-c",
          left="{fig}.accesses", op=">", right=0),
    Claim("tiles", "The accesses stream over several pages (the tensors' tiles)", "Fig. 1, Fig. 10a-c",
          left="{fig}.pages", op=">=", right=2),
)
