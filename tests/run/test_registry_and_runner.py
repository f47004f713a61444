"""The section registry (discovery, order, names) and the section runner (input checks, caching),
with the six real sections and a seventh section folder made by the test."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from bundle_edit import reseal, undigested

from neutrino_ae.bundle import manifest as bundle
from neutrino_ae.errors import InputError
from neutrino_ae.report.results import SectionResult
from neutrino_ae.report.results.summary import SUMMARY_COLUMNS, format_number, summary_rows, summary_table
from neutrino_ae.report.section import NotebookStop, driver, registry
from neutrino_ae.run import runner

#: The paper's sections, by name: they must be there, first and in the paper's order; any folder added
#: later (tests/report/test_seventh_section.py adds one) follows them.
SIX = ("block_sched", "dmat", "kernel_overhead", "max_mem", "exposed_latency", "warp_sched")


def test_registry_finds_the_six_folders_in_the_papers_order():
    # The paper's six, in its order; a folder added beside them (a seventh figure) may follow.
    assert tuple(n for n in registry.names() if n in SIX) == SIX
    assert registry.names()[:len(SIX)] == SIX
    refs = {s.name: s.paper_ref for s in registry.sections()}
    assert refs["block_sched"] == "Sec. 4.5" and refs["kernel_overhead"] == "Table 2"
    assert "Fig. 1" in refs["dmat"] and refs["max_mem"] == "Fig. 11" and refs["exposed_latency"] == "Fig. 12"
    assert refs["warp_sched"].startswith("Fig. 13")
    for s in registry.sections():
        assert s.folder == registry.REPO_ROOT / s.name
        assert s.title and s.runtime and s.inputs and s.static_prose and s.dynamic_prose
        # On the driver (neutrino_ae/report/section/driver.py) a section names load, compute and figures; the
        # others their own analyze.
        own = ("load", "compute", "figures") if s.compute else ("analyze",)
        # A collector and a sample part are optional for a section (docs/DESIGN.md); the paper's have both.
        assert s.name not in SIX or (s.collect and s.sample), s.name
        for entry in (*own, *(e for e in ("collect", "sample") if getattr(s, e))):
            assert callable(s.entry(entry)), (s.name, entry)
        assert callable(driver.analyzer(s)) and callable(driver.command(s))


def test_parse_names_accepts_lists_strings_and_all():
    assert registry.parse_names(None) == list(registry.names()) and registry.parse_names(None)[:6] == list(SIX)
    assert registry.parse_names("all") == registry.parse_names(None)
    assert registry.parse_names(["warp_sched", "dmat", "dmat"]) == ["dmat", "warp_sched"]
    assert registry.parse_names("max_mem, block_sched") == ["block_sched", "max_mem"]
    assert registry.parse_names([]) == []
    with pytest.raises(InputError, match="unknown section 'fig13'.*valid sections: block_sched"):
        registry.parse_names(["fig13"])


def test_missing_input_names_the_path(tmp_path):
    (tmp_path / "dmat").mkdir()
    (tmp_path / "dmat" / "fig1.dmat").write_bytes(b"")
    with pytest.raises(InputError) as info:
        runner.run_section("dmat", tmp_path, tmp_path / "out")
    assert str(tmp_path / "dmat" / "fig10a.dmat") in str(info.value) and "Fig. 1" in str(info.value)
    assert not (tmp_path / "out").exists(), "nothing may be written before the inputs are complete"


def test_missing_glob_input_names_the_pattern(tmp_path):
    with pytest.raises(InputError, match=r"warp_sched/exclusive_sched/\*\*/result/\*\.bin: no file matches"):
        runner.run_section("warp_sched", tmp_path, tmp_path / "out")


def test_missing_bundle_root_is_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="bundle root is not a directory"):
        runner.run_section("dmat", tmp_path / "nope", tmp_path / "out")


# --------------------------------------------------------------------------------------------- a seventh section
# A seventh section, as a new contributor would add it: one folder with __init__.py, an analysis,
# its own sample model (parameters by scale, recorded in bundle.json) and its own collector. Nothing
# outside the folder (and this test) is edited: the package, the notebooks' builders, the sample
# generator and collection find it through the registry.
# Its order puts it after every other folder (a real one added beside the paper's, too): each
# section's sample data comes from the i-th child of the seed (sample/generate.py, section_seeds), so a
# folder added last leaves every other section's data as it was, which a test below checks.

TOY_INIT = '''
"""Fig. 97: a seventh section."""
from neutrino_ae.report.claims import Claim
from neutrino_ae.report.section import Section

SECTION = Section(name="seventh", title="Seventh result", paper_ref="Fig. 97", order=1000, runtime="instant",
                  inputs=("seventh/in.txt",), analyze="analysis:analyze", sample="sample:build",
                  collect="collect:collect",
                  static_prose="It doubles a number.", dynamic_prose="It collects one number.",
                  claims=(Claim("seventh-positive", "the doubled number is positive", "Fig. 97",
                                left="double", op=">", right=0),))
'''

TOY_ANALYSIS = '''
from pathlib import Path

import pandas as pd

from neutrino_ae.atomic import write_text
from neutrino_ae.formats.inputs import read_text_input
from neutrino_ae.report.results import SectionResult, write_results

CALLS = []


def analyze(bundle, out):
    root = bundle.root
    CALLS.append(Path(out))
    value = float((Path(root) / "seventh" / "in.txt").read_text())
    # An input nobody declared, read through the formats layer: the runner must still watch it.
    read_text_input(Path(root) / "seventh" / "extra" / "notes.txt", "notes", 1000)
    fig = Path(out) / "toy_plot.png"
    fig.write_bytes(b"\\x89PNG seventh")
    table = pd.DataFrame({"x": [1, 2], "y": [value, value * 2]})
    files = {"toy_plot.png": fig}
    files.update(write_results(out, "seventh", {"value": value}, input_path=Path(root) / "seventh" / "in.txt",
                               tables={"toy_table": table}))
    summary = [{"key": "double", "paper_ref": "", "value": 2 * value, "unit": "cycles", "ground_truth": 7.0}]
    return SectionResult("seventh", {"value": value}, files, {"toy_table": table}, summary, f"value={value}")

'''

TOY_SAMPLE = '''
"""The seventh's part of the sample bundle, from its own model: parameters by scale, its own random stream."""
from dataclasses import asdict, dataclass
from pathlib import Path

