"""Issue 36, the manifest trusted blindly: ``bundle.json`` is checked as a schema when it is read (kinds,
types, sizes, depth; one ``error:`` line naming the file and the field, exit 2), the folder layout's own
evidence of a sample wins over a manifest that says otherwise, and no file an analysis reads escapes the
integrity check (hidden folders included). Everything through the public commands: block_sched's script as
a process for one refused kind and for the accepted layouts, in this process (the script file
as ``__main__``, tests/script_here.py) for the other refused manifests."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from faultkit import REPO, cli_env, one_error_line, run_cli
from figures_preloaded import preload_figures
from paper_site import serve_folder
from script_here import script_here

BLOCK_SCHED = REPO / "block_sched" / "block_sched.py"


@pytest.fixture(scope="module", autouse=True)
def _figures_preloaded():
    """The scripts run in this process fork their figure process from it: it finds matplotlib loaded."""
    preload_figures()


def _copy(bundle: Path, dest: Path) -> Path:
    shutil.copytree(bundle, dest)
    return dest


def _edit(root: Path, change) -> Path:
    path = root / "bundle.json"
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return path


def _script(trace: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BLOCK_SCHED), str(trace), "--out", str(out)], cwd=out.parent,
                          env=cli_env(), text=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=300,
                          check=False)


def _script_here(trace: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return script_here(BLOCK_SCHED, [trace, "--out", out], cwd=out.parent)


def _trace(root: Path) -> Path:
    return next((root / "block_sched").glob("Jan_*"))


@pytest.mark.parametrize("kind", ["Sample", 5, None, ["sample"]])
def test_a_kind_that_is_none_of_the_kinds_is_refused_naming_the_field(tiny_bundle, tmp_path, kind):
    root = _copy(tiny_bundle, tmp_path / "traces")
    manifest = _edit(root, lambda doc: doc.update(kind=kind))
    run = _script if kind == "Sample" else _script_here  # the process once, its variations in this one
    line = one_error_line(run(_trace(root), tmp_path / "out"))
    assert line.startswith(f"error: {manifest}: field 'kind' ")
    assert "'paper', 'sample' or 'dynamic'" in line
    assert not (tmp_path / "out").exists()


def test_the_sample_layout_wins_over_a_manifest_that_says_paper(tiny_bundle, tmp_path):
    root = _copy(tiny_bundle, tmp_path / "traces")
    _edit(root, lambda doc: doc.update(kind="paper"))
    proc = _script(_trace(root), tmp_path / "out")
    assert proc.returncode == 0, proc.stderr[-3000:]
    prov = json.loads((tmp_path / "out" / "block_sched.json").read_text())["provenance"]
    assert (prov["bundle_kind"], prov["kind_from"], prov["synthetic"]) == ("sample", "layout", True)
    assert "bundle.json says kind 'paper'" in prov["warning"] and "block_sched/variants/memset" in prov["warning"]


@pytest.mark.parametrize(("change", "field"), [
    (lambda doc: doc.update(files="x"), "files"),
    (lambda doc: doc.update(files=["block_sched/timing/events.json"]), "files"),
    (lambda doc: doc["files"].update({"block_sched/timing/events.json": "0" * 64}),
     "files['block_sched/timing/events.json']"),
    (lambda doc: doc["files"]["block_sched/timing/events.json"].update(bytes="12"),
     "files['block_sched/timing/events.json'].bytes"),
    (lambda doc: doc["files"]["block_sched/timing/events.json"].update(sha256=5),
     "files['block_sched/timing/events.json'].sha256"),
    (lambda doc: doc["files"].update({"../../etc/passwd": {"sha256": "0" * 64, "bytes": 1}}),
     "files['../../etc/passwd']"),
    (lambda doc: doc.update(seed="0"), "seed"),
    (lambda doc: doc.update(ground_truth=[1]), "ground_truth"),
])
def test_a_field_of_the_wrong_type_is_refused_naming_it(tiny_bundle, tmp_path, change, field):
    root = _copy(tiny_bundle, tmp_path / "traces")
    manifest = _edit(root, change)
    line = one_error_line(_script_here(_trace(root), tmp_path / "out"))
    assert line.startswith(f"error: {manifest}: field {field} "), line


def test_files_that_are_not_an_object_do_not_switch_the_integrity_check_off(tiny_bundle, tmp_path):
    root = _copy(tiny_bundle, tmp_path / "traces")
    manifest = _edit(root, lambda doc: doc.update(files="x"))
    events = root / "block_sched" / "timing" / "events.json"
    events.write_text(events.read_text().replace("1", "2", 1))
    proc = run_cli(["run", "static", "-q", "--trace-root", str(root), "--output-dir", str(tmp_path / "out"),
                    "--sections", "block_sched"], tmp_path)
    line = one_error_line(proc)
    assert f"{manifest}: field files must be an object" in line, line


@pytest.mark.parametrize("hostile", ["9" * 5000, "[" * 200_000 + "]" * 200_000, "-" + "1" * 40, "1e999999"])
def test_a_hostile_number_or_nesting_is_one_error_line(tiny_bundle, tmp_path, hostile):
    root = _copy(tiny_bundle, tmp_path / "traces")
    manifest = root / "bundle.json"
    text = manifest.read_text().rstrip()
    manifest.write_text(text[:-1] + f', "extra": {hostile}}}')
    line = one_error_line(_script_here(_trace(root), tmp_path / "out"))
    assert line.startswith(f"error: {manifest}: "), line


def test_a_hidden_trace_folder_is_covered_by_the_integrity_check(tiny_bundle, tmp_path):
    root = _copy(tiny_bundle, tmp_path / "traces")
    hidden = root / "block_sched" / ".hidden_copy"
    shutil.copytree(_trace(root), hidden)
    proc = run_cli(["run", "static", "-q", "--trace-root", str(root), "--output-dir", str(tmp_path / "out"),
                    "--sections", "block_sched"], tmp_path)
    line = one_error_line(proc)
    assert f"{hidden}/" in line and "not listed in bundle.json" in line, line


def test_a_hidden_trace_folder_is_never_read_as_the_newest_trace(tiny_bundle, tmp_path):
    """A tree without digests (a dynamic one) is not checked; a hidden folder there is still not read."""
    root = _copy(tiny_bundle, tmp_path / "traces")
    _edit(root, lambda doc: doc.update(files={}))
    shutil.copytree(_trace(root), root / "block_sched" / ".hidden_copy")
    proc = run_cli(["run", "static", "-q", "--trace-root", str(root), "--output-dir", str(tmp_path / "out"),
                    "--sections", "block_sched"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"block_sched: {_trace(root).relative_to(root)}, " in " ".join(proc.stdout.split())  # lines wrap
    assert ".hidden_copy" not in proc.stdout + proc.stderr
    assert ".hidden_copy" not in (tmp_path / "out" / "block_sched" / "block_sched.json").read_text()


def test_a_fetched_archive_laid_out_as_the_sample_is_not_recorded_as_the_papers(tiny_bundle, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    with zipfile.ZipFile(site / "trace.zip", "w") as zf:
        for path in sorted(tiny_bundle.rglob("*")):
            rel = path.relative_to(tiny_bundle).as_posix()
            if path.is_file() and not rel.startswith("."):
                zf.write(path, rel if rel != "bundle.json" else "README.json")
    with serve_folder(site) as base:
        url = f"{base}/trace.zip"
        proc = run_cli(["fetch", "-q", "--url", url, "--trace-root", str(tmp_path / "traces")], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((tmp_path / "traces" / "bundle.json").read_text())
    assert doc["kind"] == "sample" and doc["url"] == url
    assert "sample" in proc.stderr and "block_sched/variants/memset" in proc.stderr
    out = _script(_trace(tmp_path / "traces"), tmp_path / "out")
    assert out.returncode == 0, out.stderr[-3000:]
    prov = json.loads((tmp_path / "out" / "block_sched.json").read_text())["provenance"]
    assert (prov["bundle_kind"], prov["synthetic"]) == ("sample", True)
