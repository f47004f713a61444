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

from neutrino_ae.report import registry
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


@pytest.fixture(scope="module")
def no_dispatch_gap(tmp_path_factory) -> Path:
    """A sample bundle whose Sec. 4.5 main trace has no dispatch gap: the memset variant's trace
    (the driver fills the tensor, no block waits for a free slot) stands in for torch.zeros."""
    root = generate_bundle(tmp_path_factory.mktemp("nogap") / "traces", scale="tiny", progress=False)
    (main,) = [p for p in (root / "block_sched").iterdir() if p.is_dir() and p.name != "variants"]
    (memset,) = [p for p in (root / "block_sched" / "variants" / "memset").iterdir() if p.is_dir()]
    shutil.rmtree(main)
    shutil.copytree(memset, main)
    return root


def _run(root: Path, out: Path, *extra: str, sections: str = "exposed_latency") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neutrino_ae", "run", "static", "-p", "bundle", "auto",
                           "-p", "trace_root", str(root), "--sections", sections, "--output-dir", str(out),
                           *extra], capture_output=True, text=True, cwd=REPO, timeout=300, check=False)


def _table_rows(stdout: str) -> dict[str, str]:
    """The verdict table the run ends with: claim -> status."""
    lines = stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.split()[:4] == ["verdict", "claim", "expected", "obtained"])
    rows = {}
    for ln in lines[start + 2:]:
        if not ln.strip():
            break
        if not ln.startswith(" "):
            rows[ln.split()[1]] = ln.split()[0]
    return rows


def test_a_claim_that_does_not_hold_fails_the_run(broken, tmp_path):
    proc = _run(broken, tmp_path / "out")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "verdict: DIFFERS" in proc.stdout and "DIFFERS exposed_latency/below-ncu" in proc.stdout
    # The run ends with the verdict table: every claim of the selected sections, with its status.
    declared = {f"exposed_latency/{c.id}" for c in registry.get("exposed_latency").claims}
    rows = _table_rows(proc.stdout)
    assert set(rows) == declared and rows["exposed_latency/below-ncu"] == "DIFFERS"
    assert proc.stdout.rstrip().splitlines()[-1].startswith("verdict: DIFFERS")
    verdict = json.loads((tmp_path / "out" / "verdict.json").read_text())
    (claim,) = [c for c in verdict["claims"] if c["claim"] == "below-ncu"]
    assert claim["status"] == "DIFFERS" and "attn." in claim["reason"]
    nb = nbformat.read(tmp_path / "out" / "static.executed.ipynb", as_version=4)
    # Right under the notebook's title, the claim that did not pass named there (issue 25).
    assert nb.cells[0].id == "intro" and nb.cells[0].source.startswith("# Neutrino")
    top = nb.cells[1]
    assert top.cell_type == "markdown" and top.source.startswith("## Verdict: DIFFERS · SYNTHETIC sample data\n")
    assert "Claims that did not pass" in top.source and "below Nsight Compute" in top.source

    shutil.rmtree(tmp_path / "out")
    assert _run(broken, tmp_path / "out", "--report-only").returncode == 0


def test_no_dispatch_gap_fails_the_scheduling_cost_claims(no_dispatch_gap, tmp_path):
    proc = _run(no_dispatch_gap, tmp_path / "out", sections="block_sched")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = _table_rows(proc.stdout)
    assert set(rows) == {f"block_sched/{c.id}" for c in registry.get("block_sched").claims}
    assert rows["block_sched/visible-cost"] == "DIFFERS" and rows["block_sched/memset-fix"] == "DIFFERS"
    verdict = json.loads((tmp_path / "out" / "verdict.json").read_text())
    assert verdict["overall"] == "DIFFERS"


def test_a_dynamic_run_that_collected_nothing_is_not_a_success(tmp_path):
    """No GPU / no neutrino and no earlier traces: the verdict says NOTHING COLLECTED and the run
    exits 1, unless --allow-skip."""
    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        out = tmp_path / ("out" + "".join(extra))
        return subprocess.run([sys.executable, "-m", "neutrino_ae", "run", "dynamic", "-p", "collect", "False",
                               "-p", "trace_root", str(tmp_path / "none"), "--sections", "max_mem",
                               "--output-dir", str(out), *extra],
                              capture_output=True, text=True, cwd=REPO, timeout=300, check=False)

    proc = run()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "nothing was collected (pass --allow-skip" in proc.stderr
    verdict = json.loads((tmp_path / "out" / "verdict.json").read_text())
    assert verdict["overall"] == "NOTHING COLLECTED"
    assert all(c["status"] == "SKIPPED" and c["reason"] for c in verdict["claims"])
    assert run("--allow-skip").returncode == 0
