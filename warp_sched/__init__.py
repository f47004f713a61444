"""Fig. 13a-d: Warp scheduling and the tailing effect. This folder owns the section end to end: its
analysis (on the section driver), its figures, how dynamic.ipynb collects it, its part of the sample bundle and its
GPU workloads. ``SECTION`` is what the rest of the suite knows about it (neutrino_ae.report.section).
"""

from neutrino_ae.report.section import Section

from .claims import CLAIMS

STATIC_PROSE = """
Section 7 of the paper uses warp-level timing to look at how warps share an SM:

* **Fig. 13a / 13b**: per-SM warp timelines (one row per warp slot, coloured by block) of the same
  attention kernel under exclusive and under shared warp scheduling;
* **Fig. 13c / 13d**: the **tailing effect**: active warps and busy SMs over time; in the last wave
  most SMs run out of work while a few still finish theirs. 13d also has a zoom on the tail.

The original Fig. 13c/d input was a Python pickle (`warp_sched/tmp.pkl`); unpickling a downloaded
file can run arbitrary code, so this suite refuses it and reads the tail-effect input from a
regular trace directory, `warp_sched/tail/<tracedir>/` (the sample bundle has one; `dynamic.ipynb`
collects one on a GPU). On a paper bundle that only has the pickle, Fig. 13a/b are still drawn and
Fig. 13c/d are reported as skipped, with the reason and how to convert the table.
"""

DYNAMIC_PROSE = """
`warp_sched/main.py` traces every warp of one compute-bound Triton kernel launched three ways:
one block per SM (exclusive schedulers, Fig. 13a), four blocks per SM (shared schedulers,
Fig. 13b) and 2.5 waves of blocks with growing work (the tail, Fig. 13c/d). This workload is our
reconstruction; expect the paper's qualitative picture, and timelines that differ by GPU.
"""

SECTION = Section(
    name="warp_sched",
    title="Warp scheduling and the tailing effect",
    paper_ref="Fig. 13a-d",
    order=60,
    runtime="4 s small sample, 3 s paper-scale sample",
    inputs=("warp_sched/exclusive_sched/**/result/*.bin", "warp_sched/shared_sched/**/result/*.bin"),
    optional_inputs=("warp_sched/tail/**/result/*.bin", "warp_sched/*.pkl"),
    load="inputs:load",
    compute="fig13:compute",
    figures="fig13:figures",
    command="bundle root or its warp_sched/ folder; fig13a/b/cd.py: a result/*.bin, trace directory or .npz/.csv table",
    collect="main:collect",
    sample="sample:build",
    static_prose=STATIC_PROSE,
    dynamic_prose=DYNAMIC_PROSE,
    claims=CLAIMS,
    notebook_show=("fig13a.png", "fig13b.png", "fig13c.png", "fig13d.png", "fig13d-sub.png"),
    timelines=True,  # every warp per SM slot, for ui.perfetto.dev
    notebook_text="open",
    ptx_workloads=("the suite's Triton spin kernel itself, from sm_80 PTX compiled ahead of time (no "
                   "stand-in); the grids follow the GPU's SM count."),
)
