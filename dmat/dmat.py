"""DMAT plots (Fig. 1, Fig. 10a/b/c): ``python dmat/dmat.py <trace.bin | file.dmat | tracedir> [--name NAME]
[--xbins N] [--ybins N] [--out DIR] [--json]``; the last stdout line is the saved PNG.

The artifact-compatible command line: this folder's ``SECTION`` on the section driver.
"""

from neutrino_ae.report.section.driver import positive, run_script

BINS = positive("--xbins and --ybins must be positive")
FLAGS = {
    "--name": {"help": "figure name (default: from the path, e.g. fig1)"},
    "--xbins": {"type": int, "action": BINS, "help": "clock bins (default 500)"},
    "--ybins": {"type": int, "action": BINS, "help": "max page rows (default 1024)"},
}


def main(argv: list[str] | None = None) -> int:
    return run_script(__file__, argv, flags=FLAGS)


if __name__ == "__main__":
    raise SystemExit(main())
