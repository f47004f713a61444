"""The toy's part of the sample bundle (optional for a section): its parameters by scale, its own stream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_text

PARAMS = {"tiny": 3, "small": 8, "paper": 32}  # how many counts


def build(root: Path, ctx: Any) -> dict[str, Any]:
    counts = ctx.rng.integers(1, 100, PARAMS[ctx.scale])
    ctx.model["toy"] = {"counts": PARAMS[ctx.scale]}
    write_text(Path(root) / "toy" / "counts.txt", " ".join(map(str, counts)) + "\n")
    return {"total": int(counts.sum())}
