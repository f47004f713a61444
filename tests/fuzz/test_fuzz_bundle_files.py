"""Hostile input, fuzzed: every reader and every per-figure command line on mutated bundle files
(truncated, bytes flipped, garbage appended, emptied, replaced by a folder). Each run must end in
a result or in one error line naming the file -- never a traceback or a hang. Bounded: a fixed
number of examples per target, no deadline per example (the whole module takes seconds).
"""

from __future__ import annotations

import io
import shutil
import signal
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from figures_preloaded import preload_figures
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from exposed_latency.inputs import read_workload_csv
from max_mem.inputs import read_max_memory
from neutrino_ae.bundle.manifest import read_manifest
from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.formats.bintrace import open_trace
from neutrino_ae.formats.dmat import read_dmat
from neutrino_ae.formats.eventlog import parse_event_log
from neutrino_ae.formats.kernelinfo import read_kernel_info, read_register_usage
from neutrino_ae.formats.probe import read_probe_toml
from neutrino_ae.formats.tensortrace import read_tensor_trace
from neutrino_ae.report.command.script import run_main
from neutrino_ae.report.section import registry
from neutrino_ae.report.section.driver import command

TALLY: Counter = Counter()


@pytest.fixture(scope="module", autouse=True)
def report_tally():
    """Print how many cases ran and how they ended (pytest -s shows it)."""
    yield
    print(f"\nfuzz: {sum(TALLY.values())} cases: {TALLY['ok']} results, {TALLY['clean error']} clean errors, "
          f"{TALLY['crash']} crashes, {TALLY['hang']} hangs; a crash or a hang fails its test")


@pytest.fixture(scope="module", autouse=True)
def _figures_preloaded():
    """Each command line's figure process is forked from this process: it finds matplotlib loaded."""
    preload_figures()


@pytest.fixture
def bundle(tiny_bundle):
    return tiny_bundle


def _pick(bundle: Path, pattern: str) -> Path:
    return sorted(bundle.glob(pattern))[0]


MUTATIONS = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("flip"), st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)), min_size=1, max_size=8)),
    st.tuples(st.just("append"), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("empty"), st.none()),
)


def _mutate(src: Path, dst: Path, mutation: tuple) -> None:
    data = bytearray(src.read_bytes())
    kind, arg = mutation
    if kind == "truncate":
        data = data[: int(len(data) * arg)]
    elif kind == "flip":
        for where, xor in arg:
            if data:
                data[min(int(where * len(data)), len(data) - 1)] ^= xor
    elif kind == "append":
        data += arg
    else:
        data = bytearray()
    dst.write_bytes(bytes(data))


class _Hang(Exception):
    pass


def _bounded(fn, seconds: int = 20):
    def alarm(*_):
        raise _Hang()
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        return fn()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _crash_counted(fn):
    """``fn()``; an exception that escapes it (a traceback, a hang) is counted, then fails the test."""
    try:
        return fn()
    except _Hang:
        TALLY["hang"] += 1
        raise
    except Exception:
        TALLY["crash"] += 1
        raise


def _judge(fn, path: Path) -> None:
    """A clean result, or a one-line error that names the file; anything else fails the test."""
    try:
        _bounded(fn)
        TALLY["ok"] += 1
    except NeutrinoAEError as exc:
        text = str(exc)
        assert "\n" not in text, text
        assert str(path) in text or path.name in text, f"error names no file: {text}"
        TALLY["clean error"] += 1
    except _Hang:
        TALLY["hang"] += 1
        pytest.fail(f"hung on {path}")
    except Exception:
        TALLY["crash"] += 1
        raise


