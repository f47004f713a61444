"""Readers against GENUINE output of Neutrino's probe engine (tests/data/genuine/probe-engine, made by
tools/genuine/probe_engine.py from the real neutrino/probe/cuda.py + ptxas, both branches), and the
sample generator's kernel folders and probe.toml against the same shapes.

Expected register counts are read off the genuine process.log files (what ptxas printed), not
computed by the code under test.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from neutrino_ae.formats.kernelinfo import COUNT_SIZED, read_kernel_info, read_register_usage
from neutrino_ae.formats.level import Level
from neutrino_ae.formats.probe import read_probe_toml

GENUINE = Path(__file__).resolve().parents[1] / "data" / "genuine" / "probe-engine"
CASES = sorted((p.parent.name, p.name) for p in GENUINE.glob("*/*") if p.is_dir())

# (probed, pruned, countd) as ptxas printed them in each genuine process.log. A case is a probe on
# its small kernel, or "<probe>-<kernel>" on a register-heavy kernel (Table 2's register column):
# there ptxas gives the dmat-probed build FEWER registers than the pruned one.
PTXAS = {
    ("artifact", "block_sched"): (15, 6, None), ("artifact", "dmat"): (29, 27, 28),
    ("artifact", "gmem_bytes"): (29, 27, None), ("artifact", "tensorop_count"): (22, 22, None),
    ("artifact", "block_sched-ilp_sum"): (128, 128, None), ("artifact", "block_sched-stencil_1d"): (31, 31, None),
    ("artifact", "dmat-ilp_sum"): (114, 128, 128), ("artifact", "dmat-stencil_1d"): (16, 31, 31),
    ("main", "block_sched"): (18, 6, None), ("main", "dmat"): (31, 27, 28),
    ("main", "gmem_bytes"): (29, 27, None), ("main", "tensorop"): (22, 22, None),
    ("main", "block_sched-ilp_sum"): (128, 128, None), ("main", "block_sched-stencil_1d"): (31, 31, None),
    ("main", "dmat-ilp_sum"): (118, 128, 128), ("main", "dmat-stencil_1d"): (18, 31, 31),
}
LEVELS = {"block_sched": (Level.WARP, 16), "dmat": (Level.THREAD, COUNT_SIZED), "gmem_bytes": (Level.THREAD, 8),
          "tensorop_count": (Level.THREAD, 8), "tensorop": (Level.THREAD, 8)}


def test_fixtures_cover_both_branches_and_every_builtin_probe():
    assert set(CASES) == set(PTXAS), "regenerate with python tools/genuine/probe_engine.py"
    assert (GENUINE / "MANIFEST.md").read_text().count("Neutrino ") >= 2


@pytest.mark.parametrize("branch, case", sorted(PTXAS))
def test_register_deltas_are_the_signed_ones_ptxas_gives(branch, case):
    d = GENUINE / branch / case
    info = read_kernel_info(d / "kernel.info")
    usage = read_register_usage(d / "process.log", info.name)
    probed, pruned, countd = PTXAS[(branch, case)]
    assert (usage.probed, usage.pruned, usage.countd, usage.by_name) == (probed, pruned, countd, True)
    assert usage.extra == probed - pruned and usage.allocated_fewer == (probed < pruned)


@pytest.mark.parametrize("branch, case", sorted(PTXAS))
def test_kernel_info_and_probe_toml_agree(branch, case):
    probe = case.split("-")[0]
    d = GENUINE / branch / case
    info = read_kernel_info(d / "kernel.info")
    spec = read_probe_toml(d / "probe.toml")
    assert info.probes == [LEVELS[probe]]
    assert spec.levels == [LEVELS[probe][0]] and spec.compiled == (branch == "main")
    assert spec.datamodels[0].count == (probe == "dmat")
    if branch == "artifact" and probe != "tensorop_count":
        assert Path(info.analyze_hook).name == spec.analyze_hook
    if branch == "main":
        assert info.analyze_hook is None  # main's engine no longer writes the hook line


# ------------------------------------------------------------------------------------ sample shapes


def _line_kind(line: str) -> str:
    """A process.log line reduced to its kind (numbers, names and paths dropped)."""
    if line.startswith("ptxas -arch="):
        return "ptxas-command " + re.search(r"/(\w+)\.ptx -o ", line).group(1)
    if line.startswith("ptxas info"):
        return re.sub(r"'[^']*'|\d+(\.\d+)?|\bfor \S+$", "_", line).split(":", 1)[1].strip()
    if line.startswith("    ") and "stack frame" in line:
        return "stack-frame"
    return {"": "blank", "None": "None", "['']": "None"}.get(line, "other")


def _ptxas_kinds(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("ptxas -arch="))
    end = max(i for i, ln in enumerate(lines) if ln.startswith("ptxas info")) + 1
    return [_line_kind(ln) for ln in lines[:2]] + [_line_kind(ln) for ln in lines[start:end]]


@pytest.fixture
def tiny_sample(tiny_bundle):
    return tiny_bundle


@pytest.mark.parametrize("probe, sample_dir", [("block_sched", "block_sched"), ("dmat", "dmat/raw/fig1")])
def test_sample_trace_dirs_have_the_genuine_shapes(tiny_sample, probe, sample_dir):
    genuine = GENUINE / "artifact" / probe
    tdir = next(p.parent for p in (tiny_sample / sample_dir).glob("*/probe.toml"))
    kdir = next((tdir / "kernel").iterdir())
    # process.log: the same kinds of line in the same order (build order probed, pruned, countd)
    assert _ptxas_kinds(kdir / "process.log") == _ptxas_kinds(genuine / "process.log")
    # kernel.info: the same fields, line by line
    ours, theirs = (p.read_text().splitlines() for p in (kdir / "kernel.info", genuine / "kernel.info"))
    assert len(ours) == len(theirs)
    assert [re.sub(r"\d+", "N", a) for a in ours[1:4]] == [re.sub(r"\d+", "N", b) for b in theirs[1:4]]
    assert Path(ours[4]).name == Path(theirs[4]).name and ours[4].startswith("/")
    # probe.toml: the same top-level keys in the same order, and the saving table's keys in order
    t_ours, t_theirs = (tomllib.loads(p.read_text()) for p in (tdir / "probe.toml", genuine / "probe.toml"))
    top = [k for k, v in t_theirs.items() if not isinstance(v, dict)]
    assert [k for k, v in t_ours.items() if not isinstance(v, dict)] == top
    saving = next(v for v in t_theirs.values() if isinstance(v, dict) and "datamodel" in v)
    assert list(next(v for v in t_ours.values() if isinstance(v, dict) and "datamodel" in v)) == list(saving)


def test_the_committed_fixtures_are_what_the_real_engine_writes_today(tmp_path):
    """Regenerate with the real engine (skipped, saying why, without the Neutrino source or CUDA)."""
    import sys

    import neutrino_source

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools" / "genuine"))
    import probe_engine

    reason = neutrino_source.missing_reason("artifact") or neutrino_source.missing_reason("main") \
        or probe_engine.missing_tools()
    if reason:
        pytest.skip(reason)
    probe_engine.generate(neutrino_source.source_dir(), tmp_path)

    def stable(text: str) -> str:  # ptxas reports its own compile time
        return re.sub(r"Compile time = [\d.]+ ms", "Compile time = N ms", text)

    for branch, probe in CASES:
        for f in sorted((GENUINE / branch / probe).iterdir()):
            assert stable((tmp_path / branch / probe / f.name).read_text()) == stable(f.read_text()), f


def _event_kinds(path: Path) -> list[str]:
    """event.log lines reduced to their kind ("[exec] grid-warp", "[exec] save", ...)."""
    kinds = []
    for line in path.read_text(errors="replace").splitlines():
        m = re.match(r"\[(\w+)\] (\S+)(?: \S+ \S+ \S+ (block|warp))?", line)
        if not m:
            continue
        word = m.group(2)
        if word.isdigit():
            word = "param" if " param" in line else "N"
        kinds.append(f"[{m.group(1)}] {word}" + (f"-{m.group(3)}" if m.group(3) else ""))
    return kinds


def test_the_sample_event_log_has_the_genuine_line_kinds_in_order(tiny_sample):
    genuine = _event_kinds(GENUINE.parent / "artifact" / "block_sched" / "event.log")
    ours = _event_kinds(next((tiny_sample / "block_sched").glob("*/event.log")))
    assert set(ours) <= set(genuine), set(ours) - set(genuine)
    launch = [k for k in genuine if k.startswith("[exec]") and "funcmap" not in k]
    ours_launch = [k for k in ours if k.startswith("[exec]")][: len(launch)]
    assert ours_launch == launch  # param, grid, grid-warp, probe-mem, succeed, save, prologue


def test_the_sample_cmd_line_is_the_hooked_command_as_in_genuine_event_logs(tiny_sample):
    """The hook driver writes the hooked process's own command line ([cmd] on artifact, [init] cmd
    on main), never the ``neutrino ...`` CLI line that started it."""
    from neutrino_ae.formats.tracedir import TraceDir

    genuine = sorted(p.parent for p in GENUINE.parent.glob("*/*/event.log"))
    assert genuine and all("workload.py" in TraceDir(d).event_log().cmd.split()[1] for d in genuine)
    sample = sorted(p.parent for p in tiny_sample.rglob("event.log"))
    assert any("kernel_overhead" in d.parts for d in sample)
    for d in sample:
        cmd = TraceDir(d).event_log().cmd
        assert cmd and cmd.split()[0] != "neutrino", (d, cmd)
