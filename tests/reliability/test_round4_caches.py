"""Issue 47 family 4: caches trusted stamps. What a cache republishes is current by content, and the report
page of a run that is no longer the newest says so.

* a results file edited in place (same size, mtime put back) was reused as the section's current result;
* a trace edited the same way, in a bundle without ``bundle.json``, recomputed the section but reused its
  Perfetto timeline;
* after a good rerun ``static.html`` (``make report``) still showed the previous run, unmarked.

Through the public commands, on copies of the session's two timeline runs (conftest ``timeline_runs``:
block_sched and warp_sched on the tiny sample) and of the tiny bundle."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from faultkit import cli_env, copy_run

from neutrino_ae.formats.bintrace import open_trace

REPO = Path(__file__).resolve().parents[2]


def _run(out: Path, traces: Path, sections: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neutrino_ae", "-q", "run", "static", "--sections", sections,
                           "--trace-root", str(traces), "--output-dir", str(out), "--report-only"],
                          cwd=out.parent, env=cli_env(), capture_output=True, text=True, timeout=600, check=False)


def _edit_in_place(path: Path, offset: int | None = None, swap: int | None = None) -> None:
    """Change ``path`` keeping its size, then put its atime and mtime back: ``swap`` bytes at ``offset``
    exchanged with the ``swap`` bytes after them, or (no offset) the first digit of the text changed."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    if offset is None:
        at = next(i for i, b in enumerate(data) if chr(b).isdigit())
        data[at] = ord("7") if data[at] != ord("7") else ord("3")
    else:
        first, second = data[offset:offset + swap], data[offset + swap:offset + 2 * swap]
        assert first != second, "the two blocks are the same bytes: the swap would change nothing"
        data[offset:offset + 2 * swap] = second + first
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


@pytest.fixture(scope="module")
def rerun(timeline_runs, tmp_path_factory) -> SimpleNamespace:
    """A copy of the timeline runs' results with ``make report``'s page made, one of warp_sched's results
    files edited in place, then ``neutrino-ae run static --sections warp_sched`` again on the same bundle."""
    folder = tmp_path_factory.mktemp("round4-rerun")
    out = copy_run(timeline_runs.out, folder / "out")
    made = subprocess.run([sys.executable, "-m", "neutrino_ae.run.report", str(out / "static.executed.ipynb"),
                           "--pdf", "never"], cwd=folder, env=cli_env(), capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr[-2000:]
    csv = sorted((out / "warp_sched").glob("*.csv"))[0]
    original = csv.read_bytes()
    _edit_in_place(csv)
    log_before = (out / "run.log").read_text(encoding="utf-8")
    proc = _run(out, timeline_runs.traces, "warp_sched")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return SimpleNamespace(out=out, csv=csv, original=original, proc=proc,
                           log=(out / "run.log").read_text(encoding="utf-8")[len(log_before):])


def test_a_results_file_edited_in_place_is_not_reused(rerun):
    assert "warp_sched: computed in " in rerun.log and "warp_sched: reused cached results" not in rerun.log
    assert rerun.csv.read_bytes() == rerun.original


def test_the_report_of_an_earlier_run_is_marked_stale_after_a_rerun(rerun):
    page = (rerun.out / "static.html").read_text(encoding="utf-8")
    summary = json.loads((rerun.out / "summary.json").read_text(encoding="utf-8"))
    assert 'id="neutrino-ae-stale"' in page and "STALE REPORT: this page shows run " in page
    assert f"a later run ({summary['run_id']}) has written this folder since" in page
    # make report rebuilds it: the page of the newest run carries no mark
    made = subprocess.run([sys.executable, "-m", "neutrino_ae.run.report", str(rerun.out / "static.executed.ipynb"),
                           "--pdf", "never"], cwd=rerun.out, env=cli_env(), capture_output=True, text=True,
                          timeout=600)
    assert made.returncode == 0, made.stderr[-2000:]
    page = (rerun.out / "static.html").read_text(encoding="utf-8")
    assert "neutrino-ae-stale" not in page and f'content="{summary["run_id"]}"' in page


def test_a_trace_edited_in_place_re_exports_its_timeline(tiny_bundle, tmp_path):
    """A bundle without bundle.json (traces copied by hand): nothing but the files themselves says they changed."""
    traces, out = tmp_path / "traces", tmp_path / "out"
    shutil.copytree(tiny_bundle, traces)
    (traces / "bundle.json").unlink()
    first = _run(out, traces, "warp_sched")
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    log_before = (out / "run.log").read_text(encoding="utf-8")
    exported = f"warp_sched: Perfetto timeline of {traces}/warp_sched/exclusive_sched ->"  # no bundle.json: absolute
    assert exported in log_before
    trace = next((traces / "warp_sched" / "exclusive_sched" / "result").glob("*.bin"))
    sec = open_trace(trace).sections[0]
    _edit_in_place(trace, sec.offset, sec.units_per_block * sec.size)  # blocks 0 and 1 exchanged
    second = _run(out, traces, "warp_sched")
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    log = (out / "run.log").read_text(encoding="utf-8")[len(log_before):]
    assert "warp_sched: computed in " in log
    assert exported in log, log
    # the trace not edited keeps its export
    assert "Perfetto timeline of" not in log.replace(exported, ""), log


def test_a_bundle_rebuilt_with_the_same_digests_reuses_the_cached_results(tiny_bundle, tmp_path):
    """Issue 46 item 6: the same files made again (every mtime, ctime and inode new: a regenerated sample, a
    fresh extraction) are the same inputs. Was: every cached section recomputed."""
    traces, out = tmp_path / "traces", tmp_path / "out"
    shutil.copytree(tiny_bundle, traces)
    first = _run(out, traces, "kernel_overhead,max_mem")
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    log_before = (out / "run.log").read_text(encoding="utf-8")
    shutil.copytree(traces, tmp_path / "rebuilt")  # new files, same bytes (and the same bundle.json)
    shutil.rmtree(traces)
    (tmp_path / "rebuilt").rename(traces)
    second = _run(out, traces, "kernel_overhead,max_mem")
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    log = (out / "run.log").read_text(encoding="utf-8")[len(log_before):]
    for name in ("kernel_overhead", "max_mem"):
        assert f"{name}: reused cached results" in log and f"{name}: computed in" not in log, log
