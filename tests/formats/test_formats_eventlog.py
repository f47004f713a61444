"""event.log writer → parser round trips, the grouping rule, robustness, fast path == regex path."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neutrino_ae.errors import InputError
from neutrino_ae.formats.eventlog import LAUNCH_COLUMNS, parse_bytes, parse_event_log, parse_text
from neutrino_ae.formats.eventlog import kinds as kinds
from neutrino_ae.formats.eventlog import scan as scan
from neutrino_ae.formats.eventlog import tags as tags
from neutrino_ae.formats.eventlog.write import EventLogWriter


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
    # launch 1 gave no probe_mem: the writer prints the total of its probe lines, as the hook does
    assert df["probe_mem"][0] == 2097152 and df["probe_mem"][1] == 3 * 2 * 48 * 8
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


def _same_frame(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Equal names, dtypes, index and values, floats exactly (NaN where NaN): stricter than
    ``assert_frame_equal``'s default tolerance and a few times faster on these small frames, which
    the 500-example property below compares a thousand times."""
    assert list(a.columns) == list(b.columns), (list(a.columns), list(b.columns))
    assert a.dtypes.tolist() == b.dtypes.tolist(), (a.dtypes, b.dtypes)
    assert type(a.index) is type(b.index) and a.index.equals(b.index), (a.index, b.index)
    if not a.equals(b):
        pd.testing.assert_frame_equal(a, b, check_exact=True)  # says where they differ
        raise AssertionError(f"frames differ:\n{a}\n{b}")


def _frames_equal(a, b) -> None:
    _same_frame(a.launches, b.launches)
    _same_frame(a.mem, b.mem)
    assert (a.pid, a.cmd, a.l2_flush_bytes, a.analyze, a.truncated_tail) == (
        b.pid, b.cmd, b.l2_flush_bytes, b.analyze, b.truncated_tail)


def test_fast_path_equals_regex_path() -> None:
    data = _sample_writer().text().encode()
    _frames_equal(parse_bytes(data), parse_bytes(data, vectorised=False))


def test_odd_lines_fall_back_to_regex_and_agree() -> None:
    # A trailing \r on a param line (its kind falls back), "warp  <warps>", an rc < 0.
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
    _frames_equal(el, parse_bytes(_old_shapes(w.text()).encode()))
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


def _old_shapes(text: str) -> str:
    """The writer's log in the shapes earlier writers printed: no space after the last pointer, one
    space after "warp", no "succeed" line, "failed to launch probed kernel"."""
    out = []
    for line in text.splitlines():
        if line == "[exec] succeed 0":
            continue
        if line.startswith("[exec] failed "):
            line = "[exec] failed to launch probed kernel"
        elif line.startswith("[exec] grid "):
            line = line.replace(" warp  ", " warp ")
        elif line.startswith("[exec] ") and line[7:8].isdigit():
            assert line.endswith(" ")
            line = line[:-1]
        out.append(line)
    return "".join(line + "\n" for line in out)


# Lines as Neutrino's hook driver (neutrino/src/cuda.c) prints them, written out by hand from its
# fprintf formats: "[exec] %lld param " + "%llx " per argument, "grid %zu warp  %zu probe %d total %zu"
# (one line per probe), "[exec] succeed %d" / "[exec] failed %d", "%f" times. A real run prints either
# "[exec] prologue" (normal mode) or "[benchmark] prologue" lines; both kinds are here to check both.
_REAL_LOG = "".join(line + "\n" for line in [
    "[benchmark] ENABLED L2 Flush Size 50331648",
    "[info] init success",
    "[mem] cuMemAlloc_v2 0 dptr 7f3a5c000000 bytesize 4194304",
    "[jit] find 0x55d0c3a0 name _Z6kernelPfS_i bin 0x55d0c400 size 4096",
    "[exec] funcmap-find 0x55d0c3a0 success",
    "[exec] 1737613657268336123 param 7f3a5c000000 7f3a5c200000 400 ",
    "[exec] grid 64 2 1 block 256 1 1 shared 49152",
    "[exec] grid 128 warp  8 probe 16 total 16384",
    "[exec] grid 128 warp  8 probe 8 total 8192",
    "[exec] probe-mem 24576 (bytes)",
    "[exec] succeed 0",
    "[exec] save ./trace/Jan_23_06_27_37_268336/result/0.486795.bin size 24640",
    "[benchmark] prologue 0.012288 kernel 0.034816 epilogue 0.101376 original 0.030720 impact 1.133333 0",
    "[exec] funcmap-find 0x55d0c3b0 success",
    "[exec] 1737613657301000456 param 7f3a5c400000 ",
    "[exec] grid 3 1 1 block 100 1 1 shared 0",
    "[exec] grid 3 block 100 probe 4 total 1200",
    "[exec] probe-mem 1200 (bytes)",
    "[exec] succeed 0",
    "[exec] save ./trace/Jan_23_06_27_37_268336/result/0.512001.bin size 1248",
    "[exec] prologue 0.008192 kernel 0.010240 epilogue 0.050176 ratio 6.700000",
    "[exec] funcmap-find 0x55d0c3c0 fail",
    "[exec] funcmap-find 0x55d0c3d0 success",
    "[exec] 1737613657350000789 param ",
    "[exec] grid 1 1 1 block 32 1 1 shared 0",
    "[exec] grid 1 warp  1 probe 16 total 16",
    "[exec] probe-mem 16 (bytes)",
    "[exec] failed 701",
])


