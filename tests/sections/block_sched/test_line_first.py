"""The artifact's line first (issue 24): ``python block_sched/block_sched.py <trace.bin>`` prints it
before matplotlib is imported (and pandas never is), once; the figures and results follow. And the numpy FIFO
(padded per-position table) agrees with the plain rule on SMs of any load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from block_sched import estimates
from neutrino_ae.formats.bintrace import TraceHeader
from neutrino_ae.formats.bintrace_write import write_trace
from neutrino_ae.formats.records import BLOCK_SCHED

REPO = Path(__file__).resolve().parents[3]
# (lstart, elapse, smid) of each block in index order; the line worked out by hand in test_block_sched.py.
SUBTLE = [(100, 50, 3), (100, 10, 3), (120, 30, 3), (200, 20, 3), (0, 100, 17), (300, 10, 17), (150, 40, 17),
          (1000, 7, 90)]
SUBTLE_LINE = "No.block:8 Running:89 Scheduling:83(cycle)"


def _write(path, blocks, grid):
    arr = np.zeros((len(blocks), 2, 1), dtype=BLOCK_SCHED)  # 64-thread blocks: 2 warps, warp 1 junk
    arr["lstart"], arr["elapse"], arr["smid"] = 10**12 + 999_999, 1, 5
    for i, (lstart, elapse, smid) in enumerate(blocks):
        arr[i, 0, 0] = (10**12 + lstart, elapse, smid)
    write_trace(path, TraceHeader(grid, (64, 1, 1)), [("warp", arr)])
    return path


def _run(args, env=None):
    env = env or {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True)


def test_line_is_printed_before_pandas_or_matplotlib_is_imported(tmp_path):
    # Drawn in this process (no figure process): every import is the command's own.
    path = _write(tmp_path / "t.bin", SUBTLE, grid=(8, 1, 1))
    # -X importtime writes each import to stderr as it happens; stdout is flushed with the line, so
    # with both on one pipe the order shows which imports came before the line.
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", "NEUTRINO_AE_NO_FORK": "1"}
    proc = subprocess.run([sys.executable, "-X", "importtime", "block_sched/block_sched.py", str(path), "--out",
                           str(tmp_path / "out")], cwd=REPO, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:]
    lines = proc.stdout.splitlines()
    at = lines.index(SUBTLE_LINE)
    before = {ln.rsplit("|", 1)[-1].strip() for ln in lines[:at] if ln.startswith("import time:")}
    after = {ln.rsplit("|", 1)[-1].strip() for ln in lines[at:] if ln.startswith("import time:")}
    assert "numpy" in before
    assert not {m for m in before if m.split(".")[0] in ("pandas", "matplotlib", "numba")}
    assert "matplotlib" in after  # the figures come after it
    assert not {m for m in after if m.split(".")[0] == "pandas"}  # the tables are written without it
    printed = [ln for ln in lines if not ln.startswith("import time:")]
    assert printed.count(SUBTLE_LINE) == 1 and printed[0] == SUBTLE_LINE
    assert (tmp_path / "out" / "block_sched_timeline.png").is_file()


def test_with_a_figure_process_the_command_imports_neither_matplotlib_nor_pandas(tmp_path):
    from line_first import run_script, split_at

    path = _write(tmp_path / "t.bin", SUBTLE, grid=(8, 1, 1))
    lines = run_script(["block_sched/block_sched.py", str(path), "--out", str(tmp_path / "out")], watched=True)
    before, _ = split_at(lines, [SUBTLE_LINE])
    # The figure process draws from arrays, and the tables are numpy columns written as pandas would.
    assert "numpy" in before and not {m for m in before if m.split(".")[0] == "pandas"}
    assert "command imported:" in lines, [ln for ln in lines if ln.startswith("command imported")]  # nothing
    for stem in ("block_sched_per_sm.png", "block_sched_per_sm.svg", "block_sched_timeline.png"):
        assert (tmp_path / "out" / stem).stat().st_size > 10_000


@pytest.fixture(scope="module")
def json_run(tmp_path_factory):
    """``block_sched.py t.bin t.bin --out OUT --json`` with ``NEUTRINO_AE_NO_FORK`` = the key, run once per
    key for this module: ``(out folder, process)``. Read by the JSON-mode test and the forked/unforked
    files test (the same command line; ``NO_FORK=0`` is the default, a figure process)."""
    runs = {}

    def run(no_fork: str):
        if no_fork not in runs:
            tmp = tmp_path_factory.mktemp(f"json-nofork{no_fork}")
            path = _write(tmp / "t.bin", SUBTLE, grid=(8, 1, 1))
            runs[no_fork] = tmp / "out", _run(
                ["block_sched/block_sched.py", str(path), str(path), "--out", str(tmp / "out"), "--json"],
                env={**os.environ, "PYTHONPATH": str(REPO), "NEUTRINO_AE_NO_FORK": no_fork})
        return runs[no_fork]

    return run


def test_json_mode_prints_only_the_document(json_run):
    _, proc = json_run("0")  # the default: figures drawn by a figure process
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["traces"][0]["line"] == SUBTLE_LINE


def _plain_rule(lstart, elapse, smid):
    """The artifact's loop, written out (first entry only, blocks in index order)."""
    lists, run, sched = {}, {}, {}
    for s, e, m in zip(lstart.tolist(), elapse.tolist(), smid.tolist(), strict=True):
        lst = lists.setdefault(m, [])
        run[m] = run.get(m, 0) + e
        sched.setdefault(m, 0)
        if lst and lst[0][0] + lst[0][1] <= s:
            sched[m] += s - (lst[0][0] + lst[0][1])
            lst.pop(0)
        lst.append((s, e))
    ids = sorted(lists)
    return ids, [run[i] for i in ids], [sched[i] for i in ids]