from neutrino_ae.atomic import write_text


@dataclass(frozen=True)
class ToyParams:
    value: float
    notes: int  # random digits written to extra/notes.txt


PARAMS = {"tiny": ToyParams(3.5, 2), "small": ToyParams(3.5, 20), "paper": ToyParams(3.5, 200)}


def build(root, ctx):
    params = PARAMS[ctx.scale]
    ctx.model["seventh"] = asdict(params)
    write_text(Path(root) / "seventh" / "in.txt", str(params.value))
    write_text(Path(root) / "seventh" / "extra" / "notes.txt", "".join(map(str, ctx.rng.integers(0, 10, params.notes))))
    return {"double": 2 * params.value}
'''

TOY_COLLECT = '''
"""How dynamic.ipynb collects the seventh: its 'workload' run with the collection's Python."""
import subprocess

from neutrino_ae.workloads.neutrino import staged


def collect(root, ctx):
    with staged(root / "seventh") as out:
        value = subprocess.run([ctx.python, "-c", "print(2.25)"], capture_output=True, text=True, check=True)
        (out / "in.txt").write_text(value.stdout.strip())
        (out / "extra").mkdir()
        (out / "extra" / "notes.txt").write_text("collected")
    ctx.log("  seventh: collected")
'''


@pytest.fixture
def seventh(tmp_path, monkeypatch):
    folder = tmp_path / "sections" / "seventh"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(TOY_INIT))
    (folder / "analysis.py").write_text(textwrap.dedent(TOY_ANALYSIS))
    (folder / "sample.py").write_text(textwrap.dedent(TOY_SAMPLE))
    (folder / "collect.py").write_text(textwrap.dedent(TOY_COLLECT))
    monkeypatch.setenv(registry.EXTRA_ROOTS_ENV, str(tmp_path / "sections"))
    root = tmp_path / "bundle"
    (root / "seventh" / "extra").mkdir(parents=True)
    (root / "seventh" / "in.txt").write_text("3.5")
    (root / "seventh" / "extra" / "notes.txt").write_text("v1")
    bundle.write_manifest(root, bundle.SAMPLE, ground_truth={})
    yield root
    import sys

    for name in [m for m in sys.modules if m == "seventh" or m.startswith("seventh.")]:
        del sys.modules[name]


def _calls() -> list[Path]:
    return registry.get("seventh").entry("analyze").__globals__["CALLS"]


def test_a_new_folder_is_a_section_without_editing_anything_else(seventh):
    assert registry.names()[:len(SIX)] == SIX and "seventh" in registry.names()[len(SIX):]
    s = registry.get("seventh")
    assert s.paper_ref == "Fig. 97" and s.folder.name == "seventh"
    for entry in ("analyze", "collect", "sample"):
        assert s.entry(entry).__module__.startswith("seventh."), entry


def test_second_run_reuses_the_cached_result(seventh, tmp_path):
    out = tmp_path / "results"
    first = runner.run_section("seventh", seventh, out)
    assert first.data["cached"] is False and _calls() == [out / "seventh"]
    assert (out / "seventh" / runner.RECORD).is_file()
    again = runner.run_section("seventh", seventh, out)
    assert len(_calls()) == 1, "a current cached result must not be recomputed"
    assert again.data["cached"] is True and again.data["value"] == 3.5 and again.data["bundle_kind"] == "sample"
    assert again.text == "value=3.5" and again.summary == first.summary
    assert again.figures == [out / "seventh" / "toy_plot.png"]
    pd.testing.assert_frame_equal(again.tables["toy_table"], first.tables["toy_table"], check_dtype=False)
    runner.run_section("seventh", seventh, out, force=True)
    assert len(_calls()) == 2, "force recomputes"


def test_changed_input_lost_output_or_edited_code_recomputes(seventh, tmp_path):
    undigested(seventh)  # a digested bundle whose input changed is refused (tests/bundle/test_bundle_trust.py)
    out = tmp_path / "results"
    runner.run_section("seventh", seventh, out)
    src = seventh / "seventh" / "in.txt"
    st = src.stat()
    src.write_text("7.25")  # same size as before is not needed: size, mtime and inode are all compared
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with the old mtime
    res = runner.run_section("seventh", seventh, out)
    assert len(_calls()) == 2 and res.data["value"] == 7.25 and res.data["cached"] is False

    (out / "seventh" / "toy_plot.png").unlink()
    runner.run_section("seventh", seventh, out)
    assert len(_calls()) == 3, "a result whose files are gone is incomplete"

    (out / "seventh" / runner.RECORD).write_text("{not json")
    runner.run_section("seventh", seventh, out)
    assert len(_calls()) == 4, "a damaged record is recomputed, not an error"

    code = registry.get("seventh").folder / "analysis.py"
    code.write_text(code.read_text() + "\n# edited\n")
    runner.run_section("seventh", seventh, out)
    assert len(_calls()) == 5, "an edited section folder invalidates the cache"

    notes = seventh / "seventh" / "extra" / "notes.txt"
    st = notes.stat()
    notes.write_text("v2")  # same size, mtime put back: only the inode or content check can see it
    os.utime(notes, ns=(st.st_atime_ns, st.st_mtime_ns))
    runner.run_section("seventh", seventh, out)
    runner.run_section("seventh", seventh, out)
    assert len(_calls()) == 6, "an undeclared file the analysis opened is part of the fingerprint"

    (out / "seventh" / "seventh.json").unlink()
    runner.run_section("seventh", seventh, out)
    assert len(_calls()) == 7, "deleting one output file recomputes"

    bundle.write_manifest(seventh, bundle.SAMPLE, ground_truth={"seventh": {"double": 8.0}})
    runner.run_section("seventh", seventh, out)
    assert len(_calls()) == 8, "a rewritten bundle.json (provenance, ground truth) recomputes"


def test_package_version_or_package_code_change_recomputes(seventh, tmp_path, monkeypatch):
    import neutrino_ae

    out = tmp_path / "results"
    runner.run_section("seventh", seventh, out)
    monkeypatch.setattr(neutrino_ae, "__version__", neutrino_ae.__version__ + ".post1")
    runner.run_section("seventh", seventh, out)
    assert len(_calls()) == 2, "a new package version invalidates the cache"

    # A stand-in for the package's own folder, so that the test edits no real file: the runner
    # fingerprints every .py under it (formats/, report/figures/style.py, sched/ ... alike).
    pkg = tmp_path / "pkg"
    (pkg / "formats").mkdir(parents=True)
    (pkg / "formats" / "eventlog.py").write_text("X = 1\n")
    monkeypatch.setattr(runner, "PACKAGE_DIR", pkg)
    runner.run_section("seventh", seventh, out)
    runner.run_section("seventh", seventh, out)
    assert len(_calls()) == 3
    (pkg / "formats" / "eventlog.py").write_text("X = 2\n")
    runner.run_section("seventh", seventh, out)
    assert len(_calls()) == 4, "edited package code (a reader the section uses) invalidates the cache"
    assert runner.PACKAGE_DIR.name == "pkg" and Path(neutrino_ae.__file__).resolve().parent.name == "neutrino_ae"


# A real section watches the probe.toml it read (the trace reader takes its levels from it): moved to
# tests/run/test_cache_sees_added_inputs.py, whose block_sched run on the tiny bundle it shares.


def test_failed_analysis_leaves_no_record(seventh, tmp_path):
    out = tmp_path / "results"
    runner.run_section("seventh", seventh, out)
    (seventh / "seventh" / "in.txt").write_text("not a number")
    reseal(seventh)
    with pytest.raises(ValueError):
        runner.run_section("seventh", seventh, out, force=True)
    assert not (out / "seventh" / runner.RECORD).exists()


def test_summary_rows_add_section_and_bundle_kind(seventh, tmp_path):
    res = runner.run_section("seventh", seventh, tmp_path / "results")
    other = SectionResult("dmat", {"bundle_kind": "paper"}, summary=[
        {"key": "pages", "paper_ref": "Fig. 1", "value": 12, "unit": "pages", "ground_truth": None}])
    rows = summary_rows({"seventh": res, "dmat": other})
    assert [r["section"] for r in rows] == ["dmat", "seventh"]  # registry order
    assert rows[0] == {"section": "dmat", "key": "pages", "paper_ref": "Fig. 1", "value": 12, "unit": "pages",
                       "bundle_kind": "paper", "ground_truth": None}
    assert rows[1]["bundle_kind"] == "sample" and rows[1]["ground_truth"] == 7.0
    assert rows[1]["paper_ref"] == "Fig. 97", "a row without a paper reference gets its section's"
    assert {r["bundle_kind"] for r in summary_rows([res, other], bundle_kind="x")} == {"x"}


def test_the_toy_section_is_in_both_notebooks_and_the_sample_bundle(tiny_bundle, seventh, tmp_path):
    import subprocess
    import sys

    from neutrino_ae.sample.generate import generate_bundle

    for builder in ("build_static_notebook.py", "build_dynamic_notebook.py"):
        env = {**os.environ, registry.EXTRA_ROOTS_ENV: os.environ[registry.EXTRA_ROOTS_ENV]}
        script = registry.REPO_ROOT / "tools" / builder
        code = (f"import runpy, sys; sys.argv = [{str(script)!r}]; sys.path.insert(0, {str(script.parent)!r}); "
                f"m = runpy.run_path({str(script)!r}, run_name='builder'); print(m['build']())")
        text = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
        assert 'nb.section(\\"seventh\\")' in text and "Seventh result" in text, builder
    # The sample bundle: the seventh's part, its ground truth and its own model parameters in bundle.json.
    root = generate_bundle(tmp_path / "gen", scale="tiny", seed=0, progress=False)
    manifest = bundle.read_manifest(root)
    assert manifest["ground_truth"]["seventh"] == {"double": 7.0} and (root / "seventh" / "in.txt").read_text() == "3.5"
    assert manifest["model"]["seventh"] == {"value": 3.5, "notes": 2}
    assert len((root / "seventh" / "extra" / "notes.txt").read_text()) == 2
    # ... and the six sections' parts exactly as without the seventh (tiny_bundle was generated before the
    # seventh folder existed): same files, same bytes, same ground truth and model parameters.
    six = bundle.read_manifest(tiny_bundle)
    assert {k: v for k, v in manifest["files"].items() if not k.startswith("seventh/")} == six["files"]
    assert {k for k in manifest["files"] if k.startswith("seventh/")} == {"seventh/in.txt", "seventh/extra/notes.txt"}
    assert {k: v for k, v in manifest["ground_truth"].items() if k != "seventh"} == six["ground_truth"]
    assert {k: v for k, v in manifest["model"].items() if k != "seventh"} == six["model"]
    assert runner.run_section("seventh", root, tmp_path / "res").data["value"] == 3.5


def test_the_toy_section_is_collected_by_the_dynamic_notebook(seventh, tmp_path, monkeypatch):
    import json

    from neutrino_ae.run.dynamic_notebook import DynamicNotebook

    # Collection is enabled where nvidia-smi lists a GPU and the neutrino CLI runs (stand-ins for both).
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nvidia-smi").write_text('#!/bin/sh\necho "NVIDIA A100-SXM4-40GB, 8.0, 535.104.05"\n')
    (bindir / "nvidia-smi").chmod(0o755)
    fake = registry.REPO_ROOT / "tests" / "fake_neutrino"
    monkeypatch.setenv("PATH", os.pathsep.join([str(bindir), str(fake), os.environ["PATH"]]))
    traces, out = tmp_path / "traces", tmp_path / "dyn"
    nb = DynamicNotebook(sections="seventh", output_dir=str(out), trace_root=str(traces))
    assert nb.blocker is None
    nb.section("seventh")
    nb.summary()
    assert (traces / "seventh" / "in.txt").read_text() == "2.25"
    assert "seventh" in bundle.read_manifest(traces)["sections"], "collection records the section in bundle.json"
    assert nb.results["seventh"].data["value"] == 2.25 and nb.results["seventh"].data["bundle_kind"] == "dynamic"
    summary = json.loads((out / "summary.json").read_text())
    assert [(r["section"], r["key"], r["value"], r["bundle_kind"]) for r in summary["results"]] == [
        ("seventh", "double", 4.5, "dynamic")]


def test_the_toy_section_is_in_the_summary_and_the_verdict_of_a_notebook_run(seventh, tmp_path):
    import json

    from neutrino_ae.run import lock
    from neutrino_ae.run.notebook import StaticNotebook

    out = tmp_path / "nb"
    try:
        nb = StaticNotebook(bundle="auto", trace_root=str(seventh), output_dir=str(out), workers=0)  # in this process
        assert "seventh" in nb.selected
        nb.section("seventh")
        nb.summary()
    except NotebookStop:
        pass  # the six real sections have no input in the seventh bundle: they fail, the seventh does not
    finally:
        lock.release_output_lock(out)
    summary = json.loads((out / "summary.json").read_text())
    assert [r for r in summary["results"] if r["section"] == "seventh"] == [
        {"section": "seventh", "key": "double", "paper_ref": "Fig. 97", "value": 7.0, "unit": "cycles",
         "bundle_kind": "sample", "ground_truth": 7.0}]
    verdict = json.loads((out / "verdict.json").read_text())
    toy_claims = [c for c in verdict["claims"] if c["section"] == "seventh"]
    assert [(c["claim"], c["status"], c["obtained"]) for c in toy_claims] == [("seventh-positive", "PASS", "7")]


def test_notebook_stop_renders_as_one_line():
    stop = NotebookStop('no bundle; use bundle="sample"')
    assert stop._render_traceback_() == ['NotebookStop: no bundle; use bundle="sample"']


def test_summary_table_formats_numbers_for_people():
    rows = [{"section": "block_sched", "key": "raw.mean_scheduling_cycles", "paper_ref": "Sec. 4.5",
             "value": 6321.379, "unit": "cycles", "bundle_kind": "sample", "ground_truth": 6502.5},
            {"section": "kernel_overhead", "key": "k.extra_registers", "paper_ref": "Table 2", "value": 3.0,
             "unit": "registers", "bundle_kind": "paper", "ground_truth": None},
            {"section": "max_mem", "key": "m.ratio", "paper_ref": "Fig. 11", "value": 0.0541234, "unit": None,
             "bundle_kind": "paper", "ground_truth": None}]
    df = summary_table(rows)
    assert list(df.columns) == list(SUMMARY_COLUMNS)
    assert df["value"].tolist() == ["6,321.4", "3", "0.05412"]
    assert df["ground_truth"].tolist() == ["6,502.5", "", ""]
    assert "ground_truth" not in summary_table(rows, ground_truth=False).columns
    assert format_number(None) == "" and format_number(float("nan")) == ""
    assert format_number(805306368.0) == "805,306,368"