def _fast_kinds(log: scan.LogLines) -> list:
    return [(kinds.param_lines(log), kinds.fast_params)] + [
        (log.with_prefix(prefix), fast) for prefix, fast in [
            (tags.P_GRID, kinds.fast_grid), (tags.P_PROBE_MEM, kinds.fast_probe_mem),
            (tags.P_SAVE, kinds.fast_save), (tags.P_TIMING, kinds.fast_timing),
            (tags.P_BENCH, kinds.fast_bench)]]


def _assert_fast_path_taken(data: bytes, min_lines: int = 1) -> None:
    """Every kind's vectorised parse accepts all its lines (no fallback to the regexes)."""
    log = scan.LogLines(scan.padded_buffer(data), len(scan.FRONT) + len(data))
    for lines, fast in _fast_kinds(log):
        assert lines.size >= min_lines, fast.__name__
        assert scan.in_blocks(log, lines, fast) is not None, fast.__name__


def test_real_neutrino_lines() -> None:
    data = _REAL_LOG.encode()
    el = parse_bytes(data)
    _frames_equal(el, parse_bytes(data, vectorised=False))
    _assert_fast_path_taken(data)
    assert (el.pid, el.cmd, el.l2_flush_bytes, el.truncated_tail) == (None, None, 50331648, None)
    assert el.mem.to_dict("records") == [{"op": "cuMemAlloc_v2", "rc": 0, "dptr": 0x7F3A5C000000,
                                          "bytesize": 4194304}]
    df = el.launches
    nan, na = float("nan"), None
    expected = {
        "launch": [0, 1, 2],
        "time_ns": [1737613657268336123, 1737613657301000456, 1737613657350000789],
        "params": [(0x7F3A5C000000, 0x7F3A5C200000, 0x400), (0x7F3A5C400000,), ()],
        "grid_x": [64, 3, 1], "grid_y": [2, 1, 1], "grid_z": [1, 1, 1],
        "block_x": [256, 100, 32], "block_y": [1, 1, 1], "block_z": [1, 1, 1], "shared": [49152, 0, 0],
        # two probe lines in launch 0: the first one is kept
        "probe_level": ["warp", "thread", "warp"], "probe_units": [8, 100, 1], "probe_bytes": [16, 4, 16],
        "total_bytes": [16384, 1200, 16], "probe_mem": [24576, 1200, 16],
        "save_path": ["./trace/Jan_23_06_27_37_268336/result/0.486795.bin",
                      "./trace/Jan_23_06_27_37_268336/result/0.512001.bin", None],
        "save_size": [24640, 1248, na],
        "prologue_ms": [0.012288, 0.008192, nan], "kernel_ms": [0.034816, 0.010240, nan],
        "epilogue_ms": [0.101376, 0.050176, nan], "ratio": [nan, 6.7, nan],
        "original_ms": [0.030720, nan, nan], "impact": [1.133333, nan, nan], "rc": [0, na, na],
        "failed": [False, False, True],
    }
    assert list(expected) == LAUNCH_COLUMNS
    for col, want in expected.items():
        got = [None if v is pd.NA else v for v in df[col].tolist()]
        if col.endswith("_ms") or col in ("ratio", "impact"):
            assert np.array_equal(np.array(got, dtype=float), np.array(want), equal_nan=True), col
        else:
            assert got == want, col
    # The same launches in the shapes earlier writers printed (and no funcmap/succeed lines) parse the same.
    old = "".join(line.replace(" warp  ", " warp ").rstrip(" ") + "\n" for line in _REAL_LOG.splitlines()
                  if not line.startswith(("[exec] succeed", "[exec] funcmap-find")))
    assert old != _REAL_LOG and "warp  " not in old
    _frames_equal(el, parse_bytes(old.encode()))
    _frames_equal(el, parse_bytes(old.encode(), vectorised=False))


