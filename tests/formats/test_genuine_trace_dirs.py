"""Readers on trace directories written by the REAL Neutrino CLI + hook driver + probe engine
(tests/data/genuine/<branch>/<case>, made by tools/genuine/trace_dirs.py over our emulated driver).

Expected values come from what Neutrino wrote (its own analyze hook's printed line, its event.log
and ptxas lines) or from the fill the emulator was given -- never from the code under test.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from neutrino_ae.formats.kernelinfo import COUNT_SIZED
from neutrino_ae.formats.level import Level
from neutrino_ae.formats.records import BLOCK_SCHED, DMAT
from neutrino_ae.formats.tracedir import TraceDir

GENUINE = Path(__file__).resolve().parents[1] / "data" / "genuine"
DIRS = sorted(p for p in GENUINE.glob("*/*") if (p / "event.log").is_file())


def test_both_branches_and_every_case_are_there():
    names = {(p.parent.name, p.name) for p in DIRS}
    cases = {"block_sched", "block_sched-benchmark", "block_sched-partial-warp", "dmat", "dmat-memusage",
             "gmem_bytes", "tensorop"}
    assert names == {(b, c) for b in ("artifact", "main") for c in cases}


@pytest.mark.parametrize("tdir", DIRS, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_every_genuine_trace_dir_reads(tdir):
    td = TraceDir(tdir)
    log = td.event_log()
    assert log.pid is not None and "workload.py" in (log.cmd or "")
    assert len(log.launches) == 1 and log.cut_launch is None
    (kernel,) = td.kernels()
    assert kernel.info is not None and kernel.registers is not None, kernel.register_problem
    assert kernel.registers.extra >= 0 and kernel.registers.by_name
    spec = td.probe()
    assert spec is not None and spec.compiled == (tdir.parent.name == "main")
    launch = log.launches.iloc[0]
    if "benchmark" in tdir.name or "memusage" in tdir.name:
        assert td.results() == []  # neither mode saves a trace (cuda.c: goto leave / goto backup)
        return
    trace = td.open_result(0)
    assert trace.header.grid_size == launch["grid_x"] and trace.header.block_size == launch["block_x"]
    assert [s.level for s in trace.sections] == spec.levels
    # The file holds the header, the descriptors and every buffer as allocated (ceil units per block).
    h = trace.header
    allocated = sum(h.grid_size * h.units_per_block(sec.level) * sec.size for sec in trace.sections)
    assert trace.file_size == 32 + 16 * len(trace.sections) + allocated
    if tdir.parent.name == "main" and trace.sections[0].partial_warp:
        # main's "[exec] save .. size" sums grid * blockSize * size / warpDiv (floor), not what it wrote
        assert launch["save_size"] == 32 + 16 + h.grid_size * h.block_size * 16 // 32 < trace.file_size
    else:
        assert trace.file_size == launch["save_size"]


@pytest.mark.parametrize("branch", ["artifact", "main"])
def test_count_probe_reads_minus_one_and_the_launch_count_size(branch):
    td = TraceDir(GENUINE / branch / "dmat")
    (kernel,) = td.kernels()
    assert kernel.info.probes == [(Level.THREAD, COUNT_SIZED)]
    assert kernel.registers.countd is not None
    text = (td.path / "event.log").read_text(errors="replace")
    count = int(re.search(r"\[count\] size: (\d+)", text).group(1))
    trace = td.open_result(0)
    assert trace.sections[0].size == count == 48  # the emulator's count kernel reported 3 records x 16 B


@pytest.mark.parametrize("branch", ["artifact", "main"])
def test_unfilled_count_slots_are_zero_filled(branch):
    rec = np.asarray(TraceDir(GENUINE / branch / "dmat").open_result(0).records(0, DMAT)).reshape(-1, 3)
    empty = (rec["clock"] == 0) & (rec["addr"] == 0)
    # every 4th thread made one access fewer; the hook driver cuMemsetD32'd the buffer to 0
    assert empty.sum() == 64 and empty[3::4, 2].all() and not empty[:, :2].any()


@pytest.mark.parametrize("branch", ["artifact", "main"])
def test_partial_warps_are_read_with_the_probes_floor_stride(branch):
    trace = TraceDir(GENUINE / branch / "block_sched-partial-warp").open_result(0)
    sec = trace.sections[0]
    assert trace.header.block_size == 112 and sec.partial_warp and sec.units_per_block == 3
    rec = np.asarray(trace.records(0, BLOCK_SCHED))
    # each block's three full warps carry that block's record (the emulator was given block b on SM b)
    assert (rec["smid"] == np.arange(8)[:, None, None]).all()
    assert (rec["elapse"] == 1000).all()
