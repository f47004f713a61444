"""benchmarks/stage_marks.py: the stages of a per-figure command, in the order they happen."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from neutrino_ae.formats.bintrace import TraceHeader
from neutrino_ae.formats.bintrace_write import write_trace
from neutrino_ae.formats.records import BLOCK_SCHED

REPO = Path(__file__).resolve().parents[2]


def test_marks_come_in_the_commands_order_and_every_figure_is_timed(tmp_path):
    n = 64
    arr = np.zeros((n, 1, 1), dtype=BLOCK_SCHED)
    arr["lstart"] = (10**9 + np.arange(n) // 4 * 1000).reshape(n, 1, 1)
    arr["elapse"], arr["smid"] = 900, (np.arange(n) % 4).reshape(n, 1, 1)
    write_trace(tmp_path / "t.bin", TraceHeader((n, 1, 1), (32, 1, 1)), [("warp", arr)])
    env = {**os.environ, "PYTHONPATH": str(REPO), "NEUTRINO_AE_NO_FORK": "0"}
    proc = subprocess.run([sys.executable, "-m", "benchmarks.stage_marks", "block_sched/block_sched.py",
                           str(tmp_path / "t.bin"), "--out", str(tmp_path / "out")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("No.block:64 ")
    marks = dict(re.findall(r"(\w[\w-]*)=(\d+\.\d+)", proc.stderr.strip().splitlines()[-1]))
    assert list(marks) == ["fork", "line", "send", "join-start", "join-end", "end"]
    times = [float(v) for v in marks.values()]
    assert times == sorted(times)
    drawn = re.findall(r"\] (block_sched_\w+): (\d+\.\d+) -> (\d+\.\d+)", proc.stderr)
    assert sorted(s for s, _, _ in drawn) == ["block_sched_per_sm", "block_sched_timeline"]
    assert all(float(marks["send"]) <= float(b) <= float(e) <= float(marks["join-end"]) for _, b, e in drawn)
