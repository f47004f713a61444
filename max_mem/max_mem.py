"""Fig. 11: maximum probe memory vs the workload's peak: `python max_mem/max_mem.py [<root>] [--out DIR] [--json]`.

The artifact-compatible command line: this folder's ``SECTION`` on the section driver.
"""

from neutrino_ae.report.section.driver import run_script

if __name__ == "__main__":
    raise SystemExit(run_script(__file__))
