"""Issue 47 family 5: a collection command that hangs past ``timeout`` is ended with every process it
started, in every front end that runs dynamic.ipynb: papermill's own command line, a Jupyter kernel running
the notebook's cells (the facade, in this process) and ``neutrino-ae run dynamic``.

The fake ``neutrino`` CLI (tests/fake_neutrino/, ``FAKE_NEUTRINO_HANG``) hangs as a workload that never
returns, after starting two sleeping grandchildren: one in its process group, one in a session of its own.
max_mem's collection is a script (``max_mem/collect.py``) that runs ``neutrino`` itself, so the command the
timeout ends is two levels above the sleepers. On main the timeout killed only the script: the fake CLI and
both sleepers were left running with parent 1 (or a subreaper's)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from neutrino_ae.run import lock

REPO = Path(__file__).resolve().parents[2]
FAKE = REPO / "tests" / "fake_neutrino"
#: One model, one probe, one sub-module: the smallest collection (one ``neutrino`` command).
COLLECT_ARGS = {"max_mem": ["--models", "llama1b-bs32", "--probes", "block_sched"]}
TIMEOUT_S = 3


@pytest.fixture
def hang(tmp_path, monkeypatch):
    """PATH with the fake CLI (set to hang) and an ``nvidia-smi`` naming a GPU; yields the pid file, and
    kills whatever the test left running (so a failure leaves no sleeper behind)."""
    bindir = tmp_path / "gpubin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text('#!/bin/sh\necho "NVIDIA A100-SXM4-40GB, 8.0, 535.104.05"\n')
    smi.chmod(0o755)
    pids = tmp_path / "sleepers.txt"
    monkeypatch.setenv("PATH", os.pathsep.join([str(FAKE), str(bindir), str(Path(sys.executable).parent),
                                                "/usr/bin", "/bin"]))
    monkeypatch.setenv("FAKE_NEUTRINO_HANG", str(pids))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    yield pids
    for pid in _alive(pids):
        os.kill(pid, signal.SIGKILL)


def _alive(pids: Path) -> list[int]:
    """The sleepers of ``pids`` still running (a zombie is not: its parent has only to reap it)."""
    found = [int(p) for p in pids.read_text().split()] if pids.is_file() else []
    alive = []
    for pid in found:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if state != b"Z":
            alive.append(pid)
    return alive


def _check_ended(pids: Path) -> None:
    assert pids.is_file() and len(pids.read_text().split()) == 2, "the fake CLI did not start its sleepers"
    assert _alive(pids) == [], "processes of the timed-out collection outlived it"


def test_papermill_ends_the_whole_collection_on_timeout(hang, tmp_path):
    out = tmp_path / "res"
    proc = subprocess.run(
        [sys.executable, "-m", "papermill", str(REPO / "dynamic.ipynb"), str(tmp_path / "out.ipynb"),
         "--cwd", str(REPO), "--no-progress-bar", "-p", "sections", "max_mem", "-p", "timeout", str(TIMEOUT_S),
         "-p", "output_dir", str(out), "-p", "trace_root", str(tmp_path / "traces"), "-p", "workloads", "paper",
         "-y", f"collect_args: {COLLECT_ARGS}"],
        capture_output=True, text=True, timeout=300, check=False)
    assert "timed out after 3s" in (tmp_path / "out.ipynb").read_text(), proc.stderr[-3000:]
    _check_ended(hang)


def test_a_jupyter_kernel_running_the_cell_ends_the_whole_collection_on_timeout(hang, tmp_path, capsys):
    from neutrino_ae.run.dynamic_notebook import DynamicNotebook

    out = tmp_path / "res"
    try:
        nb = DynamicNotebook(sections="max_mem", output_dir=str(out), trace_root=str(tmp_path / "traces"),
                             timeout=TIMEOUT_S, collect_args=COLLECT_ARGS, workloads="paper")
        nb.run("max_mem")  # the section's cell
    finally:
        lock.release_output_lock(out)
    assert "timed out after 3s" in capsys.readouterr().out
    _check_ended(hang)


def test_the_command_line_ends_the_whole_collection_on_timeout(hang, tmp_path):
    out = tmp_path / "res"
    proc = subprocess.run(
        [sys.executable, "-m", "neutrino_ae", "-q", "run", "dynamic", "--sections", "max_mem", "--output-dir", str(out),
         "--trace-root", str(tmp_path / "traces"), "-p", "timeout", str(TIMEOUT_S), "-p", "workloads", "paper",
         "-p", "collect_args", str(COLLECT_ARGS), "--allow-skip"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "timed out after 3s" in (out / "dynamic.executed.ipynb").read_text(), proc.stdout[-2000:] + proc.stderr
    _check_ended(hang)
