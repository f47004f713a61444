"""event.log writer → parser round trips, the grouping rule, robustness, fast path == regex path."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neutrino_ae.errors import InputError
from neutrino_ae.formats.eventlog import LAUNCH_COLUMNS, EventLogWriter, parse_bytes, parse_event_log


def _sample_writer() -> EventLogWriter:
    w = EventLogWriter().pid(1860576).cmd(["python", "block_sched/raw.py"]).l2_flush(50331648)
    w.line("[info] init success")
    w.mem_alloc(0x7FDF78000000, 33554432)
    w.launch(1_700_000_000_123_456_789, [0x7FDF78000000, 0x7FDF7A000000, 4096], (32768, 1, 1), (128, 1, 1),
             probe_bytes=16, probe_mem=2097152, save=("./trace/x/result/0.486795.bin", 2097184),
             timing=(0.5, 2.0, 1.5))
    w.line("[jit] find something")
    w.launch(1_700_000_000_223_456_789, [0x10], (3, 2, 1), (48, 1, 1), shared=1024, probe_bytes=8,
             probe_level="thread", benchmark=(0.1, 1.2, 0.3, 1.0))
    w.launch(1_700_000_000_323_456_789, [], (1, 1, 1), (32, 1, 1), probe_bytes=16, failed=True)
    w.line("[analyze] subproc python block_sched.py ./trace/x/result/0.486795.bin")
    return w


def test_round_trip(tmp_path: Path) -> None:
    path = _sample_writer().write(tmp_path / "event.log")
    el = parse_event_log(path)
    assert (el.pid, el.cmd, el.l2_flush_bytes) == (1860576, "python block_sched/raw.py", 50331648)
    assert path.read_text().splitlines()[1] == "[cmd] 26 python block_sched/raw.py"
    assert list(el.launches.columns) == LAUNCH_COLUMNS
    df = el.launches
    assert df["launch"].tolist() == [0, 1, 2]
    assert df["time_ns"].tolist() == [1_700_000_000_123_456_789, 1_700_000_000_223_456_789,
                                      1_700_000_000_323_456_789]
    assert df["params"].tolist() == [(0x7FDF78000000, 0x7FDF7A000000, 4096), (0x10,), ()]
    assert df[["grid_x", "grid_y", "block_x", "shared"]].values.tolist() == [[32768, 1, 128, 0], [3, 2, 48, 1024],
                                                                              [1, 1, 32, 0]]
    assert df["probe_level"].tolist() == ["warp", "thread", "warp"]
    assert df["probe_units"].tolist() == [4, 48, 1]
    # total = gridSize * units * bytes, computed here independently
    assert df["total_bytes"].tolist() == [32768 * 4 * 16, 6 * 48 * 8, 16]
    assert df["probe_mem"][0] == 2097152 and pd.isna(df["probe_mem"][1])
    assert df["save_path"].tolist() == ["./trace/x/result/0.486795.bin", None, None]
    assert df["save_size"][0] == 2097184
    assert df["prologue_ms"][0] == 0.5 and df["kernel_ms"][0] == 2.0 and df["epilogue_ms"][0] == 1.5
    assert df["ratio"][0] == pytest.approx(4.0 / 2.0)
    assert math.isnan(df["original_ms"][0])
    assert df["kernel_ms"][1] == 1.2 and df["original_ms"][1] == 1.0
    assert df["impact"][1] == pytest.approx(1.2)
    assert df["rc"][1] == 0 and pd.isna(df["rc"][0])
    assert df["failed"].tolist() == [False, False, True]
    assert el.mem.to_dict("records") == [{"op": "cuMemAlloc_v2", "rc": 0, "dptr": 0x7FDF78000000,
                                          "bytesize": 33554432}]
    assert el.analyze == ["subproc python block_sched.py ./trace/x/result/0.486795.bin"]
    assert el.truncated_tail is None


def _frames_equal(a, b) -> None:
    pd.testing.assert_frame_equal(a.launches, b.launches)
    pd.testing.assert_frame_equal(a.mem, b.mem)
    assert (a.pid, a.cmd, a.l2_flush_bytes, a.analyze, a.truncated_tail) == (
        b.pid, b.cmd, b.l2_flush_bytes, b.analyze, b.truncated_tail)


def test_fast_path_equals_regex_path() -> None:
    data = _sample_writer().text().encode()
    _frames_equal(parse_bytes(data), parse_bytes(data, vectorised=False))


def test_odd_lines_fall_back_to_regex_and_agree() -> None:
    # Double spaces (as in the format doc's "warp  <warps>"), a trailing \r, an rc < 0.
    text = ("[exec] 10 param 7f 80\r\n[exec] grid 2 1 1 block 33 1 1 shared 0\n"
            "[exec] grid 2 warp  2 probe 16 total 64\n"
            "[benchmark] prologue 1 kernel 2 epilogue 3 original 4 impact 0.5 -1\n")
    fast, slow = parse_bytes(text.encode()), parse_bytes(text.encode(), vectorised=False)
    _frames_equal(fast, slow)
    row = fast.launches.iloc[0]
    assert row["params"] == (0x7F, 0x80) and row["probe_units"] == 2 and row["rc"] == -1


def test_grouping_rule() -> None:
    text = ("[exec] probe-mem 99 (bytes)\n"  # before any launch: ignored
            "[exec] grid 1 1 1 block 32 1 1 shared 0\n"  # no open launch: opens one
            "[exec] grid 2 1 1 block 32 1 1 shared 0\n"  # launch already has one: opens another
            "[exec] probe-mem 5 (bytes)\n[exec] probe-mem 6 (bytes)\n"  # first wins
            "[exec] 7 param 1\n[exec] grid 3 1 1 block 64 1 1 shared 0\n")
    df = parse_bytes(text.encode()).launches
    assert df["grid_x"].tolist() == [1, 2, 3]
    assert df["probe_mem"].tolist()[1] == 5 and pd.isna(df["probe_mem"][0])
    assert df["time_ns"].isna().tolist() == [True, True, False]


def test_garbage_and_truncated_tail(tmp_path: Path) -> None:
    good = _sample_writer().text().encode()
    blob = (b"\xff\xfe\x00garbage\n[exec] 12x param zz\n[exec] grid 1 1\n" + good
            + b"[mem] cuMemAlloc_v2 0 dptr \xff\xff bytesize 1\n[exec] 9 param 7fdf78")
    p = tmp_path / "event.log"
    p.write_bytes(blob)
    el = parse_event_log(p)
    ref = parse_bytes(good)
    pd.testing.assert_frame_equal(el.launches, ref.launches)
    assert len(el.mem) == 1
    assert el.truncated_tail == "[exec] 9 param 7fdf78"
    _frames_equal(el, parse_bytes(blob, p, vectorised=False))


def test_oversized_number_skipped() -> None:
    el = parse_bytes(b"[exec] 123456789012345678901234 param 1\n[exec] 5 param 2\n")
    assert el.launches["params"].tolist() == [(2,)]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such event.log") as info:
        parse_event_log(tmp_path / "event.log")
    assert str(info.value).startswith(str(tmp_path))


def test_empty_log() -> None:
    el = parse_bytes(b"")
    assert len(el.launches) == 0 and list(el.launches.columns) == LAUNCH_COLUMNS and el.pid is None


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(
    st.integers(0, 2**62), st.lists(st.integers(0, 2**64 - 1), max_size=5),
    st.tuples(st.integers(1, 2**31 - 1), st.integers(1, 3), st.integers(1, 2)),
    st.tuples(st.integers(1, 1024), st.integers(1, 4), st.integers(1, 4)),
    st.sampled_from(["warp", "thread"]), st.integers(1, 64), st.booleans(),
    st.floats(0.001, 1e4), st.floats(0.001, 1e4)), max_size=8))
def test_property_round_trip(launches) -> None:
    w = EventLogWriter()
    for ns, params, grid, block, level, nbytes, failed, kern, orig in launches:
        w.launch(ns, params, grid, block, probe_bytes=nbytes, probe_level=level, failed=failed,
                 timing=(0.1, kern, 0.2), benchmark=(0.1, kern, 0.2, orig))
    data = w.text().encode()
    el = parse_bytes(data)
    _frames_equal(el, parse_bytes(data, vectorised=False))
    df = el.launches
    assert len(df) == len(launches)
    for i, (ns, params, grid, block, level, nbytes, failed, kern, orig) in enumerate(launches):
        row = df.iloc[i]
        assert row["time_ns"] == ns and row["params"] == tuple(params) and bool(row["failed"]) == failed
        assert (row["grid_x"], row["grid_y"], row["grid_z"]) == grid
        units = block[0] * block[1] * block[2]
        units = -(-units // 32) if level == "warp" else units
        assert row["total_bytes"] == grid[0] * grid[1] * grid[2] * units * nbytes
        if not failed:
            assert row["kernel_ms"] == pytest.approx(kern, abs=1e-6)
            assert row["impact"] == pytest.approx(float(f"{kern / orig:.6f}"))
        else:
            assert np.isnan(row["kernel_ms"])