def test_writer_prints_neutrino_shapes() -> None:
    w = EventLogWriter().l2_flush(50331648)
    w.launch(1737613657268336123, [0x7F3A5C000000, 0x7F3A5C200000, 0x400], (64, 2, 1), (256, 1, 1), 49152,
             probe_bytes=24, probe_mem=24576, save=("./r/0.486795.bin", 24640),
             benchmark=(0.012288, 0.034816, 0.101376, 0.030720))
    w.launch(1737613657301000456, [0x7F3A5C400000], (3, 1, 1), (100, 1, 1), probe_bytes=4, probe_mem=1200,
             save=("./r/0.512001.bin", 1248), timing=(0.008192, 0.010240, 0.050176), probe_level="thread")
    w.launch(1737613657350000789, [], (1, 1, 1), (32, 1, 1), probe_bytes=16, probe_mem=16, failed=True,
             save=("./r/never.bin", 1), timing=(1.0, 1.0, 1.0))
    assert w.text() == "".join(line + "\n" for line in [
        "[benchmark] ENABLED L2 Flush Size 50331648",
        "[exec] 1737613657268336123 param 7f3a5c000000 7f3a5c200000 400 ",
        "[exec] grid 64 2 1 block 256 1 1 shared 49152",
        "[exec] grid 128 warp  8 probe 24 total 24576",
        "[exec] probe-mem 24576 (bytes)",
        "[exec] succeed 0",
        "[exec] save ./r/0.486795.bin size 24640",
        "[benchmark] prologue 0.012288 kernel 0.034816 epilogue 0.101376 original 0.030720 impact 1.133333 0",
        "[exec] 1737613657301000456 param 7f3a5c400000 ",
        "[exec] grid 3 1 1 block 100 1 1 shared 0",
        "[exec] grid 3 block 100 probe 4 total 1200",
        "[exec] probe-mem 1200 (bytes)",
        "[exec] succeed 0",
        "[exec] save ./r/0.512001.bin size 1248",
        "[exec] prologue 0.008192 kernel 0.010240 epilogue 0.050176 ratio 6.700000",
        "[exec] 1737613657350000789 param ",
        "[exec] grid 1 1 1 block 32 1 1 shared 0",
        "[exec] grid 1 warp  1 probe 16 total 16",
        "[exec] probe-mem 16 (bytes)",
        "[exec] failed 701",
    ])
    _assert_fast_path_taken(w.text().encode())


# ---- the vectorised path against the regex path on generated logs -------------------------------

def _num(r: random.Random) -> str:
    return r.choice([f"{r.random() * 10 ** r.randint(-3, 6):.6f}", f"{r.random() * 100:.6f}",
                     f"{r.random():.3f}", f"{r.randint(0, 999)}", f"{r.randint(0, 9)}.", f".{r.randint(0, 99)}",
                     "nan", "-1.500000", "1e-05", f"{r.random():.7f}", "123456789012345678.000001",
                     f"{r.randint(0, 9)}.{r.randint(0, 9)}.{r.randint(0, 9)}", "."])


def _int(r: random.Random) -> str:
    return r.choice([str(r.randint(0, 9)), str(r.randint(0, 2**40)), str(r.randint(0, 2**63 - 1)),
                     str(2**63 - 1), str(2**63 + r.randint(0, 10**18)), "0" * 19 + "7", "0" * 20 + "7",
                     str(r.randint(0, 10**19 - 1)), "-3", "1a", ""])


