"""PyTorch rows of Table 2 (the artifact's `kernel_overhead/pytorch_op/overhead.py` entry point, kept).

    python kernel_overhead/pytorch_op/overhead.py [<root>] [--out DIR] [--json]

The default root is this folder; the code is in the section package (``cli:pytorch_op_main``).
"""

from neutrino_ae.report.script import run_folder_script

if __name__ == "__main__":
    raise SystemExit(run_folder_script(__file__, "cli:pytorch_op_main", up=1))
