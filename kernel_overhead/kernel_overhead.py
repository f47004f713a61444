"""Table 2: kernel slowdown and extra registers: `python kernel_overhead/kernel_overhead.py [<root>] [--out DIR]`.

The artifact-compatible command line; the code is in this folder's package (``cli:main``).
"""

from neutrino_ae.report.script import run_folder_script

if __name__ == "__main__":
    raise SystemExit(run_folder_script(__file__, "cli:main"))
