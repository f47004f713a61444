"""A seventh section is one folder (issue 35): the toy section under ``tests/report/toy_section/toy/`` is put
into a copy of this checkout as a real folder beside ``max_mem/``, with no other file edited, and goes through
what every section must: the registry, the sample bundle, its own script, a static notebook run of that
section alone (the committed notebook, not rebuilt) with its claims judged, and the notebook builders."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
TOY = Path(__file__).resolve().parent / "toy_section" / "toy"
PAPER = ["block_sched", "dmat", "kernel_overhead", "max_mem", "exposed_latency", "warp_sched"]


def _tracked(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root, capture_output=True,
                         check=True).stdout.decode()
    return [rel for rel in out.split("\0") if rel and not rel.startswith("tests/")]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """This checkout's files (its tests left out) with the toy folder added beside the paper's sections."""
    dest = tmp_path_factory.mktemp("seventh") / "checkout"
    for rel in _tracked(REPO):
        if (REPO / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, dest / rel)
    shutil.copytree(TOY, dest / "toy", ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    return dest


def _run(checkout: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NEUTRINO_AE_SECTIONS", "PYTHONPATH")}
    env.update(PYTHONPATH=str(checkout), PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg")
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


def test_the_toy_folder_is_a_section_with_no_edit_outside_it(checkout, tmp_path):
    before = {rel: (checkout / rel).read_bytes() for rel in ("static.ipynb", "dynamic.ipynb")}

    # The registry finds it after the paper's six; the sample generator writes its part and its ground truth.
    code = ("import json; from neutrino_ae.report.section import registry; from neutrino_ae.sample.generate import "
            f"generate_bundle; root = generate_bundle({str(tmp_path / 'bundle')!r}, scale='tiny', progress=False); "
            "print(json.dumps([registry.names(), str(registry.get('toy').folder)]))")
    proc = _run(checkout, "-c", code, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    names, folder = json.loads(proc.stdout.splitlines()[-1])
    assert names == [*PAPER, "toy"] and Path(folder) == (checkout / "toy").resolve()
    bundle = tmp_path / "bundle"
    manifest = json.loads((bundle / "bundle.json").read_text())
    counts = [int(x) for x in (bundle / "toy" / "counts.txt").read_text().split()]
    assert len(counts) == 3 and manifest["ground_truth"]["toy"] == {"total": sum(counts)}
    assert set(PAPER) <= set(manifest["ground_truth"])

    # Its artifact-style script, on the driver: the line first, results under results/cli/toy by default.
    script = _run(checkout, str(checkout / "toy" / "toy.py"), str(bundle / "toy"), cwd=tmp_path)
    assert script.returncode == 0, script.stderr[-3000:]
    assert script.stdout.splitlines()[0] == f"toy total {sum(counts)}"
    assert (tmp_path / "results" / "cli" / "toy" / "toy.png").is_file()
    assert "results/cli/toy" in " ".join(_run(checkout, str(checkout / "toy" / "toy.py"), "--help",
                                              cwd=tmp_path).stdout.split())

    # The committed static notebook, not rebuilt, runs it alone and judges its claims.
    out = tmp_path / "static"
    run = _run(checkout, "-m", "neutrino_ae", "run", "static", "-p", "bundle", "auto", "-p", "trace_root",
               str(bundle), "-p", "sections", "toy", "--output-dir", str(out), cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    verdict = json.loads((out / "verdict.json").read_text())
    assert [(c["section"], c["claim"], c["status"]) for c in verdict["claims"]] == [
        ("toy", "toy-positive", "PASS"), ("toy", "toy-total-truth", "PASS")]
    rows = json.loads((out / "summary.json").read_text())["results"]
    assert [(r["key"], r["value"], r["ground_truth"]) for r in rows] == [
        ("total.count", sum(counts), sum(counts)), ("mean.count", sum(counts) / 3, None)]
    executed = nbformat.read(out / "static.executed.ipynb", as_version=4)
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert any("## Toy result" in o.get("data", {}).get("text/markdown", "") for o in outputs), "its heading"
    assert any("toy.png" in o.get("data", {}).get("text/plain", "") for o in outputs if "image/png" in o.get(
        "data", {})), "its figure"

    # Both builders accept the committed notebooks (the toy has no cells of its own yet) ...
    for builder in ("build_static_notebook.py", "build_dynamic_notebook.py"):
        check = _run(checkout, str(checkout / "tools" / builder), "--check", cwd=tmp_path)
        assert check.returncode == 0 and "shown by its summary cell: toy" in check.stdout, check.stderr
    assert {rel: (checkout / rel).read_bytes() for rel in before} == before
    # ... and give it its cells when run.
    built = _run(checkout, str(checkout / "tools" / "build_static_notebook.py"), "--out", str(tmp_path / "s.ipynb"),
                 cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert 'nb.section(\\"toy\\")' in (tmp_path / "s.ipynb").read_text()
