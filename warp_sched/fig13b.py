"""Fig. 13b: per-SM warp timeline. `python warp_sched/fig13b.py <trace.bin | tracedir | table> [--sm N] [--out DIR]`.

The artifact-compatible command line; the code is in this folder's package (``cli:fig13b_main``).
"""

from neutrino_ae.report.script import run_folder_script

if __name__ == "__main__":
    raise SystemExit(run_folder_script(__file__, "cli:fig13b_main"))
