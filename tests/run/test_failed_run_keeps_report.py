"""A failed run never replaces a good report (issue 37 item 3, issue 36 "stale after failure").

The test run's one good run of every section (conftest ``sample_run``) is copied for each test, or read
through the runs made once from it (tests/run/conftest.py: ``typo_run``, ``partial_run``); each failed
run is made through ``neutrino-ae run`` in a subprocess and the good run's executed notebook, summary
and verdict are compared byte for byte. The failed run's notebook goes beside them as
``static.failed.ipynb`` and ``make report``'s converter refuses it. A partial run (one section) merges
the summary as it merges the verdict, and only for sections whose results are still there.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from shared_runs import GOOD_SET, PARTIAL_SECTION, run_cli

from neutrino_ae.report.section import registry
from neutrino_ae.run.publish import FAILED_KEY
from tests.reliability.faultkit import cli_env, copy_run, digests

SET = GOOD_SET
_run = run_cli
FAILED = "static.failed.ipynb"


@pytest.fixture
def out(sample_run, tmp_path) -> Path:
    """A copy of the test run's good run of every section (conftest ``sample_run``), for one test to change."""
    assert all((sample_run.out / n).is_file() for n in SET)
    return copy_run(sample_run.out, tmp_path / "out")


@pytest.fixture
def traces(sample_run) -> Path:
    """The bundle the good run read (read only: runs write under ``--output-dir``)."""
    return sample_run.traces


def _check_failed_run(out: Path, before: dict, failed: subprocess.CompletedProcess[str], code: int, said: str) -> None:
    assert failed.returncode == code, failed.stdout + failed.stderr
    err = failed.stderr.strip().splitlines()
    assert len(err) == 1 and said in err[0] and f"failed run's notebook: {out / FAILED}" in err[0], err
    assert digests(out, SET) == before
    nb = nbformat.read(out / FAILED, as_version=4)
    assert said in nb.metadata[FAILED_KEY]
    assert nb.cells[0].source.startswith("# RUN FAILED")
    assert not list(out.glob("*.failed.json")), "set up failed before any summary or verdict was written"


def _report(notebook: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neutrino_ae.run.report", str(notebook), "--pdf", "never"],
                          cwd=notebook.parent, env=cli_env(), capture_output=True, text=True, timeout=300)


def test_a_typo_in_sections_leaves_the_good_report_byte_identical(typo_run, sample_run):
    """The test run's one refused run (``--sections nope``, conftest ``typo_run``): was 2.8 MB -> 25 KB notebook."""
    assert all((sample_run.out / n).is_file() for n in SET)
    _check_failed_run(typo_run.out, typo_run.before, typo_run.proc, 2, "unknown section 'nope'")


@pytest.mark.parametrize(("args", "code", "said"), [
    # a set-up error in the kernel (a type error such as `-p force yes` is refused before the run: run/parameters.py)
    (("-p", "bundle", "mine"), 2, "bundle must be \"auto\""),  # was beside the PASS verdict
    # bundle "auto" with nothing under the trace root and the download failing: was the verdict deleted
    (("-p", "bundle", "auto", "-p", "bundle_url", "http://127.0.0.1:9/trace.zip"), 4, "could not be fetched"),
], ids=["setup-error", "offline-auto"])
def test_a_failed_run_leaves_the_good_report_byte_identical(out, traces, tmp_path, args, code, said):
    before = digests(out, SET)
    trace_root = tmp_path / "empty" if "auto" in args else traces
    trace_root.mkdir(exist_ok=True)
    _check_failed_run(out, before, _run(out, trace_root, *args), code, said)


def test_make_report_refuses_a_failed_run_and_says_the_good_one_is_older(typo_run, tmp_path):
    # The shared refused run (``--sections nope``, conftest ``typo_run``), copied: the converter writes beside it.
    assert typo_run.proc.returncode == 2
    out = copy_run(typo_run.out, tmp_path / "out")
    refused = _report(out / FAILED)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.startswith(f"error: {out / FAILED}: the notebook of a failed run (static.ipynb: cell")
    assert not (out / "static.failed.html").exists() and not (out / "static.html").exists()
    # The good run's report is still made, with a loud line that the latest run failed.
    made = _report(out / "static.executed.ipynb")
    assert made.returncode == 0, made.stdout + made.stderr
    assert f"WARNING: the latest run FAILED (its notebook: {out / FAILED})" in made.stderr
    assert (out / "static.html").is_file()


def test_summary_and_verdict_always_cover_the_same_runs(sample_run, typo_run, partial_run, tmp_path):
    # The good run of every section (conftest ``sample_run``), a failed run into it first (``typo_run``), then
    # a good run of one section (``partial_run``: PARTIAL_SECTION, the cheapest; any section shows the merge).
    one = PARTIAL_SECTION
    good_summary = json.loads((sample_run.out / "summary.json").read_text())
    good_verdict = json.loads((sample_run.out / "verdict.json").read_text())
    assert typo_run.proc.returncode == 2 and (typo_run.out / FAILED).is_file()  # a failed run first: then a good one

    # A partial run merges the summary as it merges the verdict: all six sections in both, from two runs.
    merged, out = partial_run.proc, partial_run.out
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert not (out / FAILED).exists(), "a run that finished removes the failed run's notebook"
    summary = json.loads((out / "summary.json").read_text())
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["merged"] and summary["merged"] and not verdict["partial"]
    assert len(verdict["claims"]) == len(good_verdict["claims"]) == sum(len(s.claims) for s in registry.sections())
    assert len(verdict["claims"]) >= 40  # the paper sections' claims at least
    assert len(summary["results"]) == len(good_summary["results"])  # was dmat's 72 only (then the section run)
    assert {r["section"] for r in summary["results"]} == {c["section"] for c in verdict["claims"]}
    assert summary["sections"] == verdict["sections"]
    assert summary["runs"] == verdict["runs"] and set(verdict["runs"]) == {good_verdict["run_id"], verdict["run_id"]}
    not_one = [r for r in good_summary["results"] if r["section"] != one]
    assert [r for r in summary["results"] if r["section"] != one] == not_one

    # Five sections' results deleted (in a copy): a run of the one section judges it only, not 40 claims over
    # results now gone.
    out = copy_run(partial_run.out, tmp_path / "out")
    gone = [s for s in good_verdict["sections"] if s != one]
    for name in gone:  # as a user removes them: `rm -r out/<section>` (a link to the published set's folder)
        subprocess.run(["rm", "-r", str(out / name)], check=True)
    alone = _run(out, partial_run.traces, "--sections", one)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    summary = json.loads((out / "summary.json").read_text())
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["partial"] and not verdict["merged"] and verdict["missing_sections"] == gone
    assert {c["section"] for c in verdict["claims"]} == {one} == {r["section"] for r in summary["results"]}
    assert summary["sections"] == verdict["sections"] == [one]
    assert f"partial: covers {one}; not judged: " + ", ".join(gone) in " ".join(alone.stdout.split())  # may wrap
