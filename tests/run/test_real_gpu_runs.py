"""What the real Neutrino did on a real NVIDIA H200, replayed through our collection and analyses
(tests/data/gpu/h200, see its MANIFEST.md). Expected values are what Neutrino printed or logged on
the GPU (the artifact's analyze hook's line, the event.log numbers, the ptxas lines)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gpu_data import H200, workload_dir

from exposed_latency.main import launch_times, original_time
from kernel_overhead.inputs import measure_cell
from neutrino_ae.workloads.neutrino import run_neutrino

REPO = Path(__file__).resolve().parents[2]
NUM = r"([0-9.]+)"


def replaying_cli(case: Path, tmp_path: Path) -> Path:
    """A stand-in `neutrino` that leaves in its working folder what the real one left on the GPU, and
    prints the stderr it printed there."""
    cli = tmp_path / "neutrino"
    cli.write_text("#!/bin/sh\n"
                   f"cp -r '{case / 'trace'}' ./trace\n"
                   f"cat '{case / 'cli.stderr.log'}' >&2\n")
    cli.chmod(0o755)
    return cli


@pytest.mark.parametrize("case", ["block_sched-benchmark", "dmat", "tensorop"])
def test_a_collection_keeps_the_workloads_folder_not_the_probe_engines(case, tmp_path):
    real = H200 / "artifact" / case
    assert len(list((real / "trace").iterdir())) >= 3  # the workload's + the nvidia-smi calls'
    res = run_neutrino(["-p", "x", "python", "w.py"], None, tmp_path / "out", str(replaying_cli(real, tmp_path)),
                       dest_name="trace")
    assert res.trace_dirs == [tmp_path / "out" / "trace"] and res.trace_dir == tmp_path / "out" / "trace"
    kept = res.trace_dir / "event.log"
    assert kept.read_bytes() == (workload_dir(real) / "event.log").read_bytes()
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == ["trace"]


def test_block_sched_prints_the_artifacts_own_line_for_the_real_paper_size_trace():
    case = H200 / "artifact" / "block_sched-paper"
    printed_on_gpu = (case / "cli.stdout.log").read_text().splitlines()[0]  # Neutrino's analyze hook
    assert printed_on_gpu.startswith("No.block:32768 ")
    (trace,) = (workload_dir(case) / "result").glob("*.bin")
    out = subprocess.run([sys.executable, "block_sched/block_sched.py", str(trace)], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    assert out.splitlines()[0] == printed_on_gpu


@pytest.mark.parametrize("branch", ["artifact", "main"])
def test_exposed_latency_reads_the_real_prologue_kernel_epilogue_and_original(branch):
    text = (workload_dir(H200 / branch / "block_sched-paper") / "event.log").read_text(errors="replace")
    pro, ker, epi = map(float, re.search(rf"\[exec\] prologue {NUM} kernel {NUM} epilogue {NUM}", text).groups())
    times = launch_times(workload_dir(H200 / branch / "block_sched-paper") / "event.log")
    assert times == pytest.approx({"prologue": pro, "kernel": ker, "epilogue": epi, "neutrino": pro + ker + epi})
    bench = (workload_dir(H200 / branch / "block_sched-benchmark") / "event.log")
    orig = float(re.search(rf"\[benchmark\] prologue {NUM} kernel {NUM} epilogue {NUM} original {NUM}",
                           bench.read_text(errors="replace")).group(4))
    assert original_time(bench) == pytest.approx(orig)


@pytest.mark.parametrize("branch", ["artifact", "main"])
@pytest.mark.parametrize("case", ["gmem_bytes-benchmark", "tensorop-benchmark", "block_sched-benchmark"])
def test_table2_cell_from_a_real_benchmark_run(branch, case, tmp_path):
    """A cell folder laid out as the CLI leaves it (the workload's folder beside the nvidia-smi ones):
    slowdown = the benchmark line's impact; extra registers = probed - pruned from process.log."""
    real = H200 / branch / case
    cell_dir = tmp_path / "cell"
    shutil.copytree(real / "trace", cell_dir)
    cell = measure_cell("triton_op", "k", case.split("-")[0], cell_dir)
    text = (workload_dir(real) / "event.log").read_text(errors="replace")
    impact = float(re.search(rf"\[benchmark\] prologue .* impact {NUM}", text).group(1))
    log = next((workload_dir(real) / "kernel").iterdir()) / "process.log"
    used = {m.group(1): int(m.group(2)) for m in re.finditer(
        r"/(probed|pruned)\.ptx -o .*?Used (\d+) registers", log.read_text(), re.S)}
    assert cell.problems == [] and cell.used == 1
    assert cell.trace_dirs == [str(cell_dir / workload_dir(real).name)]
    assert cell.slowdown == pytest.approx(impact)
    assert cell.extra_regs == used["probed"] - used["pruned"]


@pytest.mark.parametrize("branch", ["artifact", "main"])
def test_probe_memory_of_a_real_memusage_run(branch):
    from neutrino_ae.formats.eventlog import parse_event_log

    log = workload_dir(H200 / branch / "dmat-memusage") / "event.log"
    logged = int(re.search(r"\[exec\] probe-mem (\d+)", log.read_text(errors="replace")).group(1))
    assert int(parse_event_log(log).launches["probe_mem"].iloc[0]) == logged == 4 * 64 * 96
