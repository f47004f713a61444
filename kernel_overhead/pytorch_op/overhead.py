"""PyTorch rows of Table 2 (the artifact's `kernel_overhead/pytorch_op/overhead.py` entry point, kept).

    python kernel_overhead/pytorch_op/overhead.py [<root>] [--out DIR] [--json]

The default root is this folder; the analysis lives in ``kernel_overhead/kernel_overhead.py``.
"""

# ruff: noqa: E402  (imports follow the sys.path set-up that lets this file run as a script)
from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kernel_overhead.kernel_overhead import group_main
from neutrino_ae.report.script import run_main


def main(argv: Sequence[str] | None = None) -> int:
    return group_main("pytorch_op", argv)


if __name__ == "__main__":
    sys.exit(run_main(main))
