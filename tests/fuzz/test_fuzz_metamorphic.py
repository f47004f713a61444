"""Same input, same numbers: every section's command line on a generated input and on its metamorphic
variants -- the trace folder renamed, records shuffled where their order carries no meaning (the warps
after a block's first in block_sched, the blocks of a warp_sched tail trace, every slot of a dmat trace,
the rows of a CSV; block_sched's blocks keep their index order, which its walk uses), extra empty sections
in the ``.bin`` (a probe that saved nothing), blank lines after a text file's last record -- gives the
same summary values (keys compared without the trace's own label, which names the folder) and, for
DMAT, the same ``.dmat`` bytes. The binary traces come from the independent writer
(tests/differential/tracegen.py); the text inputs from the tiny sample bundle. Modest example counts:
the module runs in well under 30 s.

The figures are not what this module compares, and drawing them was nearly all of its time: each command
line here runs with its figures left undrawn (tests/undrawn_analysis.py), everything else as it is
(arguments, inputs, numbers, results files, the ``--json`` document). Every section's figures are drawn by
its command line elsewhere (the section tests, the whole ``run static`` of tests/conftest.py's ``sample_run``).
"""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from differential.tracegen import WARP, BlockSchedCase, DmatCase, Section, Trace, block_sched_cases, dmat_cases
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st
from undrawn_analysis import leave_figures_undrawn

from neutrino_ae.formats.bintrace import open_trace
from neutrino_ae.report.command.script import run_main
from neutrino_ae.report.section import registry
from neutrino_ae.report.section.driver import command
from neutrino_ae.report.section.registry import section_module

