"""Block scheduling metric (Sec. 4.5) on hand-built traces; expectations worked out by hand from the rules."""

from __future__ import annotations

import json
from functools import partial

import numpy as np
import pytest

from block_sched.analysis import analyze_records, artifact_metric, slot_reuse_metric
from block_sched.block_sched import SECTION_INDEX
from block_sched.inputs import first_warp_records
from neutrino_ae.formats.bintrace import TraceHeader, open_trace
from neutrino_ae.formats.bintrace_write import write_trace
from neutrino_ae.formats.records import BLOCK_SCHED
from neutrino_ae.report.command.script import run_main
from neutrino_ae.report.section import driver, registry

cli_main = partial(driver.main, registry.get("block_sched"), flags=SECTION_INDEX)  # block_sched/block_sched.py

BASE = 10**12  # realistic clock64 magnitude; the metric must only use differences


def _write(path, blocks, block_size=64, grid=None, junk_other_warps=True):
    """blocks: list of (lstart, elapse, smid) in block-index order; every other warp gets junk values."""
    n = len(blocks)
    header = TraceHeader(grid or (n, 1, 1), (block_size, 1, 1))
    warps = header.warps_per_block
    arr = np.zeros((n, warps, 1), dtype=BLOCK_SCHED)
    if junk_other_warps:
        arr["lstart"] = BASE + 999_999
        arr["elapse"] = 1
        arr["smid"] = 5
    for i, (lstart, elapse, smid) in enumerate(blocks):
        arr[i, 0, 0] = (BASE + lstart, elapse, smid)
    write_trace(path, header, [("warp", arr)])
    return path


# Blocks in index order. Block size 64 -> 2 warps per block; warp 1 carries junk (smid 5) that must be ignored.
SUBTLE = [
    # SM 3: b1 finishes first (110) but only the list's FIRST entry (b0, ends 150) is checked when b2
    # starts at 120 -> no pop. b3 at 200: b0 ended at 150 -> gap 50, pop b0.
    (100, 50, 3), (100, 10, 3), (120, 30, 3), (200, 20, 3),
    # SM 17: visited by index, b5 (starts 300) before b6 (starts 150): b5 pops b4 (ends 100), gap 200;
    # b6 then sees b5 (ends 310 > 150): no pop. By start time it would have been 50 + 110 = 160.
    (0, 100, 17), (300, 10, 17), (150, 40, 17),
    # SM 90: one block.
    (1000, 7, 90),
]
# running: SM3 50+10+30+20=110, SM17 100+10+40=150, SM90 7 -> 267/3 = 89
# scheduling: SM3 50, SM17 200, SM90 0 -> 250/3 = 83.33 -> 83
SUBTLE_LINE = "No.block:8 Running:89 Scheduling:83(cycle)"


def test_artifact_line_first_entry_and_index_order(tmp_path):
    path = _write(tmp_path / "t.bin", SUBTLE, grid=(4, 2, 1))
    trace = open_trace(path)
    rec = first_warp_records(trace)
    res = analyze_records("t", path, rec)
    assert res.line == SUBTLE_LINE
    per = res.per_sm.set_index("smid")
    assert list(per.index) == [3, 17, 90]
    assert per.loc[3, "blocks"] == 4 and per.loc[3, "running_cycles"] == 110 and per.loc[3, "scheduling_cycles"] == 50
    assert per.loc[17, "running_cycles"] == 150 and per.loc[17, "scheduling_cycles"] == 200
    assert per.loc[90, "scheduling_cycles"] == 0
    assert per.loc[3, "ratio"] == pytest.approx(50 / 110)


def test_slot_reuse_estimator_by_hand(tmp_path):
    path = _write(tmp_path / "t.bin", SUBTLE)
    rec = first_warp_records(open_trace(path))
    reuse = slot_reuse_metric(rec.lstart, rec.elapse, rec.smid).set_index("smid")
    # SM 3: starts 100,100,120,200; ends 110,150,150,220; peak 2 -> (120-110) + (200-150) = 60
    # SM 17: starts 0,150,300; ends 100,190,310; peak 1 -> (150-100) + (300-190) = 160
    assert reuse.loc[3, "peak_resident"] == 2 and reuse.loc[3, "slot_reuse_cycles"] == 60
    assert reuse.loc[17, "peak_resident"] == 1 and reuse.loc[17, "slot_reuse_cycles"] == 160
    assert reuse.loc[90, "slot_reuse_cycles"] == 0


def test_end_equal_to_start_counts_as_finished():
    # b0 [0,10), b1 starts at 10 -> pop with gap 0; b2 starts 25, first entry b1 ends 15 -> gap 10.
    df = artifact_metric(np.array([0, 10, 25]), np.array([10, 5, 1]), np.array([0, 0, 0]))
    assert df["scheduling_cycles"].tolist() == [10]
    assert df["running_cycles"].tolist() == [16]


