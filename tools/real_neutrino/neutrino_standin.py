#!/usr/bin/env python3
"""``neutrino`` for dynamic.ipynb on a machine without a GPU: the REAL CLI, with each GPU workload
replaced by the driver-API stand-in (workload.py) running a kernel of the same role.

Options before the command go to the real CLI unchanged (it validates them); the command
``python <folder>/<script>.py ...`` becomes ``python workload.py <ptx> <kernel> <grid> <block>``.
Environment: REAL_NEUTRINO (the built CLI), STANDIN_PTX (our kernels), STANDIN_LOG (append each
argv as JSON, for tests). Everything after the substitution -- hook driver, probe engine, trace
folders, event.log -- is Neutrino's own.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
VALUE_OPTS = {"-p", "--probe", "--tracedir", "--driver", "--python", "--filter", "-k", "--kernel", "--callback"}


def standin(command: list[str], keyword: str | None) -> tuple[str, int, int]:
    """(kernel, grid, block) playing the role of the workload ``command`` (its name contains the
    ``-k`` keyword, as the real workload's kernel does)."""
    text = " ".join(command)
    if keyword in ("flash", "fmha"):
        return f"{keyword}_fwd_kernel", 4, 64
    if "block_sched/persist.py" in text:
        return "zero_fill", 8, 128  # one block per SM
    if "block_sched/" in text:
        return "zero_fill", 32, 128
    if "warp_sched/" in text:
        return "spin_kernel", 16, 128
    if "dmat/" in text or command[-1:] == ["attn"]:
        return "attn_fwd", 4, 64
    if command[-1:] == ["gmm"]:
        return "gmm_kernel", 4, 64
    return "zero_fill", 16, 128  # PyTorch operators and model sub-modules


def main(argv: list[str]) -> int:
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in VALUE_OPTS else 1
    options, command = argv[:i], argv[i:]
    if os.environ.get("STANDIN_LOG"):
        with open(os.environ["STANDIN_LOG"], "a") as fh:
            fh.write(json.dumps(argv) + "\n")
    keyword = next((options[j + 1] for j, o in enumerate(options[:-1]) if o in ("-k", "--kernel")), None)
    if command:
        kernel, grid, block = standin(command, keyword)
        command = [sys.executable, str(HERE / "workload.py"), os.environ["STANDIN_PTX"], kernel, str(grid), str(block)]
    os.execv(os.environ["REAL_NEUTRINO"], [os.environ["REAL_NEUTRINO"], *options, *command])
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
