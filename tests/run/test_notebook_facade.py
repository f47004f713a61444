"""The notebook facade: parameters checked with one message each, one run per output folder, and
no summary of an earlier run survives a new one; a crashing section is named in the summary."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from undrawn_analysis import leave_figures_blank

from neutrino_ae.bundle.context import open_bundle
from neutrino_ae.report.section import NotebookStop, registry
from neutrino_ae.run import ahead, lock, runner
from neutrino_ae.run.dynamic_notebook import DynamicNotebook
from neutrino_ae.run.notebook import StaticNotebook
from tests.reliability.faultkit import copy_run


@pytest.fixture
def tiny(tiny_bundle):
    return tiny_bundle


@pytest.fixture
def out(tmp_path):
    yield tmp_path / "results"
    lock.release_output_lock(tmp_path / "results")


@pytest.mark.parametrize("params, message", [
    ({"sections": 5}, "sections must be a list of section names"),
    ({"sections": ","}, "sections names no section"),
    ({"sections": ["dmat", 3]}, "sections must be a list"),
    ({"sections": "fig13"}, "unknown section 'fig13'"),
    ({"force": "maybe"}, "force must be True or False, not str 'maybe'"),
    ({"seed": "zero"}, "seed must be a whole number from 0 to"),
    ({"seed": -1}, "seed must be a whole number from 0 to"),
    ({"seed": 2**63}, r"seed must be a whole number from 0 to 9223372036854775807 \(2\*\*63 - 1\)"),
    ({"sample_scale": "huge"}, 'sample_scale must be "small" or "paper"'),
    ({"bundle": "mine"}, 'bundle must be "auto", "paper", "sample" or the path of a trace.zip'),
    ({"output_dir": ""}, r"output_dir must be a path \(a non-empty string\)"),
    ({"workers": -1}, "workers must be a whole number from 0 to 64"),
    ({"workers": True}, "workers must be a whole number from 0 to 64"),
])
def test_bad_static_parameters_stop_with_one_message(tiny, out, params, message):
    kwargs = {"bundle": "auto", "trace_root": str(tiny), "output_dir": str(out), **params}
    with pytest.raises(NotebookStop, match=message) as info:
        StaticNotebook(**kwargs)
    assert "\n" not in str(info.value)


def test_output_inside_the_trace_root_is_refused(tiny):
    for where in (tiny, tiny / "results"):
        with pytest.raises(NotebookStop, match="is inside trace_root"):
            StaticNotebook(bundle="auto", trace_root=str(tiny), output_dir=str(where))


@pytest.mark.parametrize("params, message", [
    ({"repeats": 0}, "repeats must be a whole number from 1 to"),
    ({"timeout": "soon"}, "timeout must be a number of seconds above 0"),
    ({"collect": "yes"}, "collect must be True or False"),
    ({"collect_args": {"max_mem": "--models x"}}, "collect_args must be a map of section names to lists"),
])
def test_bad_dynamic_parameters_stop_with_one_message(tmp_path, params, message):
    with pytest.raises(NotebookStop, match=message):
        DynamicNotebook(output_dir=str(tmp_path / "o"), trace_root=str(tmp_path / "t"), **params)


def test_a_second_run_on_the_same_output_folder_is_refused(tiny, out):
    holder = subprocess.Popen([sys.executable, "-c", f"from neutrino_ae.run import lock; "
                               f"lock.hold_output_lock({str(out)!r}); print('held', flush=True); "
                               "import time; time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(NotebookStop, match=rf"in use by another run \(pid {holder.pid}\)"):
            StaticNotebook(bundle="auto", trace_root=str(tiny), output_dir=str(out), sections="dmat")
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    StaticNotebook(bundle="auto", trace_root=str(tiny), output_dir=str(out), sections="dmat")  # free again


def test_stale_summary_is_removed_and_a_crashing_section_is_named(tiny, out, monkeypatch):
    out.mkdir(parents=True)
    (out / "summary.json").write_text('{"results": []}')
    (out / "summary.md").write_text("old")
    # workers=0: both sections in this process, where the crash below is patched in (with workers, two
    # spawned workers would compute them first, only for max_mem's result to be thrown away)
    nb = StaticNotebook(bundle="auto", trace_root=str(tiny), output_dir=str(out), sections="dmat,max_mem",
                        workers=0)
    assert not (out / "summary.json").exists() and not (out / "summary.md").exists()

    def crash(*args, **kwargs):
        raise ZeroDivisionError("a bug in the analysis")

    from neutrino_ae.run import notebook as facade

    real = facade.run_section
    monkeypatch.setattr(facade, "run_section",
                        lambda name, *a, **k: crash() if name == "max_mem" else real(name, *a, **k))
    nb.section("max_mem")
    nb.section("dmat")
    assert "max_mem" not in nb.results and "dmat" in nb.results and "max_mem" in nb.failed
    with pytest.raises(NotebookStop, match="1 section\\(s\\) failed.*max_mem: ZeroDivisionError"):
        nb.summary()
    doc = json.loads((out / "summary.json").read_text())
    assert doc["failed_sections"] == {"max_mem": "ZeroDivisionError: a bug in the analysis"}
    assert {r["section"] for r in doc["results"]} == {"dmat"}


def test_sections_computed_ahead_in_workers_give_the_same_results(tiny, tmp_path, capsys, caplog, timeline_runs,
                                                                  monkeypatch):
    """workers=2 (the shared run of block_sched and warp_sched): the sections ran in two worker processes
    while the cells showed them; the log (not the notebook) reports them computed (not reused), and every
    summary value equals a one-at-a-time run's (workers=0, here)."""
    import logging

    import nbformat

    first = timeline_runs.first
    assert first.returncode == 0, first.stderr[-3000:]
    shown = "\n".join(str(o.get("text", "")) + json.dumps(o.get("data", {}))
                      for c in nbformat.read(timeline_runs.first_notebook, as_version=4).cells
                      for o in c.get("outputs", []))
    assert "in a worker process" not in shown and "computed in" not in shown
    log = (timeline_runs.out / "run.log").read_text(encoding="utf-8")
    first_log = log[:log.index("executed notebook:")]
    ahead_lines = [line for line in first_log.splitlines() if "neutrino_ae.run.notebook" in line]
    assert sum("in a worker process" in line for line in ahead_lines) == 2, ahead_lines
    assert not any("reused cached results" in line for line in ahead_lines)
    ahead_values = {(r["section"], r["key"]): r["value"]
                    for r in json.loads((timeline_runs.out / "summary.json").read_text())["results"]}

    caplog.set_level(logging.INFO, logger="neutrino_ae.run.notebook")
    leave_figures_blank(monkeypatch)  # summary values only: the figures left blank
    out = tmp_path / "w0"
    nb = StaticNotebook(bundle="auto", trace_root=str(tiny), output_dir=str(out),
                        sections="block_sched,warp_sched", workers=0)
    for name in nb.selected:
        nb.section(name)
    printed = capsys.readouterr().out
    assert "in a worker process" not in printed and "computed in" not in printed, printed
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "neutrino_ae.run.notebook")
    assert "in a worker process" not in logged and "reused cached results" not in logged, logged
    nb.summary()
    values = {(r["section"], r["key"]): r["value"] for r in json.loads((out / "summary.json").read_text())["results"]}
    lock.release_output_lock(out)
    assert values and values == ahead_values


