"""Fig. 12: exposed latency vs Nsight Compute: `python exposed_latency/exposed_latency.py [<input> ...] [--out DIR]`.

The artifact-compatible command line; the code is in this folder's package (``cli:main``).
"""

from neutrino_ae.report.script import run_folder_script

if __name__ == "__main__":
    raise SystemExit(run_folder_script(__file__, "cli:main"))
