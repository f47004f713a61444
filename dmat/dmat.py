"""DMAT plots (Fig. 1, Fig. 10a/b/c): ``python dmat/dmat.py <trace.bin | file.dmat | tracedir> [--out DIR] [--json]``.

The artifact-compatible command line; the code is in this folder's package (``cli:main``).
"""

from neutrino_ae.report.command.script import run_folder_script

if __name__ == "__main__":
    raise SystemExit(run_folder_script(__file__, "cli:main"))