def test_sections_with_current_caches_are_left_to_their_cells(sample_run, tmp_path, monkeypatch):
    """A worker is started only for a section whose cached results are not current: one whose output
    was rewritten since its run is sent, the others (read back by their cells) are not."""
    out = copy_run(sample_run.out, tmp_path / "out")
    bundle = open_bundle(sample_run.traces)
    names = list(registry.names())
    assert all(runner.is_cached(name, bundle, out) for name in names)
    submitted: list[str] = []

    class Pool:  # records what would run in a worker process; starts none
        def __init__(self, **kwargs):
            pass

        def submit(self, fn, name, *args):
            submitted.append(name)

        def shutdown(self, wait):
            pass

    monkeypatch.setattr(ahead, "ProcessPoolExecutor", Pool)
    monkeypatch.setattr(ahead.os, "cpu_count", lambda: 2)
    ahead.Ahead(names, bundle, out, force=False, workers=2)
    assert submitted == []
    # two outputs rewritten after their runs (a per-figure command pointed at the folder): both recomputed
    for name in ("dmat", "warp_sched"):
        table = next((out / name).glob("*.csv"))
        table.write_text(table.read_text() + "\n")
    assert [name for name in names if not runner.is_cached(name, bundle, out)] == ["dmat", "warp_sched"]
    ahead.Ahead(names, bundle, out, force=False, workers=2)
    assert submitted == ["dmat", "warp_sched"]
    submitted.clear()
    ahead.Ahead(names, bundle, out, force=True, workers=2)  # force: every section computed again
    assert submitted == names


def test_a_notebook_showing_cached_results_imports_no_matplotlib(sample_run, tmp_path):
    """The kernel of a rerun only reads results back and shows their PNGs: matplotlib (about a CPU-second
    to import) is for the processes that draw."""
    out = copy_run(sample_run.out, tmp_path / "out")
    code = ("import json, sys\n"
            "from neutrino_ae.run.notebook import StaticNotebook\n"
            "nb = StaticNotebook(bundle='auto', trace_root=sys.argv[1], output_dir=sys.argv[2], workers=0)\n"
            "for name in nb.selected:\n"
            "    nb.section(name)\n"
            "nb.summary()\n"
            "print(json.dumps({'matplotlib': 'matplotlib' in sys.modules, 'cached': sorted(\n"
            "    n for n, r in nb.results.items() if r.data['cached'])}), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(sample_run.traces), str(out)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shown = json.loads(proc.stderr.strip().splitlines()[-1])
    assert shown == {"matplotlib": False, "cached": sorted(registry.names())}
    assert "[figure] " in proc.stdout  # the figures were shown (outside a kernel, as their text/plain)