def _canonical_line(r: random.Random, odd: bool, noise: bool = True) -> str:
    """One line of a random kind; with ``odd`` its numbers may take forms the fast path must reject."""
    i = (lambda: _int(r)) if odd else (lambda: str(r.randint(0, 2**40)))
    f = (lambda: _num(r)) if odd else (lambda: f"{r.random() * 10 ** r.randint(0, 4):.6f}")
    h = (lambda: r.choice([f"{r.getrandbits(48):x}", f"{r.getrandbits(64):X}", f"{r.getrandbits(68):x}", "0",
                           "g1", ""])) if odd else (lambda: f"{r.getrandbits(r.randint(1, 64)):x}")
    kind = r.randrange(12 if noise else 10)
    if kind == 0:  # Neutrino's shape ends with a space; earlier writers' did not
        return (f"[exec] {i()} param" + "".join(f" {h()}" for _ in range(r.choice([0, 1, 3, 6, 6, 6])))
                + r.choice(["", " "]))
    if kind == 1:
        return f"[exec] grid {i()} {i()} {i()} block {i()} {i()} {i()} shared {i()}"
    if kind == 2:
        return f"[exec] grid {i()} {r.choice(['warp ', 'warp', 'block'])} {i()} probe {i()} total {i()}"
    if kind == 3:
        return f"[exec] probe-mem {i()}" + r.choice([" (bytes)", ""])
    if kind == 4:
        path = r.choice(["./t/r/0.1.bin", "a b size 3.bin", "\udcff\udcfe.bin", "x", "./ü/1.bin", "\udce2\udc82"]
                        + ([" lead", "t ", "x size 1 size"] if odd else []))
        return f"[exec] save {path} size {i()}"
    if kind == 5:
        return f"[exec] prologue {f()} kernel {f()} epilogue {f()} ratio {f()}"
    if kind == 6:
        rc = r.choice(["", " 0", " 1", " 123456789", " 1234567890", " -1", " 1.0", " 1."]) if odd else " 0"
        return f"[benchmark] prologue {f()} kernel {f()} epilogue {f()} original {f()} impact {f()}{rc}"
    if kind == 7:
        return r.choice(["[exec] failed to launch probed kernel", f"[exec] failed {r.choice([1, 701])}",
                         "[exec] succeed 0"])
    if kind == 8:
        return f"[mem] cuMemAlloc_v2 {r.choice(['0', '-1', '2'])} dptr {h()} bytesize {i()}"
    if kind == 9:
        return r.choice([f"[pid] {i()}", "[cmd] 12 python x.py", f"[benchmark] ENABLED L2 Flush Size {i()}",
                         "[analyze] subproc python a.py ./b.bin "])
    return r.choice(["[info] init", "[jit] find", "", "[exec]", "[exec] grid", "[exec] 12x param 1",
                     "\udcff\udc80garbage", "[benchmark] prologue"])


def _mutate(r: random.Random, line: str) -> str:
    if not line:
        return line
    k = r.randrange(len(line) + 1)
    return r.choice([
        line + r.choice([" ", "\r", "\t", " \r"]),  # trailing whitespace the regexes allow
        line[:k] + " " + line[k:],  # a doubled or split token
        line[:k] + r.choice(["\udcff", "\x00", ".", "-", "e", "a", "9", "\t", "\x0b", "["]) + line[k + 1:],
        line[:k] + line[k + 1:],
        line.replace(" ", "  ", 1),
    ])


def _generated_log(seed: int) -> bytes:
    r = random.Random(seed)
    # Half the logs only have well-formed lines (the fast path must take them); in the others a
    # few odd lines among good ones are what the fast path's checks must catch.
    p_odd = r.choice([0.0, 0.0, 0.02, 0.1, 0.3])
    lines = []
    for _ in range(r.randint(0, 60)):
        line = _canonical_line(r, r.random() < p_odd)
        if r.random() < p_odd / 2:
            line = _mutate(r, line)
        lines.append(line)
    data = "\n".join(lines).encode("utf-8", errors="surrogateescape")
    return data + r.choice([b"\n", b"\n", b"", b"\n[exec] 9 param 7f"])


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 2**32))
def test_vectorised_equals_regex_on_generated_logs(seed: int) -> None:
    data = _generated_log(seed)
    try:
        slow = parse_bytes(data, vectorised=False)
    except ValueError as e:  # a 19-digit number beyond int64: both paths refuse the log
        with pytest.raises(type(e)):
            parse_bytes(data)
        return
    _frames_equal(parse_bytes(data), slow)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scan, "BLOCK_LINES", 3)  # kinds spread over many blocks
        _frames_equal(parse_bytes(data), slow)


