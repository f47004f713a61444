"""Logging on the command line and beside the results: ``-q`` shows no progress and no chatter, ``-v``
shows debug lines, and a run writes ``run.log`` (every level, the section timings) beside its results."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from neutrino_ae import logs

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str, progress: str = "1") -> subprocess.CompletedProcess:
    # NEUTRINO_AE_PROGRESS=1: draw bars although stderr is a pipe here, so "-q shows none" means something.
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg", logs.PROGRESS_ENV: progress}
    return subprocess.run([sys.executable, "-m", "neutrino_ae", *args], capture_output=True, text=True, env=env,
                          timeout=600, cwd=REPO)


def test_default_shows_progress_and_info_but_no_debug(tmp_path):
    proc = _cli("sample", "--out", str(tmp_path / "s"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(tmp_path / "s")
    assert "generating the synthetic sample bundle (scale=small, seed=0)" in proc.stderr
    assert "sections:" in proc.stderr and "%|" in proc.stderr  # the tqdm bar
    assert "written in" not in proc.stderr  # debug


def test_quiet_shows_no_progress_and_no_info(tmp_path):
    proc = _cli("-q", "sample", "--out", str(tmp_path / "s"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and proc.stdout.strip() == str(tmp_path / "s")
    # -q after the subcommand too
    again = _cli("sample", "--out", str(tmp_path / "t"), "-q")
    assert again.returncode == 0 and again.stderr == ""


def test_verbose_shows_debug(tmp_path):
    proc = _cli("sample", "-v", "--out", str(tmp_path / "s"), progress="0")
    assert proc.returncode == 0, proc.stderr
    for name in ("block_sched", "dmat", "warp_sched"):
        assert f"sample: {name} written in " in proc.stderr
    assert "%|" not in proc.stderr  # NEUTRINO_AE_PROGRESS=0


def test_quiet_and_verbose_exclude_each_other():
    proc = _cli("-q", "-v", "sample")
    assert proc.returncode == 2 and "not allowed with argument" in proc.stderr


def test_run_writes_run_log_beside_the_results_with_the_section_timings(timeline_runs):
    first, out = timeline_runs.first, timeline_runs.out
    assert first.returncode == 0, first.stderr[-3000:]
    assert "%|" not in first.stderr and "Executing" not in first.stderr  # -q: no papermill bar either
    text = (out / logs.LOG_NAME).read_text(encoding="utf-8")
    head = text[:text.index("executed notebook:")]  # what the first run wrote
    assert "executing static.ipynb" in head
    for name in ("block_sched", "warp_sched"):  # the kernel's worker processes (workers=2)
        assert f"{name}: computed in " in head, head
    assert "DEBUG" in head  # every level goes to the file
    # The second run appended: the cached results were reused, and the log says so.
    assert timeline_runs.second.returncode == 0, timeline_runs.second.stderr[-3000:]
    assert "block_sched: reused cached results" in text[len(head):] and text.count("executing static.ipynb") == 2


def test_log_to_file_moves_with_the_output_folder(tmp_path):
    try:
        first = logs.log_to_file(tmp_path / "a")
        logging.getLogger("neutrino_ae.test").info("one")
        second = logs.log_to_file(tmp_path / "b")
        logging.getLogger("neutrino_ae.test").debug("two")
        assert logs.log_file() == second
        assert "one" in first.read_text() and "two" not in first.read_text() and "two" in second.read_text()
    finally:
        logs.reset()


@pytest.mark.parametrize("quiet, verbose, level", [(0, 0, logging.INFO), (1, 0, logging.WARNING),
                                                   (0, 1, logging.DEBUG)])
def test_console_level(quiet, verbose, level):
    assert logs.console_level(quiet, verbose) == level
