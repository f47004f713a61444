"""The Makefile installs what each target needs (issue 37 item 8): ``make run`` the project alone (no
pytest, ruff, hypothesis, numba or CUDA headers: a 647 MB .venv and ~68 s of a cold run before),
``make test`` the ``test`` extra, ``make report`` the ``report`` extra; a stamp per extra, rebuilt when
pyproject.toml changes. Checked with ``make -n`` (what would run) on a throwaway venv path."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make")


def _dry(venv: Path, target: str) -> list[str]:
    proc = subprocess.run(["make", "-n", "-C", str(REPO), f"VENV={venv}", target], capture_output=True, text=True,
                          check=True)
    return [line for line in proc.stdout.splitlines() if "pip install" in line and "--upgrade pip" not in line]


def _touch(path: Path, newer_than: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    t = newer_than.stat().st_mtime + 10
    os.utime(path, (t, t))


def test_make_run_installs_the_project_alone_and_make_test_adds_the_test_extra(tmp_path):
    venv = tmp_path / "venv"
    run = _dry(venv, "run")
    assert len(run) == 1 and run[0].endswith('-e "."'), run
    test = _dry(venv, "test")
    assert test[0].endswith('-e "."') and test[-1].endswith('-e ".[test]"'), test
    assert any(line.endswith('-e ".[report]"') for line in _dry(venv, "report"))


def test_the_stamps_reinstall_only_what_is_missing_or_stale(tmp_path):
    venv, pyproject = tmp_path / "venv", REPO / "pyproject.toml"
    _touch(venv / ".installed", pyproject)
    assert _dry(venv, "run") == []  # installed and current: nothing to do
    assert [line.split()[-1] for line in _dry(venv, "test")] == ['".[test]"']  # only the extra
    _touch(venv / ".installed-test", venv / ".installed")
    assert _dry(venv, "test") == []
    # pyproject.toml newer than the stamps: both are installed again
    t = time.time() + 3600
    os.utime(venv / ".installed", (pyproject.stat().st_mtime - 10,) * 2)
    os.utime(venv / ".installed-test", (t, t))
    assert [line.split()[-1] for line in _dry(venv, "test")] == ['"."', '".[test]"']


def test_make_test_draws_fixed_hypothesis_examples_and_nothing_lands_in_the_checkout():
    from hypothesis import settings
    from hypothesis.configuration import storage_directory

    proc = subprocess.run(["make", "-n", "-C", str(REPO), "test"], capture_output=True, text=True, check=True)
    pytest_line = next(line for line in proc.stdout.splitlines() if " -m pytest " in line)
    assert "--hypothesis-profile ci" in pytest_line
    ci = settings.get_profile("ci")
    assert ci.derandomize and ci.database is None
    home = storage_directory("constants", intent_to_write=False).path.resolve()
    assert not home.is_relative_to(REPO), home  # no .hypothesis/ in the checkout
