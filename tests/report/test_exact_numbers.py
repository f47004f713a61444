"""Counts stay integers from the analysis to every results file, table and ``compare`` line, and
``compare`` compares and prints integers exactly (issue 23, item 10); ``compare`` never loads a
summary too large for memory (item 6). Everything through the public command line: as a process where the
process is what is checked (a real run's results compared, the memory limit), else its ``main(argv)`` in this
process (:func:`_main`), the code ``python -m neutrino_ae`` runs."""

from __future__ import annotations

import csv
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from neutrino_ae.report.results.summary import SCHEMA

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _cli(*argv: str, preexec_fn=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neutrino_ae", *argv], capture_output=True, text=True, cwd=REPO,
                          env=ENV, timeout=600, check=False, preexec_fn=preexec_fn)


def _main(capsys, *argv: str) -> subprocess.CompletedProcess[str]:
    """``neutrino-ae <argv>`` as ``python -m neutrino_ae`` runs it (``neutrino_ae.cli.main``), in this process."""
    from neutrino_ae.cli import main

    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's --help and usage errors
        code = exc.code if isinstance(exc.code, int) else 2
    out = capsys.readouterr()
    return subprocess.CompletedProcess(["neutrino-ae", *argv], code, out.out, out.err)


def _summary(path: Path, rows: list[tuple[str, str]]) -> Path:
    """A summary.json written as text, so the numbers reach compare exactly as typed."""
    body = ", ".join(f'{{"section": "s", "key": "{k}", "value": {v}, "unit": "count"}}' for k, v in rows)
    path.write_text(f'{{"schema": "{SCHEMA}", "bundle_kind": "sample", "results": [{body}]}}\n')
    return path


# ----------------------------------------------------------------------------------------- a real run


@pytest.fixture(scope="module")
def run_out(sample_run) -> Path:
    """The results of the test session's run of ``neutrino-ae run static`` on the sample bundle (conftest
    ``sample_run``, every section); read only."""
    assert sample_run.proc.returncode == 0, sample_run.proc.stderr[-3000:]
    return sample_run.out


COUNT_KEYS = (".pages", ".accesses", ".max_clock", ".first_clock", ".last_clock", ".extra_registers",
              ".probe_mem_max", ".workload_max", ".max_warp_slots", ".makespan_cycles",
              ".max_resident_blocks_per_sm")


def test_counts_are_integers_in_summary_json(run_out):
    rows = json.loads((run_out / "summary.json").read_text())["results"]
    counts = [r for r in rows if r["key"].endswith(COUNT_KEYS)]
    assert len(counts) > 50
    floats = [(r["key"], r["value"]) for r in counts if not isinstance(r["value"], int)]
    assert floats == []
    truths = [(r["key"], r["ground_truth"]) for r in counts
              if r["ground_truth"] is not None and not isinstance(r["ground_truth"], int)]
    assert truths == []


def test_counts_are_integers_in_section_results(run_out):
    fig1 = json.loads((run_out / "dmat" / "dmat_fig1.json").read_text())["summary"]
    kinds = [type(r["value"]).__name__ for r in fig1 if r["key"].endswith((".pages", ".accesses", "_clock"))]
    assert len(kinds) >= 3 and set(kinds) == {"int"}, kinds
    with open(run_out / "kernel_overhead" / "kernel_overhead_long.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for col in ("pruned_regs", "probed_regs", "extra_regs", "launches"):
        cells = [r[col] for r in rows if r[col] != ""]
        assert cells and all(c.lstrip("-").isdigit() for c in cells), (col, cells[:5])
    md = (run_out / "summary.md").read_text()
    rows = json.loads((run_out / "summary.json").read_text())["results"]
    pages = next(r for r in rows if r["key"] == "fig1.pages")
    line = next(ln for ln in md.splitlines() if "| fig1.pages |" in ln)
    assert f"| {pages['value']:,} |" in line and f"{pages['value']}.0" not in line, line


def test_compare_of_two_runs_prints_integers(run_out, tmp_path):
    doc = json.loads((run_out / "summary.json").read_text())
    before = {}
    for r in doc["results"]:
        if r["key"].endswith(".pages"):
            before[r["key"]] = r["value"]
            r["value"] = r["value"] + 1
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps(doc))
    proc = _cli("compare", str(run_out), str(moved), "--rtol", "0")
    assert proc.returncode == 1, proc.stderr
    pages = [ln for ln in proc.stdout.splitlines() if ".pages" in ln]
    assert len(pages) == len(before) == 4, pages
    for ln in pages:
        value = before[ln.split()[0].split("/", 1)[1]]
        assert ln.split()[1:3] == [str(value), str(value + 1)], ln


