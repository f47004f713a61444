"""kernel.info, process.log register counts, probe.toml and tensor.trace."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from neutrino_ae.errors import InputError, TraceFormatError
from neutrino_ae.formats import kernelinfo
from neutrino_ae.formats.kernelinfo import (
    COUNT_SIZED,
    KernelInfo,
    format_ptxas_command,
    format_ptxas_line,
    read_kernel_info,
    read_register_usage,
    write_kernel_info,
)
from neutrino_ae.formats.level import Level
from neutrino_ae.formats.probe import Datamodel, parse_datamodel, read_probe_toml, write_probe_toml
from neutrino_ae.formats.tensortrace import TensorEvent, read_tensor_trace, write_tensor_trace

NAME = "_ZN2at6native29vectorized_elementwise_kernelILi4EEEviT0_T1_"


def test_kernel_info_round_trip_and_text(tmp_path: Path) -> None:
    info = KernelInfo(NAME, 3, [(Level.WARP, 16), (Level.THREAD, 8)], "block_sched.py")
    p = write_kernel_info(tmp_path / "kernel.info", info)
    # Probe lines as the hook driver parses them: sscanf("%d,%d").
    assert p.read_text() == f"{NAME}\n3\n2\n1,16\n0,8\nblock_sched.py\n"
    assert read_kernel_info(p) == info
    spaced = tmp_path / "spaced.info"
    spaced.write_text(f"{NAME}\n3\n2\n1 16\n0 8\nblock_sched.py\n")
    assert read_kernel_info(spaced) == info
    no_hook = KernelInfo(NAME, 1, [], None)
    assert read_kernel_info(write_kernel_info(tmp_path / "k2.info", no_hook)) == no_hook


def test_kernel_info_count_sized_probe(tmp_path: Path) -> None:
    # What the artifact's probe engine writes for dmat (thread:16:count): bytes -1, sized at launch.
    p = tmp_path / "kernel.info"
    p.write_text(f"{NAME}\n3\n1\n0,-1\n/usr/lib/python3/site-packages/neutrino/tools/dmat.py\n")
    info = read_kernel_info(p)
    assert info.probes == [(Level.THREAD, COUNT_SIZED)] and info.analyze_hook.endswith("tools/dmat.py")
    assert read_kernel_info(write_kernel_info(tmp_path / "again.info", info)) == info


@pytest.mark.parametrize("text, match", [
    ("", "truncated"),
    (f"{NAME}\n3\n1\n1,-1\n", "count-sized .* must be thread-level"),
    (f"{NAME}\n3\n1\n0,-2\n", "line 4"),
    (f"{NAME}\nthree\n1\n1 16\n", "line 2"),
    (f"{NAME}\n3\n2\n1 16\n", "declares 2 probes"),
    (f"{NAME}\n3\n1\n5 16\n", "line 4"),
    (f"{NAME}\n3\n1\n1 16\nhook.py\nextra\n", "at most one analyze-hook"),
    (f"{NAME}\n3\n9999999\n", "sane limit"),
    ("\x00\xff garbage\n1\n0\n", "line 1"),
])
def test_kernel_info_garbage(tmp_path: Path, text: str, match: str) -> None:
    p = tmp_path / "kernel.info"
    p.write_text(text, errors="surrogateescape")
    with pytest.raises(TraceFormatError, match=match) as info:
        read_kernel_info(p)
    assert str(info.value).startswith(str(p))


def test_kernel_info_missing(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such kernel.info"):
        read_kernel_info(tmp_path / "kernel.info")


def _log(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "process.log"
    p.write_text(body)
    return p


def test_format_ptxas_line() -> None:
    # CUDA 12/13 ptxas prints the barrier count; older releases do not.
    assert format_ptxas_line(40, 392) == "ptxas info    : Used 40 registers, used 0 barriers, 392 bytes cmem[0]"
    assert format_ptxas_line(40, 392, None) == "ptxas info    : Used 40 registers, 392 bytes cmem[0]"


def _build(kind: str, regs: int, name: str = NAME, helper: bool = False) -> str:
    """One build as the probe engine logs it: its ptxas command line, then ptxas --verbose output."""
    text = (f"{format_ptxas_command('/t/kernel/0_ab', kind)}\nptxas info    : 0 bytes gmem\n"
            f"ptxas info    : Compiling entry function '{name}' for 'sm_80'\n"
            f"ptxas info    : Function properties for {name}\n"
            "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
            f"{format_ptxas_line(regs, 392)}\nptxas info    : Compile time = 3.1 ms\n")
    if helper:  # a non-inlined .func: properties of its own; its register line is not the kernel's
        text += "ptxas info    : Function properties for helper_func\n" + format_ptxas_line(8, 0) + "\n"
    return text + "\n"


def test_register_usage_engine_order_probed_first(tmp_path: Path) -> None:
    # probe/cuda.py assembles probed, then pruned: the first register line is the PROBED build.
    p = _log(tmp_path, f"None\nNone\n[objdump] bin is ptx\n{NAME}\n" + _build("probed", 22) + _build("pruned", 16))
    r = read_register_usage(p, NAME)
    assert (r.pruned, r.probed, r.extra, r.countd, r.by_name) == (16, 22, 6, None, True)


def test_register_usage_named_builds_in_any_order_with_count_kernel(tmp_path: Path) -> None:
    body = _build("countd", 19) + _build("pruned", 10) + _build("probed", 20, helper=True)
    r = read_register_usage(_log(tmp_path, body), NAME)
    assert (r.pruned, r.probed, r.countd, r.extra) == (10, 20, 19, 10)


def test_register_usage_picks_the_named_entry(tmp_path: Path) -> None:
    # One PTX module with two entries: each build's ptxas output has both; only NAME's line counts.
    def two_entries(kind: str, mine: int, other: int) -> str:
        return _build(kind, mine) + "".join(_build(kind, other, "other_kernel").splitlines(True)[1:])
    body = two_entries("probed", 30, 99) + two_entries("pruned", 24, 77)
    assert read_register_usage(_log(tmp_path, body), NAME).extra == 6
    assert read_register_usage(_log(tmp_path, body), "other_kernel").extra == 22


def test_register_usage_without_command_lines_uses_engine_order(tmp_path: Path) -> None:
    body = "".join(f"ptxas info    : Compiling entry function '{NAME}' for 'sm_80'\n{format_ptxas_line(n, 0)}\n"
                   for n in (18, 10, 16))
    r = read_register_usage(_log(tmp_path, body))
    assert (r.probed, r.pruned, r.countd, r.by_name) == (18, 10, 16, False)


def test_register_usage_probed_build_with_fewer_registers_is_a_signed_negative(tmp_path: Path) -> None:
    # ptxas allocates each build on its own: the genuine engine gives a dmat-probed build fewer
    # registers than the pruned one (tests/data/genuine/probe-engine/*/dmat-ilp_sum: 114 vs 128).
    # That is a measurement, reported signed and marked, not an error.
    r = read_register_usage(_log(tmp_path, _build("probed", 115) + _build("pruned", 128) + _build("countd", 128)),
                            NAME)
    assert (r.pruned, r.probed, r.countd, r.extra) == (128, 115, 128, -13)
    assert r.allocated_fewer and r.note == kernelinfo.FEWER_REGISTERS == "probed build allocated fewer registers"
    same = read_register_usage(_log(tmp_path, _build("probed", 40) + _build("pruned", 40)), NAME)
    assert same.extra == 0 and not same.allocated_fewer and same.note is None


@pytest.mark.parametrize("body, match", [
    ("Traceback (most recent call last):\nUnboundLocalError: boom\n", "no 'ptxas info"),
    (format_ptxas_line(10, 0) + "\n", "cannot tell the probed and pruned builds apart"),
    ("".join(format_ptxas_line(n, 0) + "\n" for n in (10, 11, 15, 16)), "cannot tell"),
    (_build("probed", 12), "no register line .*in the pruned build"),
    (_build("probed", 300) + _build("pruned", 15), "beyond the hardware limit 255"),
])
def test_register_usage_errors(tmp_path: Path, body: str, match: str) -> None:
    p = _log(tmp_path, body)
    with pytest.raises(TraceFormatError, match=match) as info:
        read_register_usage(p, NAME)
    assert str(info.value).startswith(str(p))
    assert "\n" not in str(info.value)


def test_parse_datamodel() -> None:
    assert parse_datamodel("warp:16") == Datamodel(Level.WARP, 16, False)
    assert parse_datamodel("thread:16:count") == Datamodel(Level.THREAD, 16, True)
    assert str(parse_datamodel("thread:8")) == "thread:8"
    for bad in ("warp", "block:16", "thread:0", "thread:16:sum", "warp:-1", 16):
        with pytest.raises(ValueError):
            parse_datamodel(bad)  # type: ignore[arg-type]


BEFORE = "mov.u64 %lstart, %clock64;\nmov.u32 %smid, %smid;\n"
AFTER = "mov.u64 %lend, %clock64;\nSAVE [ %lstart, %elapse, %smid ];  // it's 'quoted'\n"


def test_probe_toml_round_trip(tmp_path: Path) -> None:
    probes = {
        "helper": {"position": "kernel", "before": "// no datamodel: not a saving probe"},
        "block_sched": {"position": "kernel", "datamodel": "warp:16", "before": BEFORE, "after": AFTER},
        "dmat": {"position": "ld.global:st.global", "datamodel": "thread:16:count", "after": 'x = "\t"\n'},
    }
    p = write_probe_toml(tmp_path / "probe.toml", probes, analyze_hook="block_sched.py", comment="test probe")
    raw = tomllib.loads(p.read_text())
    assert raw["block_sched"]["before"] == BEFORE and raw["block_sched"]["after"] == AFTER
    assert raw["dmat"]["after"] == 'x = "\t"\n'
    spec = read_probe_toml(p)
    assert spec.names == ["helper", "block_sched", "dmat"]
    assert spec.saving == ["block_sched", "dmat"]
    assert spec.levels == [Level.WARP, Level.THREAD]
    assert spec.datamodel("dmat").count and spec.analyze_hook == "block_sched.py"


def test_probe_toml_bad_datamodel(tmp_path: Path) -> None:
    p = tmp_path / "probe.toml"
    p.write_text('[block_sched]\nposition = "kernel"\ndatamodel = "warp:sixteen"\n')
    with pytest.raises(TraceFormatError, match=r"probe \[block_sched\]: bad datamodel") as info:
        read_probe_toml(p)
    assert str(info.value).startswith(str(p))
    p.write_text("[broken\n")
    with pytest.raises(TraceFormatError, match="invalid TOML"):
        read_probe_toml(p)
    with pytest.raises(ValueError):
        write_probe_toml(tmp_path / "x.toml", {"p": {"datamodel": "warp"}})
    with pytest.raises(InputError, match="no such probe.toml"):
        read_probe_toml(tmp_path / "missing.toml")


def test_tensor_trace_round_trip(tmp_path: Path) -> None:
    rows = [
        TensorEvent("call", 1000, (4, 32, 4096, 64), 67108864, 139872345620480, "flash_fwd", "dmat/fig1.py", 42,
                    "q"),
        TensorEvent("ret", 2000, (4, 32, 4096, 64), 67108864, 139872412729344, "flash_fwd", "dmat/fig1.py", 42),
        {"kind": "call", "time_ns": 3000, "shape": (7,), "nbytes": 14, "data_ptr": 5, "arg_name": "scale",
         "func": "f", "file": "a b.py", "line": 1},
    ]
    p = write_tensor_trace(tmp_path / "tensor.trace", rows)
    first = p.read_text().splitlines()[0]
    assert first == "[call]  1000  (4, 32, 4096, 64)  67108864  139872345620480  q  flash_fwd  dmat/fig1.py:42"
    df = read_tensor_trace(p)
    assert df["kind"].tolist() == ["call", "ret", "call"]
    assert df["shape"].tolist() == [(4, 32, 4096, 64), (4, 32, 4096, 64), (7,)]
    assert df["arg_name"].tolist() == ["q", None, "scale"]
    assert df["data_ptr"].tolist() == [139872345620480, 139872412729344, 5]
    assert df["file"].tolist() == ["dmat/fig1.py", "dmat/fig1.py", "a b.py"] and df["line"].tolist() == [42, 42, 1]


def test_tensor_trace_bad_line(tmp_path: Path) -> None:
    p = tmp_path / "tensor.trace"
    p.write_text("[info] ignored\n[call]  1  (1,)  2  3  f  a.py:1\n")  # call without arg-name
    with pytest.raises(TraceFormatError, match="malformed tensor.trace line 2") as info:
        read_tensor_trace(p)
    assert str(info.value).startswith(str(p))
    with pytest.raises(InputError, match="no such tensor.trace"):
        read_tensor_trace(tmp_path / "none.trace")
