"""`make check` (pytest --in-process) cannot be escaped by a new test (issue 48): one that starts a process
without the `process` mark (or an entry in tests/process_tests.py) fails with a line saying what to do, even
when its code catches the refusal; a marked one is left to `make test`; pytest-xdist still starts its workers."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from process_tests import ALL, PROCESS

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent

NEW_TESTS = '''
import multiprocessing, os, subprocess, sys
import pytest

def test_in_process():
    assert sum(range(10)) == 45

def test_runs_a_command():
    subprocess.run([sys.executable, "-c", "pass"], check=True)

def test_catches_the_refusal():
    try:
        subprocess.run(["true"], check=False)
    except Exception:
        pass

def test_forks():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)

def test_a_worker_pool():
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(abs, (-1,)) == 1

@pytest.fixture(scope="module")
def built():
    return subprocess.run(["true"]).returncode

def test_uses_a_fixture_that_starts_one(built):
    assert built == 0

@pytest.mark.process
def test_marked():
    subprocess.run(["true"], check=True)
'''


@pytest.mark.process
@pytest.mark.parametrize("workers", ["0", "2"])
def test_an_unmarked_test_that_starts_a_process_fails_make_check(tmp_path, workers):
    tests = tmp_path / "tests"
    tests.mkdir()
    for name in ("conftest.py", "process_guard.py", "process_tests.py", "shared_build.py"):
        shutil.copy(HERE / name, tests / name)
    (tests / "test_new.py").write_text(NEW_TESTS)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir",
            str(tmp_path), "-n", workers, "--in-process", "-rfE", "tests/test_new.py"]
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    failed = set(re.findall(r"^(?:FAILED|ERROR) tests/test_new.py::(\w+)", out, re.M))
    assert failed == {"test_runs_a_command", "test_catches_the_refusal", "test_forks", "test_a_worker_pool",
                      "test_uses_a_fixture_that_starts_one"}, out
    # test_in_process ran; test_marked was left out (7 tests, 6 results; xdist's summary counts no deselected)
    assert re.search(r"\b4 failed, 1 passed, (1 deselected, )?1 error in", out), out
    assert out.count("this test starts a process (") >= 5, out
    assert "mark it `@pytest.mark.process`" in out and "Traceback" not in out.split("short test summary")[-1]
    for what in ("subprocess", "os.fork", "multiprocessing"):
        assert f"this test starts a process ({what})" in out, (what, out)


def test_every_listed_test_exists():
    for module, names in PROCESS.items():
        path = REPO / module
        assert path.is_file(), module
        if names != ALL:
            text = path.read_text()
            missing = [n for n in names if not re.search(rf"^(?:async )?def {n}\(", text, re.M)]
            assert missing == [], (module, missing)
