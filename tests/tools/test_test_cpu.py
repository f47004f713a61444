"""tools/test_cpu.py: each test's CPU recorded with the processes it waited for, and two runs compared
allowing for the machine's speed (issue 38)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("test_cpu_tool", REPO / "tools" / "test_cpu.py")
tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tool)

BUSY = "sum(i * i for i in range(3_000_000))"


def test_the_recorder_counts_a_tests_own_cpu_and_its_processes(tmp_path):
    (tmp_path / "test_two.py").write_text(
        "import subprocess, sys\n\n"
        f"def test_in_process():\n    {BUSY}\n\n"
        f"def test_in_a_process():\n    subprocess.run([sys.executable, '-c', '{BUSY}'], check=True)\n")
    out = tmp_path / "cpu.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}  # not this run's xdist worker
    # The tool runs pytest in the checkout; --rootdir keeps the ids relative to tmp_path wherever the checkout
    # lives (without it, a clone under /tmp makes /tmp, the common ancestor, the rootdir: issue 48).
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "test_cpu.py"), "run", str(out), "-q", "-p",
                           "no:cacheprovider", "--rootdir", str(tmp_path), str(tmp_path / "test_two.py")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = tool.load(out)
    mine, child = rows["test_two.py::test_in_process"], rows["test_two.py::test_in_a_process"]
    assert mine["children"] == 0 and mine["self"] > 0.05
    assert child["children"] > 0.05 and child["worker"] == "main"
    assert "2 tests," in proc.stdout and "test_two.py::test_in_a_process" in proc.stdout


def _rows(path: Path, rows: list[tuple[str, float, float]]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "self": s, "children": c, "wall": s + c, "worker": "gw0"}) + "\n"
                            for i, s, c in rows))
    return path


def test_compare_divides_by_the_tests_that_start_no_process(tmp_path):
    # the machine is 10 % slower in the second run (the in-process tests say so); the process test got 10 %
    # cheaper (11.0 CPU-s -> 11.0 x 1.1 x 0.9 = 10.89), which the raw totals hide
    before = tool.load(_rows(tmp_path / "a.jsonl", [("t/a.py::x", 2.0, 0.0), ("t/a.py::y", 1.0, 0.0),
                                                    ("t/b.py::z", 1.0, 10.0), ("t/a.py::tiny", 0.01, 0.0)]))
    after = tool.load(_rows(tmp_path / "b.jsonl", [("t/a.py::x", 2.2, 0.0), ("t/a.py::y", 1.1, 0.0),
                                                   ("t/b.py::z", 1.1, 9.79), ("t/a.py::tiny", 0.05, 0.0)]))
    assert tool.speed_index(before, after) == (2, 3.0, pytest.approx(3.3))  # tiny: under 0.1 CPU-s
    text = tool.compare(before, after)
    assert "x1.100: the machine's speed" in text
    assert "all tests: 14 -> 14 CPU-s (x1.016); allowing for the speed index x0.924" in text
    assert "  11.0    10.9          9.9  t/b.py" in text
