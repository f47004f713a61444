"""The per-figure command lines on trace directories written by the REAL Neutrino (both branches).

The oracle for Sec. 4.5 is Neutrino itself: the artifact branch's own analyze hook
(tools/block_sched.py) ran on each trace when it was collected and printed its line into the CLI's
stdout (cli.stdout.log); our script must print the same line on the same trace, for both branches.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from script_here import script_here

REPO = Path(__file__).resolve().parents[2]
GENUINE = REPO / "tests" / "data" / "genuine"


def _cli(*argv: str, in_process: bool = False) -> subprocess.CompletedProcess[str]:
    """``python <script> <args>`` in the checkout. Each script runs as a process once (its artifact-branch
    case); its other cases (``in_process``) run the script as ``__main__`` in this process
    (tests/script_here.py: its ``sys.argv`` and exit status as in the process, the output captured)."""
    if not in_process:
        return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=REPO, timeout=180,
                              check=False)
    script, *args = argv
    return script_here(REPO / script, args, cwd=REPO)


def _once(branch: str, first: bool = True) -> bool:
    """``_cli``'s ``in_process``: False (a process) for the artifact branch's (first) case, else True."""
    return not (branch == "artifact" and first)


@pytest.mark.parametrize("branch", ["artifact", "main"])
@pytest.mark.parametrize("case", ["block_sched", "block_sched-partial-warp"])
def test_block_sched_prints_what_the_artifacts_own_hook_printed(tmp_path, branch, case):
    oracle = (GENUINE / "artifact" / case / "cli.stdout.log").read_text().splitlines()[0]
    assert oracle.startswith("No.block:")
    proc = _cli("block_sched/block_sched.py", str(GENUINE / branch / case), "--out", str(tmp_path),
                in_process=_once(branch, case == "block_sched"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == oracle


@pytest.mark.parametrize("branch", ["artifact", "main"])
def test_dmat_on_a_genuine_count_trace(tmp_path, branch):
    proc = _cli("dmat/dmat.py", str(GENUINE / branch / "dmat"), "--out", str(tmp_path), "--json",
                in_process=_once(branch))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    # the emulator's fill: 256 threads x 3 records on 3 pages; 64 threads left one slot unfilled
    assert (doc["accesses"], doc["pages"], doc["unfilled_slots_excluded"]) == (256 * 3 - 64, 3, 64)


@pytest.mark.parametrize("branch", ["artifact", "main"])
def test_table2_on_a_genuine_benchmark_trace(tmp_path, branch):
    cell = tmp_path / "tree" / "triton_op" / "attn" / "block_sched"
    shutil.copytree(GENUINE / branch / "block_sched-benchmark", cell / "trace")
    shutil.copy(GENUINE / branch / "block_sched-benchmark" / "cli.stdout.log", cell / "stdout.log")
    proc = _cli("kernel_overhead/kernel_overhead.py", str(tmp_path / "tree"), "--out", str(tmp_path / "o"), "--json",
                in_process=_once(branch))
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["cells"]
    log = (cell / "trace" / "event.log").read_text(errors="replace")
    impact = float(log.split("[benchmark] prologue")[1].split(" impact ")[1].split()[0])
    regs = [int(x) for x in __import__("re").findall(r"Used (\d+) registers", next(
        (cell / "trace" / "kernel").glob("*/process.log")).read_text())]
    assert row["slowdown"] == pytest.approx(impact) and row["extra_regs"] == regs[0] - regs[1] > 0


@pytest.mark.parametrize("branch", ["artifact", "main"])
def test_fig11_on_a_genuine_memusage_trace(tmp_path, branch):
    sub = tmp_path / "tree" / "llama1b-bs32" / "dmat" / "layer"
    shutil.copytree(GENUINE / branch / "dmat-memusage", sub / "Nov23_000000_1")
    shutil.copy(GENUINE / branch / "dmat-memusage" / "cli.stdout.log", sub / "stdout.log")
    proc = _cli("max_mem/max_mem.py", str(tmp_path / "tree"), "--out", str(tmp_path / "o"), "--json",
                in_process=_once(branch))
    assert proc.returncode == 0, proc.stderr
    rows = {r["key"]: r["value"] for r in json.loads(proc.stdout)["summary"]}
    assert rows["llama1b-bs32.dmat.probe_mem_max"] == 12288  # "[exec] probe-mem 12288 (bytes)"
    assert rows["llama1b-bs32.dmat.workload_max"] == 12288  # the workload's "max memory:" line
