"""Collection with the fake neutrino CLI: trace dirs moved, failures as one-line errors."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from neutrino_ae.bundle.context import open_bundle
from neutrino_ae.formats.tracedir import TraceDir, trace_dirs_from_stderr
from neutrino_ae.run import runner
from neutrino_ae.workloads.neutrino import (
    CollectContext,
    CollectError,
    CollectRuns,
    collect_into,
    run_neutrino,
    script_collector,
    staged,
)

FAKE = Path(__file__).resolve().parents[1] / "fake_neutrino"


@pytest.fixture
def fake_path(monkeypatch):
    monkeypatch.setenv("PATH", os.pathsep.join([str(FAKE), str(Path(sys.executable).parent), os.environ["PATH"]]))
    for var in ("FAKE_NEUTRINO_FAIL", "FAKE_NEUTRINO_NO_TRACE_LINE"):
        monkeypatch.delenv(var, raising=False)


def test_trace_dirs_from_stderr():
    text = "[info] init\n[info] trace in ./trace/Apr24_231539_1860576\nnoise\n[info] trace in /x/Apr24_2_9\n"
    assert trace_dirs_from_stderr(text) == ["./trace/Apr24_231539_1860576", "/x/Apr24_2_9"]
    assert trace_dirs_from_stderr("nothing here\n") == []


def test_run_neutrino_moves_trace(fake_path, tmp_path):
    out = tmp_path / "out"
    res = run_neutrino(["-p", "block_sched", "python", "raw.py"], None, out)
    assert res.returncode == 0 and len(res.trace_dirs) == 1
    tdir = res.trace_dir
    assert tdir.parent == out and (tdir / "event.log").is_file() and (tdir / "probe.toml").is_file()
    assert len(list((tdir / "result").glob("*.bin"))) == 1
    assert res.stderr_path.read_text().startswith("[info] trace in")
    # The scratch working directory (with the CLI's ./trace) is gone.
    assert [p.name for p in out.iterdir() if p.is_dir()] == [tdir.name]


def test_run_neutrino_dest_name_and_workdir(fake_path, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    res = run_neutrino(["--benchmark", "-p", "gmem_bytes", "true"], work, tmp_path / "cell", dest_name="trace")
    assert res.trace_dir == tmp_path / "cell" / "trace"
    assert "[benchmark] prologue" in (res.trace_dir / "event.log").read_text()
    assert not (work / "trace").exists()


def test_collect_into_replaces_the_folder_and_keeps_stdout(fake_path, tmp_path, monkeypatch, capsys):
    dest = tmp_path / "gemm" / "block_sched"
    dest.mkdir(parents=True)
    (dest / "old.txt").write_text("from an earlier collection")
    monkeypatch.setenv("FAKE_NEUTRINO_WORKLOAD_MEM", "4096")  # what the fake workload prints under --memusage
    res = collect_into(dest, ["-p", "gmem_bytes", "--memusage", "true"], "gemm/block_sched", dest_name="trace")
    assert res is not None and res.trace_dir == dest / "trace"
    assert sorted(p.name for p in dest.iterdir()) == ["neutrino.stderr.log", "stdout.log", "trace"]
    assert (dest / "stdout.log").read_text() == "max memory: 4096\n"
    assert capsys.readouterr().out == ""


def test_collect_into_says_a_failed_run_in_one_line_and_goes_on(fake_path, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_NEUTRINO_FAIL", "1")
    assert collect_into(tmp_path / "cell", ["-p", "block_sched", "true"], "attn/block_sched") is None
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("failed attn/block_sched: `neutrino -p block_sched true` exited 1") and "injected" in line


def test_collect_runs_counts_and_says_each_run_and_the_total(fake_path, tmp_path, monkeypatch, capsys):
    runs = CollectRuns("toy")
    assert runs.run(tmp_path / "a", ["-p", "block_sched", "true"], "a/block_sched") is not None
    monkeypatch.setenv("FAKE_NEUTRINO_FAIL", "1")
    assert runs.run(tmp_path / "b", ["-p", "block_sched", "true"], "b/block_sched", said=lambda r: "unused") is None
    assert runs.close() == 0  # one run collected: the script succeeds
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("a/block_sched: ") and out[0].endswith("s")
    assert out[1].startswith("failed b/block_sched: ") and out[2] == "toy: 1 run(s) collected, 1 failed"
    nothing = CollectRuns("toy")
    nothing.run(tmp_path / "c", ["-p", "block_sched", "true"], "c/block_sched")
    assert nothing.close() == 1  # none collected: the script fails


def test_failure_has_stderr_tail(fake_path, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NEUTRINO_FAIL", "1")
    with pytest.raises(CollectError) as err:
        run_neutrino(["-p", "block_sched", "true"], None, tmp_path / "o")
    msg = str(err.value)
    assert "exited 1" in msg and "injected failure" in msg and "\n" not in msg


def test_no_trace_line(fake_path, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_NEUTRINO_NO_TRACE_LINE", "1")
    with pytest.raises(CollectError, match="printed no 'trace in <dir>' line"):
        run_neutrino(["-p", "block_sched", "true"], None, tmp_path / "o")


def test_announced_dir_missing(tmp_path):
    tool = tmp_path / "liar"
    tool.write_text("#!/bin/sh\necho '[info] trace in ./trace/Apr01_000000_1' >&2\n")
    tool.chmod(0o755)
    with pytest.raises(CollectError, match="does not exist"):
        run_neutrino(["-p", "x", "true"], None, tmp_path / "o", neutrino=str(tool))


def test_missing_cli(tmp_path):
    with pytest.raises(CollectError, match="not found"):
        run_neutrino(["-p", "x", "true"], None, tmp_path / "o", neutrino=str(tmp_path / "no-such-neutrino"))


def test_staged_keeps_old_on_failure(tmp_path):
    final = tmp_path / "sec"
    final.mkdir()
    (final / "old.txt").write_text("old")
    with pytest.raises(RuntimeError), staged(final) as stage:
        (stage / "new.txt").write_text("new")
        raise RuntimeError(f"boom (log: {stage / 'new.txt'})")
    assert sorted(p.name for p in final.iterdir()) == ["old.txt"]
    # the failed collection's folder stays, hidden, so the log its error names can be read
    (left,) = [p for p in tmp_path.iterdir() if p.name != "sec"]
    assert left.name.startswith(".sec.collecting-") and (left / "new.txt").read_text() == "new"
    with staged(final) as stage:
        (stage / "new.txt").write_text("new")
    assert sorted(p.name for p in final.iterdir()) == ["new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["sec"]


def test_results_by_time_not_listing_order(tmp_path):
    res = tmp_path / "result"
    res.mkdir()
    for name in ("10.5.bin", "2.25.bin", "0.486795.bin"):
        (res / name).write_bytes(b"")
    assert [p.name for p in TraceDir(tmp_path).results()] == ["0.486795.bin", "2.25.bin", "10.5.bin"]


def test_collect_block_sched_with_fake(fake_path, tmp_path):
    runner.collect_section("block_sched", tmp_path, CollectContext(log=lambda s: None))
    root = tmp_path / "block_sched"
    assert len([p for p in root.iterdir() if (p / "event.log").is_file()]) == 1
    assert len(list((root / "variants" / "persistent").glob("*/event.log"))) == 1
    manifest = (tmp_path / "bundle.json").read_text()
    assert '"kind": "dynamic"' in manifest and "block_sched" in manifest


def test_block_sched_analysis_of_collected_tree(fake_path, tmp_path):
    # Fake schedule: 64 blocks round-robin on 4 SMs, 1000 cycles each, 100-cycle gaps between them on one SM.
    runner.collect_section("block_sched", tmp_path / "tr", CollectContext(log=lambda s: None))
    res = runner.run_section("block_sched", open_bundle(tmp_path / "tr"), tmp_path / "out", collected=True)
    assert res.data["bundle_kind"] == "dynamic" and not (tmp_path / "out" / "block_sched" / runner.RECORD).exists()
    rows = {r["key"]: r["value"] for r in res.summary}
    assert rows["raw.mean_running_cycles"] == 16 * 1000
    assert rows["raw.mean_scheduling_cycles"] == 15 * 100
    assert "No.block:64 Running:16000 Scheduling:1500(cycle)" in res.text


def test_a_failed_collection_script_names_its_stdout_when_stderr_is_empty(tmp_path):
    """Real H200 run: exposed_latency/main.py reports failed cells on stdout and exits 1 with an empty
    stderr; the notebook said "exited 1: (no output)" and named a log that had been deleted."""
    script = tmp_path / "collect.py"
    script.write_text("import sys\nprint('failed attn/block_sched: no launch that saved a trace')\nsys.exit(1)\n")
    collect = script_collector("toy", script)
    with pytest.raises(CollectError) as err:
        collect(tmp_path / "root", CollectContext())
    msg = str(err.value)
    assert "failed attn/block_sched: no launch that saved a trace" in msg and "(no output)" not in msg
    log = Path(msg.rsplit("(log: ", 1)[1].rstrip(")"))
    assert log.is_file() and "failed attn/block_sched" in log.read_text()
