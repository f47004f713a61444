"""Fig. 99: the toy's total count: `python toy/toy.py [<root>] [--out DIR] [--json]`."""

from neutrino_ae.report.section.driver import run_script

if __name__ == "__main__":
    raise SystemExit(run_script(__file__))
