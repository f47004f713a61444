"""The artifact's line first (issue 24): ``python warp_sched/fig13a.py | fig13b.py | fig13cd.py <input>`` print
their result line(s) before pandas or matplotlib is imported, once; the figures and results follow, the
figures drawn by a figure process (the command itself never imports matplotlib)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from line_first import HEAVY, REPO, printed, run_script, split_at


def _timeline_trace(path: Path) -> Path:
    """3 blocks of 2 warps: SM 4 runs blocks 0 and 2, SM 6 block 1 (test_warp_sched.py's trace)."""
    from test_warp_sched import _warp_trace  # this folder is on sys.path (pytest's rootdir-relative import)

    return _warp_trace(path)


def _timeline_dir(path: Path) -> Path:
    """The same trace in a trace directory (its ``result/`` folder), as the README's commands pass it."""
    (path / "result").mkdir(parents=True)
    _timeline_trace(path / "result" / "0.5.bin")
    return path


def _tail_table(path: Path) -> Path:
    """SM 7 busy [0,20), SM 9 [5,8) and [12,15), SM 11 [2,30) (as in test_warp_sched.py)."""
    np.savez(path, lstart=np.array([0, 10, 5, 12, 2]), elapse=np.array([10, 10, 3, 3, 28]),
             smid=np.array([7, 7, 9, 9, 11]))
    return path


# Worked out by hand. Timeline: per-SM clocks, SM 4's warps [0,100) [0,40) [40,70) [45,75) take slots 0, 1, 1, 2
# (3 slots), SM 6's two [0,50); makespan 100; blocks 0 and 2 overlap on SM 4 (2 resident); SM 4 ran the most
# blocks, SM 6 is the other. Tail: all 3 SMs busy last in [12,15), so the tail is [15,30], 15 of 30 cycles;
# busy SM-cycles 20 + 6 + 28 = 54 of 90 (idle 40%), 20 of 45 in the tail (idle 55.6%); the first SM done is
# SM 9 at 15, leaving 5 + 0 + 15 = 20 of 45 SM-cycles busy.
CASES = {
    "fig13a": (_timeline_trace, "w.bin", [], [
        "Fig. 13a: exclusive scheduling, warp timeline: SMs [4, 6], 3 warp slots at most; makespan 100 cycles, "
        "up to 2 resident blocks per SM"], ["fig13a.png"]),
    "fig13a-dir": (_timeline_dir, "Jan_23_06_27_37_1", [], [
        "Fig. 13a: exclusive scheduling, warp timeline: SMs [4, 6], 3 warp slots at most; makespan 100 cycles, "
        "up to 2 resident blocks per SM"], ["fig13a.png"]),
    "fig13b": (_timeline_trace, "w.bin", [], [
        "Fig. 13b: shared scheduling, warp timeline: SMs [4, 6], 3 warp slots at most; makespan 100 cycles, "
        "up to 2 resident blocks per SM"], ["fig13b.png"]),
    "fig13cd": (_tail_table, "t.npz", ["--clock-align", "global"], [
        "tail: last 15 of 30 cycles (50.0%) run with fewer than 90% of 3 SMs busy; SM idle share 40.0% overall, "
        "55.6% in the tail",
        "last-wave tail (first SM done -> end): 50.0% of the kernel, 55.6% of SM capacity idle in it"],
        ["fig13c.png", "fig13d.png", "fig13d-sub.png"]),
}

def _command(tmp_path: Path, script: str, watched: bool) -> tuple[list[str], list[str], list[str]]:
    make, name, extra, expected, pngs = CASES[script]
    path = make(tmp_path / name)
    command = [f"warp_sched/{script.split('-')[0]}.py", str(path), *extra, "--out", str(tmp_path / "out")]
    return run_script(command, watched), expected, [str(tmp_path / "out" / p) for p in pngs]


@pytest.mark.parametrize("script", list(CASES))
def test_lines_are_printed_before_pandas_or_matplotlib_is_imported(tmp_path, script):
    # Drawn in this process (no figure process): every import is the command's own.
    lines, expected, paths = _command(tmp_path, script, watched=False)
    before, after = split_at(lines, expected)
    assert "numpy" in before
    assert not {m for m in before if m.split(".")[0] in HEAVY}
    assert "pandas" in after and "matplotlib" in after  # the figures and tables come after them
    assert printed(lines) == [*expected, *paths]  # each line once, then the figures' files
    assert all(Path(p).stat().st_size > 5_000 for p in paths)


@pytest.mark.parametrize("script", list(CASES))
def test_with_a_figure_process_the_command_never_imports_matplotlib_and_pandas_only_after_the_lines(tmp_path, script):
    lines, expected, paths = _command(tmp_path, script, watched=True)
    before, _ = split_at(lines, expected)
    # pandas is imported by the command alone (the figure process draws from arrays): never before the lines.
    assert "numpy" in before and not {m for m in before if m.split(".")[0] == "pandas"}
    assert "command imported: pandas" in lines  # and not matplotlib: the figure process drew every figure
    assert all(Path(p).stat().st_size > 5_000 for p in paths)


@pytest.mark.parametrize("no_fork", ["0", "1"])
def test_json_mode_prints_only_the_document(tmp_path, no_fork):
    path = _tail_table(tmp_path / "t.npz")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NEUTRINO_AE_NO_FORK": no_fork}
    proc = subprocess.run([sys.executable, "warp_sched/fig13cd.py", str(path), "--clock-align", "global", "--out",
                           str(tmp_path / "out"), "--json"], cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["tail_start_cycle"] == 15
    assert [k for k in doc["files"] if k.endswith(".png")] == ["fig13c.png", "fig13d.png", "fig13d-sub.png"]


def test_a_figure_that_fails_in_the_figure_process_is_one_error_line(tmp_path, capsys, monkeypatch):
    from warp_sched import fig13cd, figures

    def broken(*a, **k):
        raise ValueError("no room for the zoom")

    monkeypatch.setenv("NEUTRINO_AE_NO_FORK", "0")
    monkeypatch.setattr(figures, "busy_sms_figure", broken)
    path = _tail_table(tmp_path / "t.npz")
    assert fig13cd.main([str(path), "--clock-align", "global", "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.out.splitlines() == CASES["fig13cd"][3]
    assert captured.err.strip().startswith("error: drawing a figure failed: fig13d: no room for the zoom")
