"""Fig. 13's claims, checked on every run (neutrino_ae.report.claims)."""

from neutrino_ae.report.claims import Claim

CLAIMS = (
    Claim("shared-more-resident", "Shared scheduling keeps more blocks resident per SM than exclusive",
          "Fig. 13a/b", left="fig13b.max_resident_blocks_per_sm", op=">", right="fig13a.max_resident_blocks_per_sm"),
    Claim("tail", "The last wave leaves a visible tail: most SMs idle while a few finish", "Fig. 13c/d",
          left="last_wave_tail_idle_sm_fraction", op=">", right=0.1,
          expected="idle-SM share during the last-wave tail > 10 %"),
)
