"""neutrino-ae run: a claim that does not hold makes the run exit 1 (``--report-only`` reports it
and exits 0), and the executed notebook opens with the verdict."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from neutrino_ae.sample.generate import generate_bundle

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def broken(tmp_path_factory) -> Path:
    """A sample bundle in which Neutrino's exposed latency is above Nsight Compute's for attention."""
    root = generate_bundle(tmp_path_factory.mktemp("broken") / "traces", scale="tiny", progress=False)
    csv = root / "exposed_latency" / "attn.csv"
    df = pd.read_csv(csv)
    df["ncu"] = df["original"] * 1.01  # Nsight Compute barely above the original: Neutrino is slower
    df.to_csv(csv, index=False)
    return root


def _run(root: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neutrino_ae", "run", "static", "-p", "bundle", "auto",
                           "-p", "trace_root", str(root), "--sections", "exposed_latency", "--output-dir", str(out),
                           *extra], capture_output=True, text=True, cwd=REPO, timeout=300, check=False)


def test_a_claim_that_does_not_hold_fails_the_run(broken, tmp_path):
    proc = _run(broken, tmp_path / "out")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "verdict: DIFFERS" in proc.stdout and "DIFFERS exposed_latency/below-ncu" in proc.stdout
    verdict = json.loads((tmp_path / "out" / "verdict.json").read_text())
    (claim,) = [c for c in verdict["claims"] if c["claim"] == "below-ncu"]
    assert claim["status"] == "DIFFERS" and "attn." in claim["reason"]
    nb = nbformat.read(tmp_path / "out" / "static.executed.ipynb", as_version=4)
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("## Verdict: DIFFERS")

    shutil.rmtree(tmp_path / "out")
    assert _run(broken, tmp_path / "out", "--report-only").returncode == 0
