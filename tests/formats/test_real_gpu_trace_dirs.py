"""Readers on trace directories the real Neutrino wrote on a real NVIDIA H200
(tests/data/gpu/h200/<branch>/<case>, collected by tools/real_gpu/session.py; see its MANIFEST.md).

Expected values come from what Neutrino and the GPU wrote (event.log lines, the ptxas lines in
process.log, the artifact's own analyze hook's printed line), never from the code under test.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from gpu_data import H200, workload_dir

from neutrino_ae.formats.records import BLOCK_SCHED, DMAT
from neutrino_ae.formats.tracedir import TraceDir, find_trace_dirs, launched_nothing, newest_trace_dir

CASES = sorted(p for p in H200.glob("*/*") if (p / "command.txt").is_file())


def test_every_case_of_both_branches_is_there():
    names = {(p.parent.name, p.name) for p in CASES}
    assert len(names) == 24 and {b for b, _ in names} == {"artifact", "main"}


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_the_newest_collection_is_the_workload_not_the_probe_engines_nvidia_smi(case):
    """On a real GPU the probe engine's `nvidia-smi` calls run under the hook too and leave folders a
    second newer than the workload's; "the newest collection" must still be the workload's."""
    folders = list((case / "trace").iterdir())
    helpers = [d for d in folders if "nvidia-smi" in (d / "event.log").read_text(errors="replace")]
    assert helpers and len(helpers) == len(folders) - 1  # what the real run left (MANIFEST.md)
    assert all(launched_nothing(d) for d in helpers) and not launched_nothing(workload_dir(case))
    assert newest_trace_dir(case / "trace") == workload_dir(case)
    assert find_trace_dirs(case / "trace") == [workload_dir(case)]


def test_helper_folders_alone_are_still_found(tmp_path):
    case = H200 / "artifact" / "block_sched"
    for d in (case / "trace").iterdir():
        if d != workload_dir(case):
            (tmp_path / d.name).mkdir()
            (tmp_path / d.name / "event.log").write_bytes((d / "event.log").read_bytes())
    assert len(find_trace_dirs(tmp_path)) == 2  # nothing better beside them: not hidden


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_every_real_trace_dir_reads(case):
    td = TraceDir(workload_dir(case))
    log = td.event_log()
    assert log.pid is not None and "workload.py" in (log.cmd or "")
    assert len(log.launches) == 1
    (kernel,) = td.kernels()
    # CUDA 13's ptxas prints "Used 17 registers, used 0 barriers" (no cmem field): still read
    assert kernel.registers is not None, kernel.register_problem
    builds = {}  # each ptxas command names its build (probed.ptx, pruned.ptx, countd.ptx); its lines follow
    for chunk in re.split(r"^(?=ptxas -arch)", (kernel.path / "process.log").read_text(errors="replace"), flags=re.M):
        name, used = re.search(r"/(\w+)\.ptx -o", chunk), re.search(r"Used (\d+) registers", chunk)
        if name and used:
            builds[name.group(1)] = int(used.group(1))
    regs = kernel.registers
    assert (regs.probed, regs.pruned, regs.countd) == (builds["probed"], builds["pruned"], builds.get("countd"))
    launch = log.launches.iloc[0]
    if "benchmark" in case.name or "memusage" in case.name:
        assert td.results() == []
        return
    trace = td.open_result(0)
    if f"* {case.parent.name}/{case.name}: " in (H200 / "MANIFEST.md").read_text():  # cut to its first blocks
        assert trace.header.grid_size < launch["grid_x"] and trace.header.block_size == launch["block_x"]
        return
    assert (trace.header.grid_size, trace.header.block_size) == (launch["grid_x"], launch["block_x"])
    h = trace.header
    allocated = sum(h.grid_size * h.units_per_block(sec.level) * sec.size for sec in trace.sections)
    assert trace.file_size == 32 + 16 * len(trace.sections) + allocated
    if case.parent.name == "main" and trace.sections[0].partial_warp:
        # main's "[exec] save .. size" counts grid * blockSize * size / warpDiv (floor), not what it wrote
        assert launch["save_size"] == 32 + 16 + h.grid_size * h.block_size * 16 // 32 < trace.file_size
    else:
        assert trace.file_size == launch["save_size"]


@pytest.mark.parametrize("branch", ["artifact", "main"])
def test_real_block_sched_records_are_plausible(branch):
    """H200: 132 SMs; every warp of a block saves the same start and SM; clocks are real (non-zero)."""
    tr = TraceDir(workload_dir(H200 / branch / "block_sched-paper")).open_result(0)
    rec = np.asarray(tr.records(0, BLOCK_SCHED))
    assert rec.shape[1:] == (4, 1)
    r = rec[:, :, 0]
    assert (r["lstart"] > 0).all() and (r["elapse"] > 0).all()
    assert set(np.unique(r["smid"])) <= set(range(132)) and len(np.unique(r["smid"])) == 132
    assert (r["smid"] == r["smid"][:, :1]).all()


@pytest.mark.parametrize("branch", ["artifact", "main"])
def test_real_dmat_count_size_and_zero_filled_slots(branch):
    """The count pass's size is what event.log reports; threads that return early (i >= n: the workload
    passes n = 4) leave their slots as the hook driver zeroed them (no all-ones marker on this GPU)."""
    td = TraceDir(workload_dir(H200 / branch / "dmat"))
    count = int(re.search(r"\[count\] size: (\d+)", (td.path / "event.log").read_text()).group(1))
    trace = td.open_result(0)
    assert trace.sections[0].size == count == 96
    rec = np.asarray(trace.records(0, DMAT)).reshape(4 * 64, 6)
    filled = rec["clock"] != 0
    assert filled[:4].all() and not filled[4:].any()
    assert (rec["addr"][4:] == 0).all() and (np.diff(rec["clock"][:4].astype(np.int64), axis=1) > 0).all()


def test_a_kernel_without_ptx_says_so_instead_of_only_no_result():
    """Real H200 run: PyTorch without PTX; the probe engine's error is in process.log, not in our message."""
    td = TraceDir(next((H200 / "failed" / "torch-no-ptx" / "trace").iterdir()))
    with pytest.raises(Exception) as err:
        td.newest_result()
    msg = str(err.value)
    assert "no result/*.bin" in msg and "ValueError: PTX Not Found in CUBIN" in msg and "PTX-included build" in msg
    assert "\n" not in msg


def test_a_process_that_died_before_launching_says_so():
    """Real H200 run: Triton's launcher crashed under the hook; event.log stops after `[info] dl`."""
    td = TraceDir(next((H200 / "failed" / "triton-launch" / "trace").iterdir()))
    with pytest.raises(Exception, match="records no kernel launch"):
        td.newest_result()


def test_the_hook_drivers_empty_folders_do_not_make_a_helper_a_collection(tmp_path):
    """The hook driver creates result/ and kernel/ at start-up, in the nvidia-smi calls' folders too
    (git keeps no empty folder, so the committed real folders lack them)."""
    case = H200 / "artifact" / "dmat"
    for d in (case / "trace").iterdir():
        (tmp_path / d.name / "result").mkdir(parents=True)
        (tmp_path / d.name / "kernel").mkdir()
        (tmp_path / d.name / "event.log").write_bytes((d / "event.log").read_bytes())
    assert [launched_nothing(d) for d in sorted(tmp_path.iterdir())] == [False, True, True, True]
    assert newest_trace_dir(tmp_path).name == workload_dir(case).name
