"""Block scheduling cost (paper Sec. 4.5) from ``block_sched`` traces.

The artifact-compatible command line; the code is in this folder's package (``cli:main``).
"""

from neutrino_ae.report.command.script import run_folder_script

if __name__ == "__main__":
    raise SystemExit(run_folder_script(__file__, "cli:main"))
