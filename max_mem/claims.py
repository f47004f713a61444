"""Fig. 11's claims, checked on every run (neutrino_ae.report.claims).

Shape claims hold on any bundle; the ground-truth claims judge a sample bundle against the memory the
execution model injected (docs/sample-model.md, Fig. 11): byte counts, printed as integers.
"""

from neutrino_ae.report.claims import Claim, Truth

_EXACT = "the logs print byte counts as integers and the model computes the same integers: nothing to round"

CLAIMS = (
    Claim("dmat-largest", "dmat needs the most probe memory of the probes, for every model", "Fig. 11",
          left="{model}.dmat.probe_mem_max", op=">=", right="{model}.{probe}.probe_mem_max"),
    Claim("block-sched-small", "block_sched's buffer is small next to the workload's own peak memory", "Fig. 11",
          left="{model}.block_sched.probe_over_workload", op="<", right=0.1,
          expected="block_sched probe memory / workload peak < 0.1 (10 %)"),
    Truth("probe-mem-truth", "The largest probe buffer per model x probe is the injected one",
          "sample model: ground_truth.max_mem.<model>.<probe>.max_probe_mem (grid x units x bytes per launch)",
          key="{model}.{probe}.probe_mem_max", why=_EXACT),
    Truth("workload-mem-truth", "The workload's peak memory per model x probe is the injected one",
          "sample model: ground_truth.max_mem.<model>.<probe>.max_memory (weights + input + two largest outputs)",
          key="{model}.{probe}.workload_max", why=_EXACT),
    Truth("ratio-truth", "Probe memory over the workload's peak, as injected",
          "sample model: max_probe_mem / max_memory", key="{model}.{probe}.probe_over_workload", rtol=1e-9,
          why="a ratio of two exact integers"),
)