READERS = [
    ("block_sched/*/result/*.bin", open_trace),
    ("block_sched/*/event.log", parse_event_log),
    ("block_sched/*/kernel/*/kernel.info", read_kernel_info),
    ("block_sched/*/kernel/*/process.log", read_register_usage),
    ("block_sched/*/probe.toml", read_probe_toml),
    ("dmat/fig1.dmat", read_dmat),
    ("dmat/raw/fig1/*/tensor.trace", read_tensor_trace),
    ("bundle.json", lambda p: read_manifest(p.parent)),
    ("max_mem/*/*/*/stdout.log", read_max_memory),
    ("exposed_latency/attn.csv", read_workload_csv),
]


@pytest.mark.parametrize("pattern, reader", READERS, ids=[r[0] for r in READERS])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=MUTATIONS)
def test_every_reader_on_mutated_files(bundle, tmp_path, pattern, reader, mutation):
    src = _pick(bundle, pattern)
    dst = tmp_path / src.relative_to(bundle)
    dst.parent.mkdir(parents=True, exist_ok=True)
    if pattern == "bundle.json":
        dst = tmp_path / "bundle.json"
    _mutate(src, dst, mutation)
    _judge(lambda: reader(dst), dst)


def _judge_command_line(main, args: list[str], work: Path, mutated: Path) -> None:
    """Run a section's command line on ``args``: exit 0, or exit 2 with one error line naming ``mutated``."""
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = _crash_counted(lambda: _bounded(lambda: run_main(main, [*args, "--out", str(work / "out")])))
    lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
    if code not in (0, 2):
        TALLY["crash"] += 1
    assert code in (0, 2), (code, err.getvalue()[-2000:])
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("error:") and str(mutated) in lines[0], err.getvalue()
        TALLY["clean error"] += 1
    else:
        TALLY["ok"] += 1
    shutil.rmtree(work, ignore_errors=True)


CLIS = [
    ("block_sched", "block_sched/*/result/*.bin", lambda p: [str(p)]),
    ("dmat", "dmat/fig1.dmat", lambda p: [str(p)]),
    ("exposed_latency", "exposed_latency/attn.csv", lambda p: [str(p)]),
    ("warp_sched", "warp_sched/tail/*/result/*.bin", lambda p: [str(p)]),
]


@pytest.mark.parametrize("section, pattern, args", CLIS, ids=[c[0] for c in CLIS])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=MUTATIONS)
# Found by this test: a flipped byte made a .dmat pair name a page outside its page list, and dmat's
# error line did not name the file.
@example(mutation=("flip", [(0.25390625, 1)]))
def test_every_command_line_on_mutated_input(bundle, tmp_path_factory, section, pattern, args, mutation):
    from neutrino_ae.report.section.registry import section_module

    work = tmp_path_factory.mktemp(section)
    src = _pick(bundle, pattern)
    dst = work / "in" / src.name
    dst.parent.mkdir()
    _mutate(src, dst, mutation)
    main = section_module(section, "fig13cd").main if section == "warp_sched" else command(registry.get(section))
    _judge_command_line(main, [*args(dst)], work, dst)


# The command lines that read a folder: one unit of it (a model, a group) is copied and one file
# in the copy is mutated.
FOLDER_CLIS = [
    ("max_mem", "max_mem/*", "*/*/stdout.log"),
    ("max_mem", "max_mem/*", "*/*/*/event.log"),
    ("kernel_overhead", "kernel_overhead/triton_op", "*/*/trace/event.log"),
    ("kernel_overhead", "kernel_overhead/triton_op", "*/*/trace/kernel/*/process.log"),
]


@pytest.mark.parametrize("section, unit, pattern", FOLDER_CLIS, ids=[f"{c[0]}:{c[2]}" for c in FOLDER_CLIS])
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=MUTATIONS)
def test_every_folder_command_line_on_a_mutated_file(bundle, tmp_path_factory, section, unit, pattern, mutation):
    work = tmp_path_factory.mktemp(section)
    src = _pick(bundle, unit)
    copy = work / "in" / section / src.name
    shutil.copytree(src, copy)
    target = sorted(copy.glob(pattern))[0]
    _mutate(target, target, mutation)
    _judge_command_line(command(registry.get(section)), [str(work / "in" / section)], work, target)
