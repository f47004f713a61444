"""Table 2: kernel slowdown and extra registers: `python kernel_overhead/kernel_overhead.py [<root>] [--out DIR]`.

The artifact-compatible command line: this folder's ``SECTION`` on the section driver.
"""

from neutrino_ae.report.section.driver import run_script

if __name__ == "__main__":
    raise SystemExit(run_script(__file__))
