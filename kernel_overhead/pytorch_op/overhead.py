"""PyTorch rows of Table 2 (the artifact's `kernel_overhead/pytorch_op/overhead.py` entry point, kept).

    python kernel_overhead/pytorch_op/overhead.py [<root>] [--out DIR] [--json]

The default root is this folder; the section driver runs the folder's ``SECTION`` on this group alone.
"""

from neutrino_ae.report.section.driver import run_script

if __name__ == "__main__":
    raise SystemExit(run_script(__file__, up=1, options={"groups": ("pytorch_op",)}))
