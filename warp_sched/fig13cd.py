"""Fig. 13c/d: active warps, busy SMs and the tail. `python warp_sched/fig13cd.py <trace> [--out DIR]`.

The artifact-compatible command line; the code is in this folder's package (``cli:tail_main``).
"""

from neutrino_ae.report.script import run_folder_script

if __name__ == "__main__":
    raise SystemExit(run_folder_script(__file__, "cli:tail_main"))
