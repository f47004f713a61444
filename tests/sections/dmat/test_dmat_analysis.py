"""DMAT section: sparsifier round trip, tensor attribution, no clock cut-off (hand-built traces)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from undrawn_analysis import leave_figures_undrawn

from dmat import SECTION, dmat_figure
from dmat import analysis as dm
from dmat import inputs as dmat_inputs
from neutrino_ae.errors import InputError
from neutrino_ae.formats.bintrace import TraceHeader, open_trace
from neutrino_ae.formats.bintrace_write import write_trace
from neutrino_ae.formats.dmat import read_dmat, write_dmat
from neutrino_ae.formats.eventlog.write import EventLogWriter
from neutrino_ae.formats.records import DMAT
from neutrino_ae.formats.tensortrace import write_tensor_trace
from neutrino_ae.report.command.script import run_main
from neutrino_ae.report.section.driver import command

Q = 0x7F00_0000_0000  # q: 3 pages
K = 0x7F00_0003_0000  # k: 0x18000 bytes -> pages K and K + 0x10000
OUT = 0x7F00_0010_0000  # not in tensor.trace -> "param2", size unknown
LOW = 0x7E00_0000_0000  # below every tensor -> "other"

# 2 blocks x 3 threads (thread level), 3 slots per thread; None = unfilled slot (zero-filled).
SLOTS = [
    [[(5, Q + 8), (5, Q + 16), (9, K + 4)], [(5, Q + 0x10000), None, None], [(7_000_000, OUT + 64), None, None]],
    [[(5, Q + 24), (6, K + 0x10000 + 0x9000), None], [None, None, None], [(9, LOW), (9, LOW + 1), (12, OUT)]],
]


def _records():
    arr = np.zeros((2, 3, 3), dtype=DMAT)
    for b, block in enumerate(SLOTS):
        for t, thread in enumerate(block):
            for s, rec in enumerate(thread):
                arr[b, t, s] = (0, 0) if rec is None else rec
    return arr


def _expected_counts():
    return Counter((c, a & ~0xFFFF) for block in SLOTS for thread in block for rec in thread if rec
                   for c, a in [rec])


def _trace_dir(root):
    td = root / "Jan_01_00_00_00_1"
    result = td / "result" / "0.5.bin"
    result.parent.mkdir(parents=True)
    write_trace(result, TraceHeader((2, 1, 1), (3, 1, 1)), [("thread", _records())])
    (EventLogWriter().pid(1)
     .launch(10, [0x1234000, 0x5678000], (1, 1, 1), (32, 1, 1), save=(str(td / "result" / "0.1.bin"), 64))
     .launch(20, [Q, K, OUT, Q], (2, 1, 1), (3, 1, 1), save=(str(result), result.stat().st_size))
     .write(td / "event.log"))
    write_tensor_trace(td / "tensor.trace", [
        {"kind": "call", "time_ns": 1, "shape": (3, 16384), "nbytes": 0x30000, "data_ptr": Q, "arg_name": "q",
         "func": "forward", "file": "a.py", "line": 3},
        {"kind": "call", "time_ns": 2, "shape": (12288, 8), "nbytes": 0x18000, "data_ptr": K, "arg_name": "k",
         "func": "forward", "file": "a.py", "line": 3},
        {"kind": "ret", "time_ns": 3, "shape": (1,), "nbytes": 4, "data_ptr": 999, "func": "forward",
         "file": "a.py", "line": 9},
    ])
    return td, result


def _as_counter(d):
    return Counter({(int(c), int(p)): int(n) for c, p, n in zip(d.pair_clock(), d.pair_page, d.pair_count,
                                                                 strict=True)})


def test_sparsify_chunked_matches_counter(tmp_path):
    _, result = _trace_dir(tmp_path)
    # One block per chunk: the merge across chunks must still sum equal (clock, page) cells.
    data = dmat_inputs.sparsify_trace(open_trace(result), chunk_bytes=1)
    assert _as_counter(data) == _expected_counts()
    write_dmat(tmp_path / "x.dmat", data)
    back = read_dmat(tmp_path / "x.dmat")
    assert _as_counter(back) == _expected_counts()
    assert sorted(int(p) for p in back.pages) == sorted({p for _, p in _expected_counts()})


def test_bin_input_writes_dmat_and_names_tensors(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NEUTRINO_AE_NO_FORK", "1")  # drawn here, not in a fork that imports matplotlib anew
    td, result = _trace_dir(tmp_path)
    out = tmp_path / "out"
    assert run_main(command(SECTION), [str(result), "--out", str(out)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    name = td.name
    assert last == str(out / f"{name}.png")
    assert _as_counter(read_dmat(out / f"{name}.dmat")) == _expected_counts()

    leave_figures_undrawn(monkeypatch)  # the figure was drawn above; from here the tensor tables are read
    res = dmat_figure(result, tmp_path / "out2")
    got = dict(zip(res.tables[f"dmat_{name}_tensors"]["tensor"], res.tables[f"dmat_{name}_tensors"]["accesses"],
                   strict=True))
    # Launch 2's params (the save line names 0.5.bin): q (dup q ignored), k, param2 (OUT, no size).
    # q: Q+8, Q+16, Q+0x10000, Q+24 -> 4; k: K+4, K+0x19000 -> 2; param2: OUT+64, OUT -> 2; LOW x2 -> other.
    assert got == {"q": 4, "k": 2, "param2": 2, "other": 2}
    pages = dict(zip(res.tables[f"dmat_{name}_tensors"]["tensor"], res.tables[f"dmat_{name}_tensors"]["pages"],
                     strict=True))
    assert pages == {"q": 2, "k": 2, "param2": 1, "other": 1}


def test_attribution_shared_page_goes_to_lower_address():
    pages = np.array([0x10000, 0x20000, 0x30000, 0x90000], dtype=np.uint64)
    ranges = [dm.TensorRange("b", 0x18000, 0x18000), dm.TensorRange("a", 0x10000, 0x8000)]
    labels, names = dm.attribute_pages(pages, ranges)
    assert names == ["a", "b", "other"]
    # 0x10000 holds a and the start of b -> a (lower address); b's last byte 0x2ffff is in page 0x20000 -> b;
    # page 0x30000 starts one byte past b -> other, like 0x90000.
    assert labels.tolist() == [0, 1, 2, 2]


def test_tensor_ranges_inside_match_and_unknown():
    import pandas as pd

    tt = pd.DataFrame({"kind": ["call"], "data_ptr": [0x1000_0000], "nbytes": [0x100000], "arg_name": ["w"]})
    r = dm.tensor_ranges([0x1000_0000 + 0x4000, 0, 0x9000_0000], tt)
    assert [(x.name, x.start, x.nbytes) for x in r] == [("w+0x4000", 0x1000_4000, 0x100000 - 0x4000),
                                                       ("param2", 0x9000_0000, None)]


def test_no_clock_cutoff_in_plot_data(tmp_path, monkeypatch):
    leave_figures_undrawn(monkeypatch)  # the binned arrays are read (res.plot), not the figure
    _, result = _trace_dir(tmp_path)
    res = dmat_figure(result, tmp_path / "out", xbins=50)
    plot = res.plot
    assert plot.max_clock == 7_000_000 and plot.x_edges[-1] > 7_000_000
    assert plot.hist.sum() == sum(_expected_counts().values())  # nothing dropped
    # The access at clock 7,000,000 lands in the last clock bin (page OUT -> param2).
    k = plot.names.index("param2")
    assert plot.hist[k, :, -1].sum() == 1


def test_bare_dmat_finds_naming_in_raw_layout(tmp_path, monkeypatch):
    dmat_dir = tmp_path / "dmat"
    td, result = _trace_dir(dmat_dir / "raw" / "fig1")
    data = dmat_inputs.sparsify_trace(open_trace(result))
    write_dmat(dmat_dir / "fig1.dmat", data)
    res = dmat_figure(dmat_dir / "fig1.dmat", tmp_path / "out")
    assert res.data["naming"]["trace_dir"] == str(td)
    assert set(res.tables["dmat_fig1_tensors"]["tensor"]) == {"q", "k", "param2", "other"}
    assert (tmp_path / "out" / "fig1.png").is_file() and (tmp_path / "out" / "dmat_fig1.json").is_file()

    # Without naming files next to it: everything "unnamed".
    write_dmat(tmp_path / "lonely.dmat", data)
    leave_figures_undrawn(monkeypatch)  # the tensor table is read, not the figure
    res = dmat_figure(tmp_path / "lonely.dmat", tmp_path / "out")
    assert res.tables["dmat_lonely_tensors"]["tensor"].tolist() == ["unnamed"]


def test_bad_dmat_one_line_error(tmp_path, capsys):
    bad = tmp_path / "bad.dmat"
    bad.write_bytes(b"\x05" + b"\x00" * 7)
    assert run_main(command(SECTION), [str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {bad}: truncated")


def test_an_unreadable_event_log_leaves_no_dmat_behind(tmp_path):
    td, result = _trace_dir(tmp_path)
    (td / "event.log").unlink()
    (td / "event.log").mkdir()  # present but unreadable as a file
    out = tmp_path / "out"
    with pytest.raises(InputError, match="event.log"):
        dmat_figure(td, out)
    assert not out.exists() or not list(out.glob("*.dmat")), "validate first, write after"


def test_page_index_by_table_and_by_search_agree_with_a_dictionary():
    from dmat.binning import page_index

    rng = np.random.default_rng(3)
    base = np.uint64(0x7F00_0000_0000)
    pages = np.unique(base + (rng.integers(0, 5000, 300).astype(np.uint64) << np.uint64(16)))
    queries = np.concatenate([
        rng.choice(pages, 2000),
        base + (rng.integers(0, 6000, 500).astype(np.uint64) << np.uint64(16)),  # some not in the list
        pages[:50] + np.uint64(8),  # misaligned
        np.array([0, base - np.uint64(1 << 16), np.uint64(2**64 - 1)], np.uint64),  # below, far above
    ])
    where = {int(p): i for i, p in enumerate(pages)}
    expected = [where.get(int(q), -1) for q in queries]
    assert page_index(pages, queries).tolist() == expected  # lookup table (span 5000 pages)
    wide = np.r_[pages, np.uint64(2**63)]  # span too large for a table: binary search
    assert page_index(wide, queries).tolist() == expected
    assert page_index(pages[:0], queries).tolist() == [-1] * queries.size


def test_a_raw_trace_streamed_in_buckets_plots_as_its_dmat(tmp_path, monkeypatch):
    """A raw trace is sparsified and binned clock range by clock range, spilling to scratch files: the
    figure's data and the .dmat it writes are those of the whole trace sparsified at once."""
    from neutrino_ae.formats.dmat import stream as dmat_stream

    rng = np.random.default_rng(5)
    rec = np.zeros((16, 64, 40), dtype=DMAT)
    rec["clock"] = rng.integers(0, 50_000, rec.shape)
    rec["addr"] = Q + rng.integers(0, 0x80000, rec.shape)
    rec[rng.random(rec.shape) < 0.05] = 0
    result = tmp_path / "raw" / "0.5.bin"
    result.parent.mkdir()
    write_trace(result, TraceHeader((16, 1, 1), (64, 1, 1)), [("thread", rec)])
    monkeypatch.setattr(dmat_stream, "BUCKET_RECORDS", 3_000)
    monkeypatch.setattr(dmat_stream, "MEMORY_BYTES", 16_000)
    monkeypatch.setattr(dmat_inputs, "RAW_CHUNK_BYTES", 64 * 40 * 16 * 3)  # three blocks per chunk
    streamed = dmat_figure(result, tmp_path / "out", name="s")
    in_memory = dmat_inputs.sparsify_trace(open_trace(result))
    assert read_dmat(tmp_path / "out" / "s.dmat").equals(in_memory)
    write_dmat(tmp_path / "whole" / "w.dmat", in_memory)
    leave_figures_undrawn(monkeypatch)  # the binned arrays and numbers are compared, not a second figure
    whole = dmat_figure(tmp_path / "whole" / "w.dmat", tmp_path / "out2")
    assert np.array_equal(streamed.plot.hist, whole.plot.hist)
    assert streamed.data["clock_entries"] == whole.data["clock_entries"] == in_memory.clocks.size
    assert streamed.data["accesses"] == int(np.count_nonzero(rec["addr"])) == whole.data["accesses"]
    assert streamed.data["unfilled_slots_excluded"] == rec.size - int(np.count_nonzero(rec["addr"]))
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.name.startswith(".")) == []
