"""Expensive test inputs built once per test run, not once per xdist worker.

pytest-xdist runs a ``scope="session"`` fixture once in every worker process. The inputs here (the
sample bundles, one executed static notebook) take seconds of CPU each and are only read by the tests
that use them, so :func:`build_once` builds each one once under a folder all workers share (the
parent of the workers' base temporary folders, which xdist makes per run), guarded by a file lock:
the first worker to ask builds it, the others wait for it and then read the same files.

Tests must not modify what these fixtures return; a test that changes a bundle or results folder
copies it first (``shutil.copytree``)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

DONE = ".built"


def shared_base(factory: pytest.TempPathFactory) -> Path:
    """This run's folder common to every worker (without xdist: the session's own base folder)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def build_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """``<shared>/<name>``, made by ``build(folder)`` in the first process that asks for it this run."""
    base = shared_base(factory)
    folder = base / f"shared-{name}"
    with open(base / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / DONE).is_file():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed in another worker
            folder.mkdir()
            build(folder)
            (folder / DONE).write_text("")
    return folder


def save_process(path: Path, proc: subprocess.CompletedProcess[str]) -> None:
    """A finished process (argv, return code, stdout, stderr) kept as ``path`` (JSON) in a built folder."""
    path.write_text(json.dumps({"argv": [str(a) for a in proc.args], "returncode": proc.returncode,
                                "stdout": proc.stdout, "stderr": proc.stderr}))


def load_process(path: Path) -> subprocess.CompletedProcess[str]:
    """What :func:`save_process` kept, as the finished process."""
    doc = json.loads(path.read_text())
    return subprocess.CompletedProcess(doc["argv"], doc["returncode"], doc["stdout"], doc["stderr"])
