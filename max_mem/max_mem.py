"""Fig. 11: maximum probe memory vs the workload's peak: `python max_mem/max_mem.py [<root>] [--out DIR] [--json]`.

The artifact-compatible command line; the code is in this folder's package (``cli:main``).
"""

from neutrino_ae.report.script import run_folder_script

if __name__ == "__main__":
    raise SystemExit(run_folder_script(__file__, "cli:main"))