# No shrinking: a failing example is reported as drawn (shrinking traces of thousands of blocks takes minutes).
_PHASES = [Phase.explicit, Phase.reuse, Phase.generate]
EXAMPLES = settings(max_examples=4, deadline=None, phases=_PHASES,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
FEW = settings(max_examples=2, deadline=None, phases=_PHASES,
               suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
#: Names a trace folder may have: the artifact's, the hook driver's, and none that parses as a time.
NAMES = st.sampled_from(["Jan_23_06_27_37_268336", "Aug02_101112_4242", "my run", "x"])
VARIANTS = st.sets(st.sampled_from(["rename", "shuffle", "empty_section"]), min_size=1)


@pytest.fixture(autouse=True)
def _no_figures(monkeypatch) -> None:
    leave_figures_undrawn(monkeypatch)


def _run(section: str, args: list[str], out: Path, entry: str = "main", base: bool = False) -> dict:
    """The section's command line (``entry``: a script module of its folder) with ``--json``: exit 0 and its
    printed data. ``base``: the generated input itself, which may be one the reader refuses in one line (exit 2:
    e.g. a warp-level section of 1-thread blocks); such a case is not drawn."""
    stdout, stderr = io.StringIO(), io.StringIO()
    main = command(registry.get(section)) if entry == "main" else section_module(section, entry).main
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = run_main(main, [*args, "--out", str(out), "--json"])
    if base and code == 2 and len(stderr.getvalue().strip().splitlines()) == 1:
        assume(False)
    assert code == 0, stderr.getvalue()[-2000:]
    return json.loads(stdout.getvalue())


def _values(data: dict, labels: set[str] = frozenset()) -> list[tuple[str, str]]:
    """Summary rows as (key without the trace's label, value), sorted by key: rows follow the input's order
    (a CSV's rows), which the variants change on purpose."""
    rows = []
    for row in data["summary"]:
        head, _, rest = row["key"].partition(".")
        rows.append((rest if head in labels and rest else row["key"], repr(row["value"])))
    return sorted(rows)


def _permute_followers(trace: Trace, rng: np.random.Generator) -> Trace:
    """The same block_sched trace with the warps after each block's first in another order: the first warp's
    record is the block's (the artifact reads unit 0), the others repeat it a few cycles later. Blocks
    themselves keep their order: the scheduling walk takes them in index order, as the GPU dispatches them."""
    sec = trace.sections[0]
    units = trace.units_per_block(sec.level)
    rec = np.frombuffer(sec.data, np.uint8).reshape(trace.grid_size, units, sec.size)
    order = np.r_[0, 1 + rng.permutation(units - 1)]
    return Trace(trace.grid, trace.block, [Section(sec.size, sec.level, rec[:, order].tobytes())], trace.layout)


def _with_empty_section(trace: Trace, level: int) -> Trace:
    """The same trace with one more section after its own, zero-filled (a probe that saved nothing)."""
    units = trace.units_per_block(level) * trace.grid_size
    extra = Section(16, level, bytes(16 * units))
    return Trace(trace.grid, trace.block, [*trace.sections, extra], "v2", trace.gap)


def _place(trace: Trace, root: Path, name: str) -> Path:
    path = root / name / "result" / "0.500000.bin"
    path.parent.mkdir(parents=True)
    return trace.write(path)


# --------------------------------------------------------------------------------------------------
# block_sched and dmat: traces from the independent writer


@given(case=block_sched_cases(artifact_readable=False), variants=VARIANTS, name=NAMES, seed=st.integers(0, 2**32 - 1))
@EXAMPLES
def test_block_sched_same_numbers_for_every_variant(case: BlockSchedCase, variants: set[str], name: str, seed: int,
                                                    tmp_path_factory) -> None:
    tmp = tmp_path_factory.mktemp("bs")
    base = _run("block_sched", [str(_place(case.trace, tmp / "a", "Jan_23_06_27_37_268336"))], tmp / "out-a",
                base=True)
    trace = case.trace
    if "shuffle" in variants and trace.block_size % WARP == 0:  # a partial warp's record overlaps the next block's
        trace = _permute_followers(trace, np.random.default_rng(seed))
    if "empty_section" in variants:
        trace = _with_empty_section(trace, WARP)
    folder = name if "rename" in variants else "Jan_23_06_27_37_268336"
    other = _run("block_sched", [str(_place(trace, tmp / "b", folder))], tmp / "out-b")
    labels = {"Jan_23_06_27_37_268336", folder}
    assert _values(other, labels) == _values(base, labels)


@given(case=dmat_cases(), variants=VARIANTS, name=NAMES, seed=st.integers(0, 2**32 - 1))
@EXAMPLES
def test_dmat_same_numbers_and_file_for_every_variant(case: DmatCase, variants: set[str], name: str, seed: int,
                                                      tmp_path_factory) -> None:
    tmp = tmp_path_factory.mktemp("dmat")
    args = ["--name", "fig"]
    base = _run("dmat", [str(_place(case.trace, tmp / "a", "Jan_23_06_27_37_268336")), *args], tmp / "out-a",
                "dmat", base=True)
    trace = case.trace
    if "shuffle" in variants:  # every slot: the sparsifier counts (clock, page) cells, in any order
        rec = case.records[np.random.default_rng(seed).permutation(case.records.size)]
        trace = Trace(trace.grid, trace.block, [Section(trace.sections[0].size, 1, rec.tobytes())], trace.layout)
    if "empty_section" in variants:
        trace = _with_empty_section(trace, 1)
    folder = name if "rename" in variants else "Jan_23_06_27_37_268336"
    other = _run("dmat", [str(_place(trace, tmp / "b", folder)), *args], tmp / "out-b", "dmat")
    assert _values(other) == _values(base)
    assert (tmp / "out-b" / "fig.dmat").read_bytes() == (tmp / "out-a" / "fig.dmat").read_bytes()


# --------------------------------------------------------------------------------------------------
# warp_sched: the sample bundle's tail trace folder, rewritten


def _rewrite_blocks(result: Path, seed: int) -> None:
    """``result`` with the blocks of its first section in another order (bytes moved, nothing decoded)."""
    trace = open_trace(result)
    sec = trace.section(0)
    raw = bytearray(result.read_bytes())
    stride = sec.units_per_block * sec.size
    region = np.frombuffer(bytes(raw[sec.offset : sec.offset + sec.blocks * stride]), np.uint8)
    order = np.random.default_rng(seed).permutation(sec.blocks)
    raw[sec.offset : sec.offset + region.size] = region.reshape(sec.blocks, stride)[order].tobytes()
    result.write_bytes(bytes(raw))


@given(variants=st.sets(st.sampled_from(["rename", "shuffle"]), min_size=1), name=NAMES,
       seed=st.integers(0, 2**32 - 1))
@FEW
def test_warp_sched_tail_same_numbers_for_every_variant(tiny_bundle: Path, variants: set[str], name: str, seed: int,
                                                        tmp_path_factory) -> None:
    tmp = tmp_path_factory.mktemp("ws")
    src = next(d for d in (tiny_bundle / "warp_sched" / "tail").iterdir() if d.is_dir())
    a, b = tmp / "a" / src.name, tmp / "b" / (name if "rename" in variants else src.name)
    shutil.copytree(src, a)
    shutil.copytree(src, b)
    if "shuffle" in variants:
        _rewrite_blocks(next((b / "result").glob("*.bin")), seed)
    base = _run("warp_sched", [str(a)], tmp / "out-a", "fig13cd")
    other = _run("warp_sched", [str(b)], tmp / "out-b", "fig13cd")
    assert _values(other, {src.name, b.name}) == _values(base, {src.name, b.name})


# --------------------------------------------------------------------------------------------------
# Text inputs: max_mem, kernel_overhead (folders), exposed_latency (CSV)


def _rename_trace_dirs(root: Path, name: str) -> None:
    """Every timestamp-named trace folder under ``root`` renamed (one per folder, so no order changes)."""
    for d in sorted(root.rglob("*_*_*"), key=lambda p: -len(p.parts)):
        if d.is_dir() and (d / "event.log").is_file() and d.name[:3].isalpha() and d.name != name:
            d.rename(d.with_name(name))


def _blank_lines(files: list[Path]) -> None:
    for f in files:
        f.write_bytes(f.read_bytes() + b"\n\n")


@given(variants=st.sets(st.sampled_from(["rename", "blank"]), min_size=1), name=NAMES)
@FEW
def test_max_mem_same_numbers_for_every_variant(tiny_bundle: Path, variants: set[str], name: str,
                                                tmp_path_factory) -> None:
    tmp = tmp_path_factory.mktemp("mm")
    model = sorted((tiny_bundle / "max_mem").iterdir())[0]
    a, b = tmp / "a" / "max_mem" / model.name, tmp / "b" / "max_mem" / model.name
    shutil.copytree(model, a)
    shutil.copytree(model, b)
    if "rename" in variants:
        _rename_trace_dirs(b, name)
    if "blank" in variants:
        _blank_lines(sorted(b.rglob("stdout.log")))
    assert _values(_run("max_mem", [str(b.parent)], tmp / "out-b")) == \
        _values(_run("max_mem", [str(a.parent)], tmp / "out-a"))


@given(variants=st.sets(st.sampled_from(["rename", "blank"]), min_size=1), sha=st.sampled_from(["0" * 40, "abc"]))
@FEW
def test_kernel_overhead_same_numbers_for_every_variant(tiny_bundle: Path, variants: set[str], sha: str,
                                                        tmp_path_factory) -> None:
    tmp = tmp_path_factory.mktemp("ko")
    group = tiny_bundle / "kernel_overhead" / "triton_op"
    a, b = tmp / "a" / "kernel_overhead" / group.name, tmp / "b" / "kernel_overhead" / group.name
    shutil.copytree(group, a)
    shutil.copytree(group, b)
    if "rename" in variants:  # kernel/<index>_<sha1>: the build's hash part renamed
        for d in sorted(b.rglob("kernel/*_*")):
            d.rename(d.with_name(f"{d.name.split('_', 1)[0]}_{sha}"))
    if "blank" in variants:
        _blank_lines(sorted(b.rglob("process.log")))
    assert _values(_run("kernel_overhead", [str(b.parent)], tmp / "out-b")) == \
        _values(_run("kernel_overhead", [str(a.parent)], tmp / "out-a"))


@given(variants=st.sets(st.sampled_from(["rename", "shuffle", "blank"]), min_size=1), name=NAMES,
       seed=st.integers(0, 2**32 - 1))
@FEW
def test_exposed_latency_same_numbers_for_every_variant(tiny_bundle: Path, variants: set[str], name: str, seed: int,
                                                        tmp_path_factory) -> None:
    tmp = tmp_path_factory.mktemp("el")
    a = tmp / "a"
    b = tmp / ("b-" + name.replace(" ", "_") if "rename" in variants else "b")
    for d in (a, b):  # one workload's CSV (each adds a figure, and the rule is the same for all)
        d.mkdir()
        shutil.copy(tiny_bundle / "exposed_latency" / "attn.csv", d)
    for csv in sorted(b.glob("*.csv")):
        head, *rows = csv.read_text(encoding="utf-8").splitlines()
        if "shuffle" in variants:  # one row per probe: their order means nothing
            rows = [rows[i] for i in np.random.default_rng(seed).permutation(len(rows))]
        csv.write_text("\n".join([head, *rows]) + ("\n\n" if "blank" in variants else "\n"), encoding="utf-8")
    assert _values(_run("exposed_latency", [str(b)], tmp / "out-b")) == \
        _values(_run("exposed_latency", [str(a)], tmp / "out-a"))


@pytest.mark.parametrize("level", [1, WARP])
def test_an_empty_section_is_appended_after_the_probes_own(level: int, tmp_path: Path) -> None:
    """The variant itself: the first section's bytes and place are kept, the new one is all zeros."""
    t = Trace((3, 1, 1), (64, 1, 1), [Section(16, level, bytes(range(256)) * (3 * 64 // level * 16 // 256 + 1))])
    t.sections[0].data = t.sections[0].data[: 3 * t.units_per_block(level) * 16]
    w = _with_empty_section(t, level)
    tr = open_trace(w.write(tmp_path / "0.5.bin"))
    assert len(tr.sections) == 2 and tr.section(1).size == 16
    assert tr.records(0, "u1").tobytes() == t.sections[0].data and not tr.records(1, "u1").any()
