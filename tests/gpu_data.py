"""The trace folders the real Neutrino wrote on a real H200 (tests/data/gpu/h200, see its MANIFEST.md)."""

from __future__ import annotations

from pathlib import Path

H200 = Path(__file__).resolve().parent / "data" / "gpu" / "h200"


def workload_dir(case: Path) -> Path:
    """The folder of the traced workload in a case, found by its event.log's command line (the others are
    the probe engine's nvidia-smi calls), not by any rule under test."""
    (found,) = [d for d in (case / "trace").iterdir() if b"workload.py" in (d / "event.log").read_bytes()[:300]]
    return found
