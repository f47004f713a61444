"""The sections registry: order, input checks, result caching and summary rows."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pandas as pd
import pytest

from neutrino_ae import sections
from neutrino_ae.bundle import manifest as bundle
from neutrino_ae.errors import InputError
from neutrino_ae.report.results import SectionResult, write_results


def test_registry_keeps_the_original_notebook_order_and_references():
    assert sections.NAMES == ("block_sched", "dmat", "kernel_overhead", "max_mem", "exposed_latency", "warp_sched")
    refs = {s.name: s.paper_ref for s in sections.SECTIONS}
    assert refs["block_sched"] == "Sec. 4.5"
    assert "Fig. 1" in refs["dmat"] and "10" in refs["dmat"]
    assert refs["kernel_overhead"] == "Table 2"
    assert refs["max_mem"] == "Fig. 11"
    assert refs["exposed_latency"] == "Fig. 12"
    assert refs["warp_sched"].startswith("Fig. 13")
    for s in sections.SECTIONS:
        assert s.title and s.runtime and s.inputs and s.module.startswith(f"{s.name}.")


def test_parse_names_accepts_lists_strings_and_all():
    assert sections.parse_names(None) == list(sections.NAMES)
    assert sections.parse_names("all") == list(sections.NAMES)
    # registry order wins over the order given, duplicates vanish
    assert sections.parse_names(["warp_sched", "dmat", "dmat"]) == ["dmat", "warp_sched"]
    assert sections.parse_names("max_mem, block_sched") == ["block_sched", "max_mem"]
    assert sections.parse_names([]) == []
    with pytest.raises(InputError, match="unknown section 'fig13'.*valid sections: block_sched"):
        sections.parse_names(["fig13"])


def test_missing_input_names_the_path(tmp_path):
    (tmp_path / "dmat").mkdir()
    (tmp_path / "dmat" / "fig1.dmat").write_bytes(b"")
    with pytest.raises(InputError) as info:
        sections.run_section("dmat", tmp_path, tmp_path / "out")
    assert str(tmp_path / "dmat" / "fig10a.dmat") in str(info.value)
    assert "Fig. 1" in str(info.value)
    assert not (tmp_path / "out").exists(), "nothing may be written before the inputs are complete"


def test_missing_glob_input_names_the_pattern(tmp_path):
    with pytest.raises(InputError, match=r"warp_sched/exclusive_sched/\*\*/result/\*\.bin: no file matches"):
        sections.run_section("warp_sched", tmp_path, tmp_path / "out")


def test_missing_bundle_root_is_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="bundle root is not a directory"):
        sections.run_section("dmat", tmp_path / "nope", tmp_path / "out")


# --------------------------------------------------------------------------------------------- caching
# A stand-in analysis: real files, real tables, a call counter, so caching is tested without the
# (slower) real analyses.

CALLS: list[Path] = []


def _fake_analysis(mod, root: Path, out: Path) -> SectionResult:
    CALLS.append(out)
    value = float((root / "fake" / "in.txt").read_text())
    fig = out / "fake_plot.png"
    fig.write_bytes(b"\x89PNG fake")
    table = pd.DataFrame({"x": [1, 2], "y": [value, value * 2]})
    files = {"fake_plot.png": fig}
    files.update(write_results(out, "fake", {"value": value}, input_path=root / "fake" / "in.txt",
                               tables={"fake_table": table}))
    summary = [{"key": "value", "paper_ref": "", "value": value, "unit": "cycles", "ground_truth": 3.0}]
    return SectionResult("fake", {"value": value}, files, {"fake_table": table}, summary, f"value={value}")


@pytest.fixture
def fake_section(tmp_path, monkeypatch):
    root = tmp_path / "bundle"
    (root / "fake").mkdir(parents=True)
    (root / "fake" / "in.txt").write_text("3.5")
    bundle.write_manifest(root, bundle.SAMPLE, ground_truth={})
    spec = sections.Section(name="fake", title="Fake", paper_ref="Fig. 99", runtime="instant",
                            inputs=("fake/in.txt",), module="json", call=_fake_analysis)
    monkeypatch.setitem(sections._BY_NAME, "fake", spec)
    CALLS.clear()
    return root


def test_second_run_reuses_the_cached_result(fake_section, tmp_path):
    out = tmp_path / "results"
    first = sections.run_section("fake", fake_section, out)
    assert first.data["cached"] is False and len(CALLS) == 1
    assert CALLS[0] == out / "fake"
    assert (out / "fake" / sections.RECORD).is_file()

    again = sections.run_section("fake", fake_section, out)
    assert len(CALLS) == 1, "a current cached result must not be recomputed"
    assert again.data["cached"] is True
    assert again.data["value"] == 3.5 and again.data["bundle_kind"] == "sample"
    assert again.text == "value=3.5"
    assert again.summary == first.summary
    assert again.figures == [out / "fake" / "fake_plot.png"]
    pd.testing.assert_frame_equal(again.tables["fake_table"], first.tables["fake_table"], check_dtype=False)

    sections.run_section("fake", fake_section, out, force=True)
    assert len(CALLS) == 2, "force recomputes"


def test_changed_input_or_lost_output_recomputes(fake_section, tmp_path):
    out = tmp_path / "results"
    sections.run_section("fake", fake_section, out)
    src = fake_section / "fake" / "in.txt"
    src.write_text("7.25")
    st = src.stat()
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    res = sections.run_section("fake", fake_section, out)
    assert len(CALLS) == 2 and res.data["value"] == 7.25 and res.data["cached"] is False

    (out / "fake" / "fake_plot.png").unlink()
    sections.run_section("fake", fake_section, out)
    assert len(CALLS) == 3, "a result whose files are gone is incomplete"

    (out / "fake" / sections.RECORD).write_text("{not json")
    sections.run_section("fake", fake_section, out)
    assert len(CALLS) == 4, "a damaged record is recomputed, not an error"


def test_edited_analysis_recomputes(fake_section, tmp_path, monkeypatch):
    out = tmp_path / "results"
    code = tmp_path / "pkg" / "fakemod.py"
    code.parent.mkdir()
    code.write_text("# v1\n")
    monkeypatch.setattr(sections, "REPO_ROOT", tmp_path)
    spec = dataclasses.replace(sections._BY_NAME["fake"], module="pkg.fakemod")
    monkeypatch.setitem(sections._BY_NAME, "fake", spec)
    monkeypatch.setattr(sections, "_import", lambda module: None)
    sections.run_section("fake", fake_section, out)
    sections.run_section("fake", fake_section, out)
    assert len(CALLS) == 1
    code.write_text("# version 2\n")
    sections.run_section("fake", fake_section, out)
    assert len(CALLS) == 2, "a changed analysis source invalidates the cache"


def test_failed_analysis_leaves_no_record(fake_section, tmp_path, monkeypatch):
    out = tmp_path / "results"
    sections.run_section("fake", fake_section, out)

    def boom(mod, root, out_dir):
        raise InputError(root, "broken on purpose")

    spec = dataclasses.replace(sections._BY_NAME["fake"], call=boom)
    monkeypatch.setitem(sections._BY_NAME, "fake", spec)
    with pytest.raises(InputError, match="broken on purpose"):
        sections.run_section("fake", fake_section, out, force=True)
    assert not (out / "fake" / sections.RECORD).exists()


def test_summary_rows_add_section_and_bundle_kind(fake_section, tmp_path):
    res = sections.run_section("fake", fake_section, tmp_path / "results")
    other = SectionResult("dmat", {"bundle_kind": "paper"}, summary=[
        {"key": "pages", "paper_ref": "Fig. 1", "value": 12, "unit": "pages", "ground_truth": None}])
    rows = sections.summary_rows({"fake": res, "dmat": other})
    # registry sections first, in registry order; unknown sections after
    assert [r["section"] for r in rows] == ["dmat", "fake"]
    assert rows[0] == {"section": "dmat", "key": "pages", "paper_ref": "Fig. 1", "value": 12, "unit": "pages",
                       "bundle_kind": "paper", "ground_truth": None}
    assert rows[1]["bundle_kind"] == "sample" and rows[1]["ground_truth"] == 3.0
    assert {r["bundle_kind"] for r in sections.summary_rows([res, other], bundle_kind="x")} == {"x"}
    # a row without a paper reference gets the registry's
    bare = SectionResult("max_mem", {}, summary=[{"key": "k", "value": 1.0}])
    assert sections.summary_rows([bare])[0]["paper_ref"] == "Fig. 11"


def test_notebook_stop_renders_as_one_line():
    stop = sections.NotebookStop('no bundle; use bundle="sample"')
    assert stop._render_traceback_() == ['NotebookStop: no bundle; use bundle="sample"']


def test_summary_table_formats_numbers_for_people():
    rows = [{"section": "block_sched", "key": "raw.mean_scheduling_cycles", "paper_ref": "Sec. 4.5",
             "value": 6321.379, "unit": "cycles", "bundle_kind": "sample", "ground_truth": 6502.5},
            {"section": "kernel_overhead", "key": "k.extra_registers", "paper_ref": "Table 2", "value": 3.0,
             "unit": "registers", "bundle_kind": "paper", "ground_truth": None},
            {"section": "max_mem", "key": "m.ratio", "paper_ref": "Fig. 11", "value": 0.0541234, "unit": None,
             "bundle_kind": "paper", "ground_truth": None}]
    df = sections.summary_table(rows)
    assert list(df.columns) == list(sections.SUMMARY_COLUMNS)
    assert df["value"].tolist() == ["6,321.4", "3", "0.05412"]
    assert df["ground_truth"].tolist() == ["6,502.5", "", ""]
    assert df["unit"].tolist() == ["cycles", "registers", ""]
    assert "ground_truth" not in sections.summary_table(rows, ground_truth=False).columns
    assert sections.format_number(None) == "" and sections.format_number(float("nan")) == ""
    assert sections.format_number(805306368.0) == "805,306,368"
