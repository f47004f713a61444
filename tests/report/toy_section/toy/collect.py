"""How dynamic.ipynb collects the toy (optional for a section): its 'workload' run with the collection's Python."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from neutrino_ae.workloads.neutrino import staged


def collect(root: Path, ctx: Any) -> None:
    with staged(root / "toy") as out:
        run = subprocess.run([ctx.python, "-c", "print(2, 3, 4)"], capture_output=True, text=True, check=True)
        (out / "counts.txt").write_text(run.stdout)
    ctx.log("  toy: collected")