def test_fast_path_taken_on_writer_logs() -> None:
    # Guard against a fast path that silently always falls back to the regexes.
    r = random.Random(1)
    lines = [_canonical_line(r, odd=False, noise=False) for _ in range(400)] + ["[info] x", "[jit] y"]
    assert any(x.endswith("param ") for x in lines) and any(" warp  " in x for x in lines)
    assert any(" warp " in x and " warp  " not in x for x in lines)
    data = ("\n".join(lines) + "\n").encode("utf-8", errors="surrogateescape")
    _assert_fast_path_taken(data, min_lines=11)
    _frames_equal(parse_bytes(data), parse_bytes(data, vectorised=False))


def test_lines_with_blank_numbers_agree() -> None:
    # np.fromstring reads a blank string as [0]: a kind whose only line has no number must not get one.
    for text in ["[exec] probe-mem \n", "[exec] probe-mem  (bytes)\n", "[exec] 5 param 1\n[exec] save x size \n",
                 "[exec] prologue  kernel  epilogue  ratio \n", "[exec] grid  warp  probe  total \n"]:
        data = text.encode()
        _frames_equal(parse_bytes(data), parse_bytes(data, vectorised=False))
    assert parse_bytes(b"[exec] 1 param\n[exec] probe-mem \n").launches["probe_mem"].isna().all()


@pytest.mark.parametrize("width", [2, 12, 16])
def test_params_of_one_width_agree(width: int) -> None:
    # Pointers all of one even width take the bytes.fromhex-per-line path; lines without pointers too.
    r = random.Random(width)
    lines = []
    for i in range(50):
        ptrs = [f"{r.getrandbits(4 * width) | 1 << (4 * width - 1):x}" for _ in range(r.choice([0, 1, 6]))]
        if i % 7 == 0:
            ptrs = [p.upper() for p in ptrs]
        lines.append(f"[exec] {r.randint(0, 10**12)} param" + "".join(" " + p for p in ptrs))
    data = ("\n".join(lines) + "\n").encode()
    fast = parse_bytes(data)
    _frames_equal(fast, parse_bytes(data, vectorised=False))
    assert fast.launches["params"].map(len).sum() > 50


def test_very_long_lines_agree() -> None:
    long_path = "./" + "d/" * 1500 + "0.1.bin"
    text = (f"[exec] 1 param 7f\n[exec] save {long_path} size 9\n[exec] 2 param 80\n[exec] save ./x.bin size 3\n"
            f"[exec] grid 1 1 1 block 32 1 1 shared 0 {'7 ' * 2000}\n[exec] prologue 1.000000 kernel 2.000000 "
            f"epilogue 3.000000 ratio {'1' * 3000}.000000\n")
    data = text.encode()
    fast = parse_bytes(data)
    _frames_equal(fast, parse_bytes(data, vectorised=False))
    assert fast.launches["save_path"].tolist() == [long_path, "./x.bin"]
    assert fast.launches["save_size"].tolist() == [9, 3]


def test_a_log_cut_mid_launch_names_the_launch_it_cannot_trust(tmp_path):
    whole = (EventLogWriter().pid(1)
             .launch(10, [1], (4, 1, 1), (128, 1, 1), probe_bytes=16, save=("a.bin", 100), timing=(0.1, 0.2, 0.3))
             .launch(20, [1], (4, 1, 1), (128, 1, 1), probe_bytes=16, save=("b.bin", 100), timing=(0.1, 0.2, 0.3))
             .text())
    cut = whole[: whole.rindex("[exec] save") + len("[exec] sa")]  # killed while writing launch 1
    log = parse_text(cut)
    assert log.truncated_tail == "[exec] sa" and log.cut_launch == 1
    assert log.complete_launches()["launch"].tolist() == [0]
    intact = parse_text(whole)
    assert intact.cut_launch is None and len(intact.complete_launches()) == 2
