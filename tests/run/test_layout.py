"""One layout on disk for every entry point.

* The sample bundle and the paper's bundle have different default folders (``traces/sample/``,
  ``traces/paper/``): `make run` (sample) and then ``-p bundle paper`` both work, in any order.
* Results: ``results/static/`` from Jupyter, ``neutrino-ae run`` and ``make run`` alike; the per-figure
  command lines write under ``results/cli/<section>/`` and refuse a notebook's section folder; a
  notebook's cache never vouches for an output file rewritten after its run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from paper_site import serve_paper_zip
from script_here import script_here

from neutrino_ae.bundle.manifest import read_manifest
from neutrino_ae.cli import build_parser, default_output_dir
from neutrino_ae.report.section import registry
from neutrino_ae.run import lock, runner
from neutrino_ae.run.notebook import STATIC_RESULTS, StaticNotebook, default_trace_root
from neutrino_ae.run.papermill import package_repo_root

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def paper_url(tiny_bundle, tmp_path):
    """A local server offering a trace.zip with the paper's layout (two sections of the tiny bundle)."""
    with serve_paper_zip(tiny_bundle, tmp_path / "site") as (url, _sha256, _size):
        yield url


def _notebook(**kwargs) -> StaticNotebook:
    try:
        return StaticNotebook(**kwargs)
    finally:
        lock.release_output_lock(Path(kwargs.get("output_dir", STATIC_RESULTS)))


def test_sample_then_paper_with_default_folders(paper_url, small_bundle, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the repository root, as for `make run` and Jupyter
    # The sample bundle `make run` made there before (the default one, scale small, seed 0: reused, not generated
    # again; the test run's copy of it, conftest ``small_bundle``).
    shutil.copytree(small_bundle, tmp_path / "traces" / "sample")
    sample = _notebook(bundle="sample", sections="exposed_latency")  # what `make run` does
    assert sample.bundle_root.resolve() == (tmp_path / "traces" / "sample").resolve()
    assert sample.out_root == Path("results/static/") and sample.kind == "sample"

    # The README's next command: `neutrino-ae run static -p bundle paper`. It used to stop with
    # "traces/ holds a sample bundle ... pass force" (an option the notebook does not have).
    paper = _notebook(bundle="paper", bundle_url=paper_url, sections="exposed_latency")
    assert paper.bundle_root.resolve() == (tmp_path / "traces" / "paper").resolve() and paper.kind == "paper"
    assert paper.run("exposed_latency") is not None
    assert read_manifest(tmp_path / "traces" / "sample")["kind"] == "sample", "the sample bundle is left alone"

    # ... and back, in any order; "auto" picks the paper's folder (never the synthetic one by itself).
    assert _notebook(bundle="sample", sections="dmat").kind == "sample"
    assert _notebook(bundle="auto", sections="dmat").kind == "paper"
    assert "force" not in capsys.readouterr().err


def test_default_folders_are_the_same_for_the_cli():
    parser = build_parser()
    assert Path(parser.parse_args(["sample"]).out) == Path(default_trace_root("sample")) == Path("traces/sample")
    assert Path(parser.parse_args(["fetch"]).trace_root) == Path(default_trace_root("paper")) == Path("traces/paper")
    assert default_trace_root("auto") == default_trace_root("paper")
    # neutrino-ae run static writes where the notebook's own default points (the kernel runs in the repo root).
    assert default_output_dir("static") == package_repo_root() / STATIC_RESULTS
    assert default_output_dir("static") == REPO / "results" / "static"


def test_per_figure_scripts_write_under_results_cli_and_never_into_a_notebooks_folder(tiny_bundle, tmp_path,
                                                                                      monkeypatch):
    out = tmp_path / "nb"
    res = runner.run_section("max_mem", tiny_bundle, out)
    assert res.data["cached"] is False
    record = out / "max_mem" / runner.RECORD
    before = {p: p.read_bytes() for p in (out / "max_mem").iterdir()}

    # Default: its own tree, relative to where it is run.
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    assert script_here(REPO / "max_mem/max_mem.py", [tiny_bundle / "max_mem"]).returncode == 0
    assert (cwd / "results" / "cli" / "max_mem" / "max_mem.png").is_file()
    assert sorted(p.name for p in cwd.iterdir()) == ["results"]

    # Pointed at the notebook's section folder: refused with one line, nothing written.
    refused = script_here(REPO / "max_mem/max_mem.py", [tiny_bundle / "max_mem", "--out", out / "max_mem"])
    assert refused.returncode == 2 and "holds a notebook's cached results" in refused.stderr
    assert {p: p.read_bytes() for p in (out / "max_mem").iterdir()} == before
    assert runner.run_section("max_mem", tiny_bundle, out).data["cached"] is True

    # Rewritten behind the cache's back (any other tool): the notebook recomputes, never "reused".
    png = out / "max_mem" / "max_mem.png"
    png.write_bytes(b"not the figure this run drew")
    assert runner.run_section("max_mem", tiny_bundle, out).data["cached"] is False
    assert png.read_bytes().startswith(b"\x89PNG") and record.is_file()


#: The paper sections' scripts: each must still be there (a folder added later brings its own, found below).
PAPER_SCRIPTS = ["block_sched/block_sched.py", "dmat/dmat.py", "kernel_overhead/kernel_overhead.py",
                 "kernel_overhead/cutlass_op/overhead.py", "max_mem/max_mem.py", "exposed_latency/exposed_latency.py",
                 "warp_sched/fig13a.py", "warp_sched/fig13b.py", "warp_sched/fig13cd.py", "warp_sched/warp_sched.py"]


def folder_scripts() -> list[str]:
    """Every section folder's artifact-compatible scripts (a file that runs the driver or a folder entry as
    ``__main__``), read from the registry: a seventh folder's are checked with no edit here."""
    found = []
    for section in registry.sections():
        for path in sorted(section.folder.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            if "__main__" in text and ("run_script(__file__" in text or "run_folder_script(__file__" in text):
                found.append(path.relative_to(section.folder.parent).as_posix())
    return found


def test_every_per_figure_script_defaults_to_results_cli(monkeypatch):
    scripts = folder_scripts()
    assert set(PAPER_SCRIPTS) <= set(scripts)
    assert {s.split("/")[0] for s in scripts} == set(registry.names())  # every section has one
    monkeypatch.setenv("COLUMNS", "300")
    for script in scripts:
        proc = script_here(REPO / script, ["--help"])
        assert proc.returncode == 0, script
        section = script.split("/")[0]
        assert f"(default: results/cli/{section})" in " ".join(proc.stdout.split()), script


def test_paper_into_the_samples_folder_names_no_option_that_does_not_exist(tiny_bundle, tmp_path, paper_url):
    from neutrino_ae.report.section import NotebookStop

    root = tmp_path / "traces"
    shutil.copytree(tiny_bundle, root)
    with pytest.raises(NotebookStop) as info:
        _notebook(bundle="paper", trace_root=str(root), bundle_url=paper_url, output_dir=str(tmp_path / "out"))
    message = str(info.value)
    assert "holds a sample bundle" in message and "traces/paper/" in message
    assert "pass force" not in message and "force" not in message, "the notebook has no way to pass force"
    assert read_manifest(root)["kind"] == "sample"
