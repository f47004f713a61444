"""The results cache is keyed on what the analysis read, not on a guess of its inputs (issue 23 item 11):
a file added where a reader looks -- here a block_sched variant saved as a trace folder directly under
``variants/<name>/``, a layout the reader accepts but the section's declared globs do not match --
makes the next run recompute, through the public command; an unchanged bundle stays cached.

A bundle whose ``bundle.json`` records digests refuses any added file outright (bundle/trust.py); the
cache matters for the trees that record none: traces copied by hand (no ``bundle.json``, as here) and
collected trees. So the sample bundle is used without its ``bundle.json``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from undrawn_analysis import leave_figures_blank

from neutrino_ae.run import runner

REPO = Path(__file__).resolve().parents[2]


def _keys(out: Path) -> list[str]:
    doc = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return [row["key"] for row in doc["results"]]


def _run_static(root: Path, out: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "neutrino_ae", "run", "static", "--sections", "block_sched",
                           "--trace-root", str(root), "--output-dir", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


def _bundle_without_digests(tiny_bundle: Path, tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    shutil.copytree(tiny_bundle, root)
    (root / "bundle.json").unlink()
    return root


def _add_variant_as_trace_dir(root: Path) -> None:
    """``variants/extra/`` is itself a trace folder (``variants/extra/result/*.bin``), not one level down."""
    memset = next(d for d in (root / "block_sched" / "variants" / "memset").iterdir() if d.is_dir())
    shutil.copytree(memset, root / "block_sched" / "variants" / "extra")


def test_a_variant_added_in_an_accepted_layout_is_not_hidden_by_the_cache(tiny_bundle: Path, tmp_path: Path,
                                                                          monkeypatch) -> None:
    root = _bundle_without_digests(tiny_bundle, tmp_path)
    out = tmp_path / "results"
    # the first run's analysis and cache record, as the command's notebook makes them (the function under it;
    # its figures left blank: none is read, and the public command's run below draws its own)
    with monkeypatch.context() as m:
        leave_figures_blank(m)
        before = [row["key"] for row in runner.run_section("block_sched", root, out).summary]
    assert not any(k.startswith("extra.") for k in before)
    _add_variant_as_trace_dir(root)
    _run_static(root, out)
    after = _keys(out)
    added = [k for k in after if k.startswith("extra.")]
    # every per-trace row the memset variant has (its timing row, memset.speedup, comes from timing/events.json)
    traced = [k for k in before if k.startswith("memset.") and k != "memset.speedup"]
    assert len(added) == len(traced) > 0, after
    data = json.loads((out / "block_sched" / "block_sched.json").read_text(encoding="utf-8"))
    assert any(d.endswith("block_sched/variants/extra") for d in data["trace_dirs"]), data["trace_dirs"]
    # recomputed, not reused (moved here from the in-process sequence of the test below, whose last step it was)
    log = (out / "run.log").read_text(encoding="utf-8")
    assert "block_sched: computed in " in log and "block_sched: reused cached results" not in log, log


def test_the_record_lists_what_was_read_and_stays_current_until_something_changes(tiny_bundle: Path,
                                                                                   tmp_path: Path,
                                                                                   monkeypatch) -> None:
    leave_figures_blank(monkeypatch)  # no figure is read; each one an empty file, which the record stamps
    root = _bundle_without_digests(tiny_bundle, tmp_path)
    out = tmp_path / "results"
    assert runner.run_section("block_sched", root, out).data["cached"] is False
    record = json.loads((out / "block_sched" / runner.RECORD).read_text(encoding="utf-8"))
    variants = str((root / "block_sched" / "variants").resolve())
    assert variants in record["listed"]  # the reader listed it to find the variants
    assert all(Path(p).is_relative_to(root.resolve()) for p in [*record["opened"], *record["listed"]])
    assert any(p.endswith(".bin") for p in record["opened"])
    assert runner.run_section("block_sched", root, out).data["cached"] is True
    # A file beside a result the reader opened (where it looks for results) counts as a change ...
    result_dir = next(Path(p) for p in record["listed"] if p.endswith("/result"))
    (result_dir / "1.5.bin").write_bytes((next(result_dir.glob("*.bin"))).read_bytes())
    assert runner.run_section("block_sched", root, out).data["cached"] is False
    (result_dir / "1.5.bin").unlink()
    assert runner.run_section("block_sched", root, out).data["cached"] is False
    assert runner.run_section("block_sched", root, out).data["cached"] is True
    # ... and so does a folder the reader would take as a variant: the test above, through the public command.
    # ... and so does the probe.toml a trace reader took its levels from (moved here from
    # tests/run/test_registry_and_runner.py, test_a_real_section_watches_the_probe_toml_it_read).
    probe = next((root / "block_sched").glob("*/probe.toml"))
    record_text = (out / "block_sched" / runner.RECORD).read_text()
    assert str(probe.resolve()) in record_text, "the trace reader noted the probe.toml it took levels from"
    probe.write_text(probe.read_text() + "\n# edited\n")
    assert runner.run_section("block_sched", root, out).data["cached"] is False
