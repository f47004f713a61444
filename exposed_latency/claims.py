"""Fig. 12's claims, checked on every run (neutrino_ae.report.claims).

Shape claims hold on any bundle; the ground-truth claims judge a sample bundle against the ratios the
execution model computed before it wrote the times into the CSVs.
"""

from neutrino_ae.report.claims import Claim, Truth

_ROUNDED = ("the CSVs hold times in ms to 6 decimals; the model's own ratios agree with ratios of those "
            "rounded times to < 0.01 %, so 1 % is rounding with room to spare (a time read from the wrong "
            "column or scaled is off by far more)")

CLAIMS = (
    Claim("below-ncu", "Neutrino's exposed latency is below Nsight Compute's, for every workload and probe",
          "Fig. 12", left="{workload}.{probe}.neutrino_ratio", op="<", right="{workload}.{probe}.ncu_ratio"),
    # The order of the probes within a workload, which a swap of two probes' rows breaks.
    Claim("block-sched-cheapest", "block_sched exposes the least latency of the probes, for every workload",
          "Fig. 12 (block_sched saves 16 B per warp, the other probes 8 B per thread: the smallest buffer to "
          "set up and copy back)",
          left="{workload}.block_sched.neutrino_ratio", op="<", right="{workload}.{probe}.neutrino_ratio"),
    Truth("neutrino-ratio-truth", "Neutrino's time over the original, as injected", "sample model: "
          "ground_truth.exposed_latency.<workload>.neutrino_over_original", key="{workload}.{probe}.neutrino_ratio",
          rtol=0.01, why=_ROUNDED),
    Truth("ncu-ratio-truth", "Nsight Compute's time over the original, as injected", "sample model: "
          "ground_truth.exposed_latency.<workload>.ncu_over_original", key="{workload}.{probe}.ncu_ratio",
          rtol=0.01, why=_ROUNDED),
    # The stacked Neutrino bar's segments, each judged: the two ratios above hold when the parts are
    # swapped or mis-scaled among themselves (their sum, the bar's top, is its own CSV column).
    Truth("segments-truth", "Each segment of the Neutrino bar (prologue, kernel, epilogue time over the original) "
          "is the injected one", "sample model: ground_truth.exposed_latency.<workload>.<part>_over_original",
          key=tuple(f"{{workload}}.{{probe}}.{part}_height" for part in ("prologue", "kernel", "epilogue")),
          rtol=0.01, why=_ROUNDED + "; the smallest part in the sample, gemm's kernel (~0.009 ms), rounds by < 0.01 %"),
)
