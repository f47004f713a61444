"""Issue 47 family 2, a collection that loses data, through the public commands: a "trace in <folder>" line
naming a folder outside the collector's own working folder (the workload shares the CLI's stderr), a new
collection whose traces are truncated (the real CLI exits 0 regardless), and an output that is one of the
inputs (``export perfetto t.bin -o t.bin``, a per-figure script's ``--out``, ``run --trace-root`` under
``--output-dir``). Each failed on main b3c272a."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from faultkit import REPO, cli_env, one_error_line

FAKE = REPO / "tests" / "fake_neutrino" / "neutrino"


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def _tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


def _victim(tmp_path: Path) -> Path:
    """A trace folder of someone else's, outside every collection's working folder."""
    victim = tmp_path / "elsewhere" / "Jan01_000000_1"
    (victim / "result").mkdir(parents=True)
    (victim / "event.log").write_text("precious\n")
    (victim / "result" / "0.1.bin").write_bytes(b"precious trace")
    return victim


def _warp_sched(out: Path, neutrino: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "warp_sched" / "main.py"), "--out", str(out), "--neutrino",
                           str(neutrino)], cwd=cwd, env=cli_env(), text=True, capture_output=True, timeout=300,
                          check=False)


@pytest.mark.parametrize("how", ["absolute", "relative", "symlink"])
def test_a_trace_line_naming_a_folder_outside_the_working_folder_is_ignored(tmp_path, how):
    """The workload prints "trace in <folder>" itself: main moved that folder into the collection, and the next
    collection deleted it."""
    victim = _victim(tmp_path)
    before = _tree(victim)
    if how == "absolute":
        said = str(victim)
    elif how == "relative":
        said = "../" * 20 + str(victim).lstrip("/")  # from the working folder, up to / and down again
    else:  # a link inside the working folder that leads outside it
        said = "./trace/Jan02_000000_2"
    link = "mkdir -p trace && ln -s " + str(victim) + " trace/Jan02_000000_2\n" if how == "symlink" else ""
    tool = _script(tmp_path / "neutrino", f'{link}"{FAKE}" "$@"; rc=$?; echo "[info] trace in {said}" >&2; exit $rc\n')
    out = tmp_path / "collected"
    for _ in range(2):  # the second collection used to delete what the first one moved in
        proc = _warp_sched(out, tool, tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "outside" in proc.stderr and "ignored" in proc.stderr, proc.stderr
    assert victim.is_dir() and not victim.is_symlink() and _tree(victim) == before
    assert (out / "exclusive_sched" / "result").is_dir() and (out / "shared_sched" / "result").is_dir()


def test_a_truncated_collection_keeps_the_previous_good_one(tmp_path):
    """The real CLI exits 0 with a truncated trace (a full disk, a killed workload): main deleted the previous
    good collection and published the truncated one."""
    out = tmp_path / "collected"
    proc = _warp_sched(out, FAKE, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    good = _tree(out)
    assert any(k.endswith(".bin") for k in good)
    truncating = _script(tmp_path / "neutrino", f'"{FAKE}" "$@" 2>"$PWD/err"; rc=$?; cat "$PWD/err" >&2\n'
                                                 'd=$(sed -n "s/.*trace in //p" "$PWD/err")\n'
                                                 'for f in "$d"/result/*.bin; do truncate -s 100 "$f"; done\n'
                                                 'exit $rc\n')
    proc = _warp_sched(out, truncating, tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert {k: v for k, v in _tree(out).items() if k.endswith(".bin")} == {
        k: v for k, v in good.items() if k.endswith(".bin")}
    said = [ln for ln in proc.stdout.splitlines() if ln.startswith("failed ")]
    assert len(said) == 3 and all("truncated" in ln and "previous collection is kept" in ln for ln in said), proc.stdout


def test_a_truncated_collection_through_the_section_runner_keeps_the_previous_one(tmp_path, monkeypatch):
    """The notebook's collection step (a section's collect entry into a staging folder): a collection whose traces
    do not parse is refused before it replaces the previous one, in one line."""
    from neutrino_ae.run.runner import collect_section
    from neutrino_ae.workloads.neutrino import CollectContext, CollectError

    root = tmp_path / "traces"
    collect_section("warp_sched", root, CollectContext(neutrino=str(FAKE), log=lambda s: None))
    good = _tree(root / "warp_sched")
    truncating = _script(tmp_path / "neutrino", f'"{FAKE}" "$@" 2>"$PWD/err"; rc=$?; cat "$PWD/err" >&2\n'
                                                 'd=$(sed -n "s/.*trace in //p" "$PWD/err")\n'
                                                 'for f in "$d"/result/*.bin; do truncate -s 100 "$f"; done\n'
                                                 'exit $rc\n')
    with pytest.raises(CollectError) as caught:
        collect_section("warp_sched", root, CollectContext(neutrino=str(truncating), log=lambda s: None))
    assert "\n" not in str(caught.value) and "previous collection" in str(caught.value)
    now = _tree(root / "warp_sched")
    assert {k: v for k, v in now.items() if k.endswith(".bin")} == {k: v for k, v in good.items() if k.endswith(".bin")}


def _trace(tiny_bundle: Path, tmp_path: Path) -> Path:
    src = next(p for p in (tiny_bundle / "block_sched").iterdir() if (p / "result").is_dir())
    return Path(shutil.copytree(src, tmp_path / "t"))


def _export(trace: Path, out: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neutrino_ae", "export", "perfetto", str(trace), "-o", str(out)],
                          cwd=cwd, env=cli_env(), text=True, capture_output=True, timeout=300, check=False)


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink", "dotted", "inside-folder"])
def test_export_never_writes_over_its_input(tiny_bundle, tmp_path, how):
    tdir = _trace(tiny_bundle, tmp_path)
    binary = next((tdir / "result").glob("*.bin"))
    before = _tree(tdir)
    source, out = binary, binary
    if how == "symlink":
        out = tmp_path / "link.json"
        out.symlink_to(binary)
    elif how == "hardlink":
        out = tmp_path / "hard.json"
        os.link(binary, out)
    elif how == "dotted":
        out = tdir / "result" / ".." / "result" / binary.name
    elif how == "inside-folder":
        source, out = tdir, tdir / "event.log"
    proc = _export(source, out, tmp_path)
    assert "input" in one_error_line(proc)
    assert _tree(tdir) == before


def test_a_figure_script_never_writes_into_its_input_folder(tiny_bundle, tmp_path):
    tdir = _trace(tiny_bundle, tmp_path)
    before = _tree(tdir)
    proc = subprocess.run([sys.executable, str(REPO / "block_sched" / "block_sched.py"), str(tdir), "--out",
                           str(tdir / "result")], cwd=tmp_path, env=cli_env(), text=True, capture_output=True,
                          timeout=300, check=False)
    assert "input" in one_error_line(proc)
    assert _tree(tdir) == before


def test_run_never_publishes_over_its_trace_root(tiny_bundle, tmp_path):
    """A trace root where the run publishes a section's results (``--output-dir out --trace-root
    out/kernel_overhead``): main wrote the section's results into the bundle it read."""
    out = tmp_path / "out"
    traces = Path(shutil.copytree(tiny_bundle, out / "kernel_overhead"))
    before = _tree(traces)
    proc = subprocess.run([sys.executable, "-m", "neutrino_ae", "run", "static", "--trace-root", str(traces),
                           "--output-dir", str(out), "--sections", "kernel_overhead"], cwd=tmp_path, env=cli_env(),
                          text=True, capture_output=True, timeout=300, check=False)
    assert "one of the inputs" in one_error_line(proc)
    assert _tree(traces) == before


def test_a_figure_script_never_writes_a_result_over_an_input_beside_it(tiny_bundle, tmp_path):
    """``exposed_latency.py x/exposed_latency.csv --out x``: main wrote its results table over the input."""
    folder = tmp_path / "x"
    folder.mkdir()
    table = folder / "exposed_latency.csv"
    shutil.copy2(tiny_bundle / "exposed_latency" / "attn.csv", table)
    before = table.read_bytes()
    proc = subprocess.run([sys.executable, str(REPO / "exposed_latency" / "exposed_latency.py"), str(table), "--out",
                           str(folder)], cwd=tmp_path, env=cli_env(), text=True, capture_output=True, timeout=300,
                          check=False)
    assert one_error_line(proc) == (f"error: {table}: is an input of this command; refusing to write over it "
                                     "(name an output folder that holds none of the inputs)")
    assert table.read_bytes() == before
