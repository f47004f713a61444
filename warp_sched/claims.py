"""Fig. 13's claims, checked on every run (neutrino_ae.report.claims).

Shape claims hold on any bundle; the ground-truth claims judge a sample bundle against the schedule
the execution model simulated (docs/sample-model.md, "Sec. 7 warp scheduling").
"""

from neutrino_ae.report.claims import Claim, Truth

CLAIMS = (
    Claim("shared-more-resident", "Shared scheduling keeps more blocks resident per SM than exclusive",
          "Fig. 13a/b", left="fig13b.max_resident_blocks_per_sm", op=">", right="fig13a.max_resident_blocks_per_sm"),
    Claim("tail", "The last wave leaves a visible tail: most SMs idle while a few finish", "Fig. 13c/d",
          left="last_wave_tail_idle_sm_fraction", op=">", right=0.1,
          expected="idle-SM share during the last-wave tail > 0.1 (10 %)"),
    Truth("makespan-truth", "Each trace's makespan (first warp start to last warp end), and their ratio",
          "sample model: ground_truth.warp_sched.<trace>.makespan_cycles, shared_vs_exclusive_makespan",
          key=("{fig}.makespan_cycles", "shared_vs_exclusive_makespan"), rtol=1e-9,
          why="warp records are whole cycles and the model's makespan is taken from the same integer clocks"),
    Truth("resident-truth", "The most blocks resident on one SM at once",
          "sample model: ground_truth.warp_sched.<trace>.max_resident_blocks_per_sm",
          key="{fig}.max_resident_blocks_per_sm", why="a count of blocks: exact"),
    Truth("tail-share-truth", "The last-wave tail's share of the kernel time, per trace",
          "sample model: ground_truth.warp_sched.<trace>.tail_fraction (from the first time an SM runs out of "
          "work for good)", key=("{fig}.last_wave_tail_fraction", "last_wave_tail_fraction"), atol=0.02,
          why="the model marks an SM out of work at its last block's end; the analysis sees that SM's last warp, "
              "which ends up to 8 cycles earlier: far below 2 points of the kernel's time"),
    Truth("tail-idle-truth", "The idle-SM share during the last-wave tail",
          "sample model: ground_truth.warp_sched.tail.tail_idle_sm_fraction",
          key="last_wave_tail_idle_sm_fraction", atol=0.02,
          why="as the tail share: a few cycles per SM of a tail thousands of cycles long"),
)