def test_list_grows_when_nothing_finishes():
    # Four resident blocks start together; b4 starts after b0 ends; b5 checks b1 (still running) -> nothing.
    lstart = np.array([0, 0, 0, 0, 60, 61])
    elapse = np.array([50, 100, 100, 100, 10, 10])
    df = artifact_metric(lstart, elapse, np.zeros(6, np.int64))
    assert df["scheduling_cycles"].tolist() == [10]  # only 60 - 50


def test_cli_prints_line_first_and_writes_outputs(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NEUTRINO_AE_NO_FORK", "1")  # drawn here, not in a fork that imports matplotlib anew
    path = _write(tmp_path / "t.bin", SUBTLE, grid=(8, 1, 1))
    other = _write(tmp_path / "persist.bin", [(0, 100, 4), (100, 50, 4)], block_size=128)
    out = tmp_path / "out"
    assert cli_main([str(path), str(other), "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == SUBTLE_LINE
    # Second trace: one SM, running 150, b1 starts exactly when b0 ends -> scheduling 0.
    assert lines[1] == "No.block:2 Running:150 Scheduling:0(cycle)"
    for name in ("block_sched_per_sm.png", "block_sched_per_sm.svg", "block_sched_timeline.png",
                 "block_sched_compare.png", "block_sched.json", "block_sched_compare.csv", "block_sched_per_sm.md"):
        assert (out / name).is_file(), name
    doc = json.loads((out / "block_sched.json").read_text())
    assert [t["line"] for t in doc["traces"]] == [SUBTLE_LINE, "No.block:2 Running:150 Scheduling:0(cycle)"]
    assert doc["bundle_kind"] == "unknown" and doc["synthetic"] is None  # no bundle.json: provenance unknown


def test_cli_bad_inputs_one_line_errors(tmp_path, capsys):
    short = tmp_path / "short.bin"
    short.write_bytes(b"\x01\x00\x00\x00" * 3)
    assert run_main(cli_main, [str(short), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "short.bin" in err[0] and "truncated" in err[0]

    pkl = tmp_path / "tmp.pkl"
    pkl.write_bytes(b"not read")
    assert run_main(cli_main, [str(pkl), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "tmp.pkl" in err and "arbitrary code" in err


def test_wrong_probe_trace_refused(tmp_path, capsys):
    from neutrino_ae.formats.records import DMAT

    path = tmp_path / "dmat.bin"
    write_trace(path, TraceHeader((2, 1, 1), (4, 1, 1)), [("thread", np.zeros((2, 4, 2), dtype=DMAT))])
    assert run_main(cli_main, [str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "dmat.bin" in err[0] and "wrong probe" in err[0]


def _timeline(path, max_blocks):
    from block_sched.analysis import timeline_spec
    from block_sched.figures import timeline_figure

    shown = timeline_spec(analyze_records("t", path, first_warp_records(open_trace(path))), False,
                          max_blocks=max_blocks)
    return timeline_figure(dict(shown.arrays), dict(shown.params))


def test_timeline_draws_a_bounded_number_of_blocks_and_says_so(tmp_path):
    # One SM, 5000 blocks, 4 resident at a time: the figure shows the first 100 by start time.
    n = 5000
    path = _write(tmp_path / "t.bin", [(i // 4 * 1000 + i % 4, 900, 0) for i in range(n)], grid=(n, 1, 1))
    fig = _timeline(path, max_blocks=100)
    titles = [ax.get_title() for ax in fig.axes]
    assert "SM 0: first 100 of 5,000 blocks, ratio" in titles[0]
    drawn = sum(len(c.get_paths()) for c in fig.axes[0].collections)
    assert drawn == 100
    full = _timeline(path, max_blocks=n)
    assert full.axes[0].get_title().startswith("SM 0: 5,000 blocks")


def test_the_fixes_are_judged_on_scheduling_cycles_not_on_a_ratio_the_fix_also_changes():
    # The paper-scale sample run (neutrino-ae run static -p sample_scale paper): the memset's short
    # blocks keep the artifact's ratio near the raw kernel's while its scheduling cycles drop 8x.
    from block_sched.claims import CLAIMS
    from neutrino_ae.report.claims import PASS, evaluate

    values = {"raw.mean_scheduling_cycles": 91312.1, "raw.scheduling_ratio": 0.1517,
              "memset.mean_scheduling_cycles": 11414.7, "memset.scheduling_ratio": 0.08961,
              "persistent.mean_scheduling_cycles": 0.0, "persistent.scheduling_ratio": 0.0}
    by_name = {c.id: c for c in CLAIMS}
    for name in ("memset-fix", "persistent-fix"):
        assert evaluate("block_sched", by_name[name], values).status == PASS, name
    values["memset.mean_scheduling_cycles"] = 50000.0  # less than half the raw cost removed
    assert evaluate("block_sched", by_name["memset-fix"], values).status != PASS
