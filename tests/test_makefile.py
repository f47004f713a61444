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


def _render_tools(tmp_path: Path, tools: dict[str, str], **make_vars: str) -> subprocess.CompletedProcess[str]:
    """``make render-tools`` with PATH holding only ``tools`` (name -> shell script body)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, body in tools.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    args = [f"{k}={v}" for k, v in make_vars.items()]
    return subprocess.run([shutil.which("make"), "-s", "-C", str(REPO), "render-tools", *args], capture_output=True,
                          text=True, env={"PATH": str(bin_dir), "HOME": str(tmp_path)}, timeout=60, check=False)


def test_make_test_installs_the_render_tools_only_when_missing_and_says_so_in_one_line(tmp_path):
    """`make test` runs `render-tools` first: silent when chromium and pdftotext are there; as root with
    apt-get, installs Debian's chromium and poppler-utils quietly (one line); else one line saying the
    render tests will be skipped and why."""
    assert "render-tools" in subprocess.run(["make", "-n", "-p", "-C", str(REPO), "test"], capture_output=True,
                                            text=True, check=False).stdout.split("\ntest:", 1)[1].splitlines()[0]
    log = tmp_path / "apt.log"
    apt = f'echo "$@" >> {log}'
    present = _render_tools(tmp_path / "a", {"chromium": "exit 0", "chromedriver": "exit 0", "pdftotext": "exit 0",
                                             "id": "echo 0", "apt-get": apt})
    assert (present.returncode, present.stdout, present.stderr) == (0, "", "") and not log.exists()

    user = _render_tools(tmp_path / "b", {"id": "echo 1000", "apt-get": apt})
    assert user.returncode == 0 and not log.exists()
    assert user.stdout.splitlines() == ["render tests will be skipped: chromium chromium-driver poppler-utils not "
                                        "installed (installing needs root and apt-get: apt-get install chromium "
                                        "chromium-driver poppler-utils)"]
    no_apt = _render_tools(tmp_path / "c", {"id": "echo 0", "chromium": "exit 0", "chromedriver": "exit 0"},
                           APT_GET="apt-get")
    assert no_apt.stdout.splitlines()[0].startswith("render tests will be skipped: poppler-utils not installed")

    root = _render_tools(tmp_path / "d", {"id": "echo 0", "apt-get": apt})
    assert (root.returncode, root.stdout.splitlines()) == (0, ["installed chromium chromium-driver poppler-utils "
                                                               "(Debian) for the render tests"]), root.stderr
    assert log.read_text().splitlines() == ["update -qq", "install -y -qq --no-install-recommends chromium "
                                            "chromium-driver poppler-utils"]
    failing = _render_tools(tmp_path / "e", {"id": "echo 0", "apt-get": "exit 100"})
    assert failing.stdout.splitlines() == ["render tests will be skipped: apt-get install chromium chromium-driver "
                                           "poppler-utils failed"]
