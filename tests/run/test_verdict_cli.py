"""neutrino-ae run: a claim that does not hold makes the run exit 1 (``--report-only`` reports it
and exits 0), and the executed notebook opens with the verdict."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from bundle_edit import reseal
from shared_runs import PARTIAL_SECTION, static_in_process

from neutrino_ae import cli
from neutrino_ae.report.section import registry
from neutrino_ae.run import papermill as papermill_run
from tests.reliability.faultkit import copy_run

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def broken(tiny_bundle, tmp_path_factory) -> Path:
    """A sample bundle in which Neutrino's exposed latency is above Nsight Compute's for attention."""
    root = Path(shutil.copytree(tiny_bundle, tmp_path_factory.mktemp("broken") / "traces"))
    csv = root / "exposed_latency" / "attn.csv"
    df = pd.read_csv(csv)
    df["ncu"] = df["original"] * 1.01  # Nsight Compute barely above the original: Neutrino is slower
    df.to_csv(csv, index=False)
    return reseal(root)


@pytest.fixture(scope="module")
def no_dispatch_gap(tiny_bundle, tmp_path_factory) -> Path:
    """A sample bundle whose Sec. 4.5 main trace has no dispatch gap: the memset variant's trace
    (the driver fills the tensor, no block waits for a free slot) stands in for torch.zeros."""
    root = Path(shutil.copytree(tiny_bundle, tmp_path_factory.mktemp("nogap") / "traces"))
    (main,) = [p for p in (root / "block_sched").iterdir() if p.is_dir() and p.name not in ("variants", "timing")]
    (memset,) = [p for p in (root / "block_sched" / "variants" / "memset").iterdir() if p.is_dir()]
    shutil.rmtree(main)
    shutil.copytree(memset, main)
    return reseal(root)


def _run(root: Path, out: Path, *extra: str, sections: str = "exposed_latency") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neutrino_ae", "run", "static", "-p", "bundle", "auto",
                           "-p", "trace_root", str(root), "--sections", sections, "--output-dir", str(out),
                           *extra], capture_output=True, text=True, cwd=REPO, timeout=300, check=False)


_STATUSES = ("PASS", "DIFFERS", "SKIPPED")


def _table(stdout: str) -> list[tuple[str, str, str]]:
    """The verdict table the run ends with: (section heading, claim, status) per row, verdict first on each."""
    lines = stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.split()[:4] == ["verdict", "claim", "expected", "obtained"])
    rows, heading = [], ""
    for ln in lines[start + 2:]:
        if not ln.strip():
            break
        first = ln.split()[0]
        if first in _STATUSES:
            rows.append((heading, ln.split()[1], first))
        else:
            heading = ln
    return rows


def _table_rows(stdout: str) -> dict[str, str]:
    """The verdict table the run ends with: section/claim -> status."""
    return {f"{heading.split(':')[0]}/{claim}": status for heading, claim, status in _table(stdout)}


def test_a_claim_that_does_not_hold_fails_the_run(broken, tmp_path, monkeypatch, capsys):
    proc = _run(broken, tmp_path / "out")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "verdict: DIFFERS" in proc.stdout and "DIFFERS exposed_latency/below-ncu" in proc.stdout
    # The run ends with the verdict table: every claim of the selected sections, with its status.
    declared = {f"exposed_latency/{c.id}" for c in registry.get("exposed_latency").claims}
    rows = _table_rows(proc.stdout)
    assert set(rows) == declared and rows["exposed_latency/below-ncu"] == "DIFFERS"
    assert proc.stdout.rstrip().splitlines()[-1].startswith("verdict: DIFFERS")
    verdict = json.loads((tmp_path / "out" / "verdict.json").read_text())
    (claim,) = [c for c in verdict["claims"] if c["claim"] == "below-ncu"]
    assert claim["status"] == "DIFFERS" and "attn." in claim["reason"]
    nb = nbformat.read(tmp_path / "out" / "static.executed.ipynb", as_version=4)
    # Right under the notebook's title, the claim that did not pass named there (issue 25).
    assert nb.cells[0].id == "intro" and nb.cells[0].source.startswith("# Neutrino")
    top = nb.cells[1]
    assert top.cell_type == "markdown" and top.source.startswith("## Verdict: DIFFERS · SYNTHETIC sample data\n")
    assert "Claims that did not pass" in top.source and "below Nsight Compute" in top.source

    # --report-only reports it and exits 0. The command line reads the flag (``cli.main`` in this process,
    # its own verdict step); the notebook is not run again: run_notebook stands for the run above (whose
    # notebook does not read the flag) and returns the executed notebook it left.
    capsys.readouterr()
    monkeypatch.setattr(papermill_run, "run_notebook", lambda nb, out, *a, **k: Path(out) / "static.executed.ipynb")
    argv = ["run", "static", "-p", "bundle", "auto", "-p", "trace_root", str(broken), "--sections", "exposed_latency",
            "--output-dir", str(tmp_path / "out")]
    assert cli.main([*argv, "--report-only"]) == 0
    assert "verdict: DIFFERS" in capsys.readouterr().out
    assert cli.main(argv) == 1  # the same verdict without the flag: as the real run above


def test_no_dispatch_gap_fails_the_scheduling_cost_claims(no_dispatch_gap, tmp_path, monkeypatch, capsys):
    # A variation of the test above (a claim that does not hold: exit 1, the table), there through the public
    # command: here the notebook's calls and the command line's verdict step in this process.
    code, stdout = static_in_process(monkeypatch, capsys, no_dispatch_gap, tmp_path / "out", "block_sched")
    assert code == 1, stdout
    rows = _table_rows(stdout)
    assert set(rows) == {f"block_sched/{c.id}" for c in registry.get("block_sched").claims}
    assert rows["block_sched/visible-cost"] == "DIFFERS" and rows["block_sched/memset-fix"] == "DIFFERS"
    verdict = json.loads((tmp_path / "out" / "verdict.json").read_text())
    assert verdict["overall"] == "DIFFERS"


def test_a_dynamic_run_that_collected_nothing_exits_0_with_allow_skip(tmp_path):
    """No earlier traces and collect=False: the verdict says NOTHING COLLECTED; --allow-skip accepts that
    (exit 0). Without it the run exits 1: tests/run/test_dynamic_notebook.py's shared no-GPU run."""
    proc = subprocess.run([sys.executable, "-m", "neutrino_ae", "run", "dynamic", "-p", "collect", "False",
                           "-p", "trace_root", str(tmp_path / "none"), "--sections", "max_mem",
                           "--output-dir", str(tmp_path / "out"), "--allow-skip"],
                          capture_output=True, text=True, cwd=REPO, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verdict = json.loads((tmp_path / "out" / "verdict.json").read_text())
    assert verdict["overall"] == "NOTHING COLLECTED" and verdict["source"] == "collection off (collect=False)"
    assert verdict["claims"] and all(c["status"] == "SKIPPED" and c["reason"] for c in verdict["claims"])


# ------------------------------------------------------------------ a verdict belongs to its run (issue 22 item 3)


def _verdict(out: Path) -> dict:
    return json.loads((out / "verdict.json").read_text())


def _table_runs(stdout: str) -> dict[str, str]:
    """The printed verdict: section/claim -> the run that judged it, named in its section's heading when the
    verdict holds claims of several runs, else by the header's ``run:`` line."""
    (run,) = [ln.split()[1] for ln in stdout.splitlines() if ln.startswith("run: ")]
    return {f"{heading.split(':')[0]}/{claim}": (heading.split("; run ")[1].split()[0] if "; run " in heading else run)
            for heading, claim, _ in _table(stdout)}


def test_a_partial_run_merges_into_the_verdict_of_the_same_bundle(sample_run, typo_run, partial_run, tiny_bundle,
                                                                  tmp_path, monkeypatch, capsys):
    # The full run: the test session's run of every section on the sample bundle (conftest sample_run).
    full = sample_run.proc
    assert full.returncode == 0, full.stdout + full.stderr
    first = _verdict(sample_run.out)
    assert (first["partial"], first["merged"], first["sections"]) == (False, False, list(registry.names()))
    digest = first["bundle"]["digest"]
    assert digest and all(c["run_id"] == first["run_id"] and c["bundle_digest"] == digest for c in first["claims"])
    assert set(_table_runs(full.stdout).values()) == {first["run_id"]} and digest in full.stdout

    # A run of one section into a copy of its results, on the same bundle (tests/run/conftest.py partial_run,
    # after a refused run, typo_run, that leaves the verdict as it was): PARTIAL_SECTION, the cheapest one.
    one = PARTIAL_SECTION
    assert typo_run.proc.returncode == 2 and _verdict(typo_run.out) == first
    part, out = partial_run.proc, partial_run.out
    assert part.returncode == 0, part.stdout + part.stderr
    merged = _verdict(out)
    assert merged["merged"] is True and merged["partial"] is False and merged["run_id"] != first["run_id"]
    ident = lambda doc: [(c["section"], c["claim"]) for c in doc["claims"]]  # noqa: E731
    assert ident(merged) == ident(first)
    for claim in merged["claims"]:
        run = merged["run_id"] if claim["section"] == one else first["run_id"]
        assert (claim["run_id"], claim["bundle_digest"]) == (run, digest), claim
    assert set(merged["runs"]) == {first["run_id"], merged["run_id"]}
    assert merged["runs"][merged["run_id"]]["sections"] == [one]
    assert merged["counts"] == first["counts"] and merged["overall"] == "PASS"
    assert set(merged["trace_dirs"]) == set(first["trace_dirs"])
    printed = _table_runs(part.stdout)
    assert len(printed) == len(merged["claims"]), "the printed table is the whole merged verdict"
    assert {claim.split("/")[0]: run for claim, run in printed.items()} == {
        s: merged["run_id"] if s == one else first["run_id"] for s in registry.names()}
    assert f"merged: this run's sections ({one}) replace theirs" in part.stdout

    # Another bundle (another digest): nothing of the earlier verdict is kept; the verdict says it is partial.
    out = copy_run(partial_run.out, tmp_path / "out")
    # (A variation of the partial run above, there through the public command: here the notebook's calls and
    # the command line's verdict step in this process. tests/run/test_failed_run_keeps_report.py's
    # partial run is a process.)
    # the session's tiny bundle: another scale than sample_run's small one (only read: the run writes in out)
    code, stdout = static_in_process(monkeypatch, capsys, tiny_bundle, out, one)
    assert code == 0, stdout
    partial = _verdict(out)
    assert (partial["partial"], partial["merged"], partial["sections"]) == (True, False, [one])
    assert partial["missing_sections"] == [s for s in registry.names() if s != one]
    assert partial["bundle"]["digest"] != digest and set(partial["runs"]) == {partial["run_id"]}
    assert {c["section"] for c in partial["claims"]} == {one}
    assert all(c["run_id"] == partial["run_id"] for c in partial["claims"])
    assert f"partial: covers {one}; not judged: " in stdout


def test_a_failed_run_leaves_no_verdict_that_looks_current(tiny_bundle, tmp_path, monkeypatch, capsys):
    root = Path(shutil.copytree(tiny_bundle, tmp_path / "traces"))
    out, sections = tmp_path / "out", "exposed_latency,kernel_overhead"
    # The good run before: its verdict made in this process, by the notebook's own calls (the public command's
    # good runs: the test session's sample_run). -p workers 0 below: no worker processes to start (they
    # compute sections ahead: tests/run/test_notebook_facade.py).
    code, stdout = static_in_process(monkeypatch, capsys, root, out, sections)
    assert code == 0, stdout
    before = _verdict(out)
    good_bytes = (out / "verdict.json").read_bytes()
    assert before["overall"] == "PASS"

    # A section input that cannot be read (the bundle's maker wrote it so): the section fails mid-run,
    # the other one runs, and the failed run's verdict says so, beside the earlier PASS (issue 37: a
    # failed run never replaces a good report), never in its place.
    csv = root / "exposed_latency" / "gmm.csv"
    df = pd.read_csv(csv)
    df["original"] = df["original"].astype(object)
    df.loc[0, "original"] = "n/a"
    df.to_csv(csv, index=False)
    reseal(root)
    failed = _run(root, out, "-p", "workers", "0", sections=sections)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert (out / "verdict.json").read_bytes() == good_bytes
    after = json.loads((out / "verdict.failed.json").read_text())
    assert json.loads((out / "summary.failed.json").read_text())["run_id"] == after["run_id"]
    assert after["run_id"] != before["run_id"] and after["overall"] == "FAILED"
    assert set(after["failed_sections"]) == {"exposed_latency"}
    assert str(csv) in after["failed_sections"]["exposed_latency"]
    for claim in after["claims"]:
        assert claim["run_id"] == after["run_id"]
        if claim["section"] == "exposed_latency":
            assert claim["status"] == "SKIPPED" and claim["reason"].startswith("section failed"), claim

    # A run refused before any section ran (a file changed after the bundle was made): no verdict of its
    # own (the earlier failed run's is gone: it is not this run's), the good one still in place.
    (root / "kernel_overhead").joinpath("stray.txt").write_text("added by hand")
    refused = _run(root, out, "-p", "workers", "0", sections=sections)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "stray.txt: not listed in bundle.json" in refused.stderr
    assert not (out / "verdict.failed.json").exists() and not (out / "summary.failed.json").exists()
    assert (out / "verdict.json").read_bytes() == good_bytes
