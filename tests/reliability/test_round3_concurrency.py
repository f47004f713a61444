"""Reliability round 3, concurrent regeneration (issue 36): a run holds the bundle it reads. While a run
reads a root, ``sample --force`` waits for it (and gives up in one line, leaving the bundle as it was);
a bundle that changes anyway (a writer that takes no lock: another user, another lock folder) fails the
run in one line instead of mixing two bundles' numbers in one verdict."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neutrino_ae.bundle.fetch import ensure_sample_bundle
from neutrino_ae.report.section import NotebookInputError
from neutrino_ae.run.notebook import StaticNotebook
from neutrino_ae.sample.generate import generate_bundle

REPO = Path(__file__).resolve().parents[2]
HOLD = ("import sys, time; from pathlib import Path; from neutrino_ae.bundle.target_lock import hold_for_reading\n"
        "fd = hold_for_reading(Path(sys.argv[1])); print('held', fd is not None, flush=True); time.sleep(60)")


@pytest.fixture
def bundle_copy(tiny_bundle, tmp_path) -> Path:
    return Path(shutil.copytree(tiny_bundle, tmp_path / "traces"))


def test_sample_force_waits_for_a_run_reading_the_root_and_gives_up_in_one_line(bundle_copy, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO), "NEUTRINO_AE_SAMPLE_WAIT_S": "1"}
    reader = subprocess.Popen([sys.executable, "-c", HOLD, str(bundle_copy)], env=env, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert reader.stdout.readline().strip() == "held True"
        before = (bundle_copy / "bundle.json").read_bytes()
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "neutrino_ae", "sample", "--out", str(bundle_copy), "--scale",
                               "small", "--seed", "1", "--force"], env=env, capture_output=True, text=True,
                              cwd=tmp_path)
    finally:
        reader.kill()
        reader.wait()
    assert proc.returncode == 2, proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert "in use by another sample generation, fetch or run" in line and "gave up after waiting 1 s" in line
    assert "Traceback" not in proc.stderr and time.monotonic() - t0 < 30
    assert (bundle_copy / "bundle.json").read_bytes() == before  # the run's bundle is untouched


def test_a_run_reading_the_root_is_no_obstacle_to_another_run_of_the_same_bundle(bundle_copy):
    """Only writers wait: the same scale and seed reuse the bundle without taking the writer's lock."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    reader = subprocess.Popen([sys.executable, "-c", HOLD, str(bundle_copy)], env=env, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert reader.stdout.readline().strip() == "held True"
        scale = json.loads((bundle_copy / "bundle.json").read_text())["scale"]
        t0 = time.monotonic()
        assert ensure_sample_bundle(bundle_copy, scale=scale, seed=0, generator=generate_bundle, wait_s=5,
                                    progress=False) == bundle_copy
        assert time.monotonic() - t0 < 2
    finally:
        reader.kill()
        reader.wait()


def test_a_bundle_regenerated_during_the_run_fails_it_in_one_line(bundle_copy, tmp_path, monkeypatch, capsys):
    scale = json.loads((bundle_copy / "bundle.json").read_text())["scale"]
    monkeypatch.setattr("neutrino_ae.run.notebook.fetch.ensure_bundle", lambda root, **_: Path(root))
    nb = StaticNotebook(bundle="sample", trace_root=str(bundle_copy), sections="block_sched",
                        output_dir=str(tmp_path / "out"), sample_scale="small", workers=0)
    nb.run("block_sched")
    # Another writer that does not share our lock (another user's runtime folder), seed 1 this time.
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "elsewhere"))
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    ensure_sample_bundle(bundle_copy, scale=scale, seed=1, force=True, generator=generate_bundle, progress=False)
    with pytest.raises(NotebookInputError, match="the bundle changed while this run read it"):
        nb.summary()
    assert not (tmp_path / "out" / "verdict.json").exists()
    assert nb._read_lock is None  # released, so the next run or writer is not kept waiting