# -------------------------------------------------------------------------------------------- compare


def test_compare_tells_integers_apart_exactly(tmp_path, capsys):
    a = _summary(tmp_path / "a.json", [("big", str(2**53 + 1)), ("same", str(2**64))])
    b = _summary(tmp_path / "b.json", [("big", str(2**53)), ("same", str(2**64))])
    proc = _main(capsys, "compare", str(a), str(b), "--rtol", "0", "--atol", "0")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("s/big"))
    assert line.split()[1:3] == [str(2**53 + 1), str(2**53)]
    assert "s/same" not in proc.stdout and "1 of 2 values moved" in proc.stdout


def test_compare_prints_large_integers_whole(tmp_path, capsys):
    a = _summary(tmp_path / "a.json", [("n", "123456789")])
    b = _summary(tmp_path / "b.json", [("n", "133456789")])
    proc = _main(capsys, "compare", str(a), str(b))
    assert proc.returncode == 0 and "none moved" in proc.stdout
    proc = _main(capsys, "compare", str(a), str(b), "--rtol", "0.01")
    assert proc.returncode == 1
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("s/n"))
    assert line.split()[1:3] == ["123456789", "133456789"] and "e+" not in line


def test_integer_tolerance_is_exact_at_the_edge(tmp_path, capsys):
    """|b - a| <= atol + rtol * max(|a|, |b|) decided without rounding: 10**17 + 10 vs 10**17 with
    atol 10 is within; with atol 9 it moved (as floats both values are the same number)."""
    a = _summary(tmp_path / "a.json", [("n", str(10**17 + 10))])
    b = _summary(tmp_path / "b.json", [("n", str(10**17))])
    assert _main(capsys, "compare", str(a), str(b), "--rtol", "0", "--atol", "10").returncode == 0
    assert _main(capsys, "compare", str(a), str(b), "--rtol", "0", "--atol", "9").returncode == 1


def test_integer_and_float_of_the_same_value_agree(tmp_path, capsys):
    a = _summary(tmp_path / "a.json", [("n", "33"), ("x", "0.5")])
    b = _summary(tmp_path / "b.json", [("n", "33.0"), ("x", "0.5")])
    proc = _main(capsys, "compare", str(a), str(b), "--rtol", "0", "--atol", "0")
    assert proc.returncode == 0, proc.stdout


# ------------------------------------------------------------------------------------ memory (item 6)

LIMIT = 600 * 2**20  # address space of the compare process


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _big_summary(path: Path, size: int) -> Path:
    """A valid summary.json of about ``size`` bytes, written in one go."""
    row = '{"section": "dmat", "key": "k%d", "paper_ref": null, "value": %d, "unit": "pages", "ground_truth": null}'
    n = size // (len(row) + 8)
    with open(path, "w") as fh:
        fh.write(f'{{"schema": "{SCHEMA}", "results": [\n')
        fh.write(",\n".join(row % (i, i) for i in range(n)))
        fh.write("]}\n")
    return path


def test_compare_of_a_summary_too_large_for_memory_is_one_line(tmp_path):
    small = _summary(tmp_path / "small.json", [("n", "1")])
    big = _big_summary(tmp_path / "big.json", 160 * 2**20)
    for args in ((str(small), str(big)), (str(big), str(small))):
        proc = _cli("compare", *args, preexec_fn=_limit_memory)
        assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {big}: "), lines
        assert "MiB" in lines[0]


def test_compare_help_states_the_size_limit(capsys):
    proc = _main(capsys, "compare", "--help")
    assert proc.returncode == 0 and "MiB" in proc.stdout