@pytest.mark.parametrize("skewed", [False, True])
def test_numpy_fifo_matches_the_plain_rule(skewed):
    rng = np.random.default_rng(3)
    n = 5000
    # Skewed: one SM takes most blocks, so the padded table would be too large and the stepping runs.
    smid = np.where(rng.random(n) < 0.9, 7, rng.integers(0, 40, n)) if skewed else rng.integers(0, 40, n) * 3 + 1
    lstart = np.sort(rng.integers(0, 10**7, n)) + rng.integers(-5000, 5000, n)  # not in index order everywhere
    elapse = rng.integers(0, 20000, n)
    got = estimates.fifo_per_sm(lstart, elapse, smid)
    ids, run, sched = _plain_rule(lstart, elapse, smid)
    assert got.smid.tolist() == ids
    assert got.running_cycles.tolist() == run
    assert got.scheduling_cycles.tolist() == sched
    assert got.blocks.tolist() == np.bincount(smid)[ids].tolist()


def test_a_figure_drawn_in_the_forked_process_that_fails_is_one_error_line(tmp_path, capsys, monkeypatch):
    from block_sched import figures
    from block_sched.block_sched import SECTION_INDEX
    from neutrino_ae.report.command.script import run_main
    from neutrino_ae.report.section import driver, registry

    path = _write(tmp_path / "t.bin", SUBTLE, grid=(8, 1, 1))

    def broken(*a, **k):
        raise ValueError("no room for the timeline")

    monkeypatch.setattr(figures, "timeline_figure", broken)
    main = partial(driver.main, registry.get("block_sched"), flags=SECTION_INDEX)  # block_sched/block_sched.py
    assert run_main(main, [str(path), "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [SUBTLE_LINE]
    assert captured.err.strip() == "error: drawing a figure failed: block_sched_timeline: no room for the timeline"


@pytest.mark.parametrize("no_fork", ["0", "1"])
def test_same_files_with_and_without_the_forked_figure(json_run, no_fork):
    _, proc = json_run(no_fork)
    assert proc.returncode == 0, proc.stderr
    files = json.loads(proc.stdout)["files"]
    assert list(files)[:4] == ["block_sched_per_sm.png", "block_sched_per_sm.svg", "block_sched_timeline.png",
                               "block_sched_compare.png"]
    assert all(Path(p).is_file() for p in files.values())
