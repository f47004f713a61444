"""TraceDir: ordering of results/kernels/trace folders, levels from probe.toml, stderr parsing."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from neutrino_ae.errors import InputError
from neutrino_ae.formats.bintrace import TraceHeader
from neutrino_ae.formats.bintrace_write import write_trace
from neutrino_ae.formats.eventlog.write import EventLogWriter
from neutrino_ae.formats.kernelinfo import KernelInfo, format_ptxas_line, write_kernel_info
from neutrino_ae.formats.level import Level
from neutrino_ae.formats.probe import write_probe_toml
from neutrino_ae.formats.tensortrace import TensorEvent, write_tensor_trace
from neutrino_ae.formats.tracedir import (
    TraceDir,
    find_trace_dirs,
    name_time_key,
    newest_trace_dir,
    trace_dir_from_stderr,
)

HEADER = TraceHeader((4, 1, 1), (64, 1, 1))


def _make(root: Path, name: str = "Apr24_231539_1860576", stems=("10.1", "0.486795", "2.7")) -> Path:
    d = root / name
    write_probe_toml(d / "probe.toml", {"block_sched": {"position": "kernel", "datamodel": "warp:16"}},
                     analyze_hook="block_sched.py")
    EventLogWriter().pid(1).launch(5, [1], HEADER.grid, HEADER.block, probe_bytes=16).write(d / "event.log")
    for i, stem in enumerate(stems):
        # 4 blocks x 2 warps x 16 B: warp- and thread-level sizes differ, and each file is tagged by i.
        write_trace(d / "result" / f"{stem}.bin", HEADER, [("warp", np.full((4, 2, 16), i, np.uint8))])
    for idx in (10, 2, 0):
        k = d / "kernel" / f"{idx}_{'ab' * 20}"
        write_kernel_info(k / "kernel.info", KernelInfo(f"kern{idx}", 2, [(Level.WARP, 16)], None))
        # The probe engine's order when the log names no build: probed first, pruned second.
        (k / "process.log").write_text(f"{format_ptxas_line(20 + idx, 388)}\n{format_ptxas_line(20, 380)}\n")
    return d


def test_results_numeric_order_and_ignored(tmp_path: Path) -> None:
    d = _make(tmp_path)
    (d / "result" / "notes.bin").write_bytes(b"x")
    td = TraceDir(d)
    assert [p.name for p in td.results()] == ["0.486795.bin", "2.7.bin", "10.1.bin"]
    assert [p.name for p in td.ignored_results()] == ["notes.bin"]


def test_open_result_uses_probe_levels(tmp_path: Path) -> None:
    td = TraceDir(_make(tmp_path))
    last = td.open_result()
    assert last.path.name == "10.1.bin" and last.sections[0].level == Level.WARP
    assert int(np.asarray(last.records(0))[0, 0, 0]) == 0  # written first (i=0) as 10.1.bin
    assert td.open_result(0).path.name == "0.486795.bin"
    assert td.open_result("result/2.7.bin").path.name == "2.7.bin"
    with pytest.raises(InputError, match="index 5"):
        td.open_result(5)


def test_kernels_ordered_by_index(tmp_path: Path) -> None:
    td = TraceDir(_make(tmp_path))
    ks = td.kernels()
    assert [k.index for k in ks] == [0, 2, 10]
    assert [k.info.name for k in ks] == ["kern0", "kern2", "kern10"]
    assert [k.registers.extra for k in ks] == [0, 2, 10]


def test_kernel_with_failed_probe(tmp_path: Path) -> None:
    d = _make(tmp_path)
    bad = d / "kernel" / f"3_{'cd' * 20}"
    bad.mkdir()
    (bad / "process.log").write_text("Traceback (most recent call last):\n")
    k = [k for k in TraceDir(d).kernels() if k.index == 3][0]
    assert k.info is None and k.registers is None and "no 'ptxas info" in k.register_problem


def test_event_log_cached_probe_and_tensor_trace(tmp_path: Path) -> None:
    d = _make(tmp_path)
    td = TraceDir(d)
    assert td.event_log() is td.event_log() and td.event_log().pid == 1
    assert td.probe().saving == ["block_sched"]
    assert td.tensor_trace() is None
    write_tensor_trace(d / "tensor.trace", [TensorEvent("call", 1, (2,), 4, 8, "f", "a.py", 1, "x")])
    assert td.tensor_trace()["arg_name"].tolist() == ["x"]


def test_missing_and_empty(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such trace directory") as info:
        TraceDir(tmp_path / "absent")
    assert str(info.value).startswith(str(tmp_path / "absent"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="not a Neutrino trace directory"):
        TraceDir(tmp_path / "empty")
    with pytest.raises(InputError, match="holds no Neutrino trace directory"):
        newest_trace_dir(tmp_path / "empty")
    with pytest.raises(InputError, match="no such directory"):
        find_trace_dirs(tmp_path / "absent")


def test_find_trace_dirs_by_name_time(tmp_path: Path) -> None:
    names = ["Apr24_231539_1860576", "Jan_23_06_27_37_268336", "Apr24_091500_5", "Dec01_000000_1", "custom"]
    for i, n in enumerate(names):
        _make(tmp_path, n, stems=("1.0",))
        # mtimes deliberately disagree with the names
        os.utime(tmp_path / n, (1_000_000 - i, 1_000_000 - i))
    (tmp_path / "not_a_trace").mkdir()
    found = [p.name for p in find_trace_dirs(tmp_path)]
    assert found == ["Jan_23_06_27_37_268336", "Apr24_091500_5", "Apr24_231539_1860576", "Dec01_000000_1",
                     "custom"]
    assert newest_trace_dir(tmp_path).name == "custom"
    assert find_trace_dirs(tmp_path / "Apr24_091500_5") == [tmp_path / "Apr24_091500_5"]


def test_unnamed_dirs_fall_back_to_mtime(tmp_path: Path) -> None:
    for n, t in (("b", 300), ("a", 200), ("c", 100)):
        _make(tmp_path, n, stems=("1.0",))
        os.utime(tmp_path / n, (t, t))
    assert [p.name for p in find_trace_dirs(tmp_path)] == ["c", "a", "b"]


def test_name_time_key_reads_both_of_neutrinos_forms() -> None:
    assert name_time_key("Apr24_231539_1860576") == (4, 24, 23, 15, 39, 1860576)  # hook driver: %b%d_%H%M%S_<pid>
    assert name_time_key("Jan_23_06_27_37_268336") == (1, 23, 6, 27, 37, 268336)  # artifact: %b_%d_%H_%M_%S_<pid>
    assert name_time_key("aug05_000000_7") == (8, 5, 0, 0, 0, 7)  # month names in any case


@pytest.mark.parametrize("name", ["custom", "trace", "Foo24_231539_1", "Apr32_231539_1", "Apr24_251539_1",
                                  "Apr24_236039_1", "Apr24_231539", "Apr24_231539_x", "Jan_23_06_27_37",
                                  "Apr24_231539_1860576.bak", "2024-04-24_231539_1", ""])
def test_names_without_a_time_are_none(name: str) -> None:
    assert name_time_key(name) is None


def test_names_compare_by_time_not_as_strings() -> None:
    # The case: as strings "Aug" < "Jan"; by time August is newer. Same for both forms.
    assert name_time_key("Aug_23_08_14_52_273310") > name_time_key("Jan_23_08_14_52_273310")
    assert name_time_key("Aug05_000000_1") > name_time_key("Jan05_000000_1")
    assert name_time_key("Jan24_000000_1") > name_time_key("Jan_23_23_59_59_9")  # the forms mix
    assert name_time_key("Apr24_091500_10") > name_time_key("Apr24_091500_9")  # same second: pid, numerically


def test_newest_by_name_time_whatever_the_mtimes(tmp_path: Path) -> None:
    names = ["Aug_23_08_14_52_273310", "Jan_23_08_14_52_273310", "Apr24_091500_9", "Apr24_091500_10"]
    for i, n in enumerate(names):
        _make(tmp_path, n, stems=("1.0",))
        os.utime(tmp_path / n, (2_000_000 + i, 2_000_000 + i))  # the Aug folder looks oldest on disk
    assert [p.name for p in find_trace_dirs(tmp_path)] == [
        "Jan_23_08_14_52_273310", "Apr24_091500_9", "Apr24_091500_10", "Aug_23_08_14_52_273310"]
    assert newest_trace_dir(tmp_path).name == "Aug_23_08_14_52_273310"


def test_no_year_in_names_december_is_newest(tmp_path: Path) -> None:
    # A collection spanning New Year cannot be ordered by name (documented): December sorts last.
    for n, t in (("Dec31_235959_1", 100), ("Jan01_000003_2", 200)):
        _make(tmp_path, n, stems=("1.0",))
        os.utime(tmp_path / n, (t, t))
    assert newest_trace_dir(tmp_path).name == "Dec31_235959_1"


def test_mtime_only_orders_unparsed_names_which_come_after_parsed_ones(tmp_path: Path) -> None:
    for n, t in (("Aug_23_08_14_52_1", 900), ("zz_old", 100), ("aa_new", 500), ("Jan_23_08_14_52_1", 50)):
        _make(tmp_path, n, stems=("1.0",))
        os.utime(tmp_path / n, (t, t))
    # parsed names by time (their mtimes ignored), then unparsed ones by mtime (not by name)
    assert [p.name for p in find_trace_dirs(tmp_path)] == [
        "Jan_23_08_14_52_1", "Aug_23_08_14_52_1", "zz_old", "aa_new"]
    for n in ("zz_old", "aa_new"):
        os.utime(tmp_path / n, (300, 300))  # same mtime: name decides
    assert [p.name for p in find_trace_dirs(tmp_path)][2:] == ["aa_new", "zz_old"]


def test_recursive_search_and_newest_result(tmp_path: Path) -> None:
    a = _make(tmp_path / "block_sched", "Jan_23_06_27_37_268336", stems=("0.5", "10.25", "2.0"))
    b = _make(tmp_path / "warp_sched" / "tail", "Mar01_000000_1", stems=())
    (tmp_path / ".hidden").mkdir()
    _make(tmp_path / ".hidden", "Dec01_000000_1")
    (b / "kernel" / "x").mkdir()  # a trace dir's own folders are not searched
    assert find_trace_dirs(tmp_path, recursive=True) == [a, b]
    assert newest_trace_dir(tmp_path, recursive=True) == b
    assert find_trace_dirs(tmp_path) == []  # not recursive: only direct children
    assert TraceDir(a).newest_result().name == "10.25.bin"  # numerically, not "2.0.bin" as a string
    with pytest.raises(InputError, match="trace directory has no result/\\*.bin trace") as info:
        TraceDir(b).newest_result()
    assert str(info.value).startswith(str(b))


def test_trace_dir_from_stderr() -> None:
    err = ("[info] probing\n[info] trace in ./trace/Apr24_000000_1\nnoise\n"
           "[info] trace in ./trace/Apr24_231539_1860576\n[analyze] done\n")
    assert trace_dir_from_stderr(err) == Path("./trace/Apr24_231539_1860576")
    with pytest.raises(InputError, match="no 'trace in"):
        trace_dir_from_stderr("[error] nothing here\n")
