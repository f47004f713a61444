"""Fig. 12 (exposed latency): ratios, shares, figures and CSV validation on hand-written CSVs."""

from __future__ import annotations

import json
from functools import partial

import pytest
from undrawn_analysis import leave_figures_undrawn

from exposed_latency.analysis import ratios
from exposed_latency.figures import draw_workload
from exposed_latency.inputs import read_workload_csv
from neutrino_ae.bundle import manifest as bundle
from neutrino_ae.errors import InputError
from neutrino_ae.report.command.script import run_main
from neutrino_ae.report.section import driver, registry

SECTION = registry.get("exposed_latency")
analyze = partial(driver.analyze_paths, SECTION)
main = partial(driver.main, SECTION)

HEADER = "probe,original,ncu,neutrino,prologue,kernel,epilogue\n"
# block_sched: parts add up to neutrino; dmat: epilogue-dominated; gmem_bytes: parts cover 75 %.
GEMM = HEADER + (
    "block_sched,2.0,50.0,2.5,0.1,2.0,0.4\n"
    "dmat,4.0,8.0,10.0,0.5,3.5,6.0\n"
    "gmem_bytes,1.0,3.0,2.0,0.0,1.0,0.5\n"
)


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_ratios_and_shares_by_hand(tmp_path):
    r = ratios(read_workload_csv(_write(tmp_path / "gemm.csv", GEMM))).set_index("probe")
    # block_sched: 50/2, 2.5/2; shares 0.1/2.5, 2.0/2.5, 0.4/2.5; heights share * 1.25
    assert r.at["block_sched", "ncu_ratio"] == pytest.approx(25.0)
    assert r.at["block_sched", "neutrino_ratio"] == pytest.approx(1.25)
    assert r.at["block_sched", "prologue_share"] == pytest.approx(0.04)
    assert r.at["block_sched", "kernel_share"] == pytest.approx(0.8)
    assert r.at["block_sched", "epilogue_share"] == pytest.approx(0.16)
    assert r.at["block_sched", "kernel_height"] == pytest.approx(1.0)
    assert r.at["block_sched", "epilogue_height"] == pytest.approx(0.2)
    assert r.at["block_sched", "prologue_height"] == pytest.approx(0.05)
    assert r.at["block_sched", "unattributed_height"] == pytest.approx(0.0)
    # dmat: 8/4, 10/4; heights 0.35*2.5, 0.6*2.5, 0.05*2.5
    assert r.at["dmat", "ncu_ratio"] == pytest.approx(2.0)
    assert r.at["dmat", "neutrino_ratio"] == pytest.approx(2.5)
    assert r.at["dmat", "kernel_height"] == pytest.approx(0.875)
    assert r.at["dmat", "epilogue_height"] == pytest.approx(1.5)
    assert r.at["dmat", "prologue_height"] == pytest.approx(0.125)
    assert r.at["dmat", "ncu_over_neutrino"] == pytest.approx(0.8)
    # gmem_bytes: parts 1.5 of 2.0 -> 25 % unattributed, drawn 0.25 * 2.0 high; stack tops at 2.0
    assert r.at["gmem_bytes", "unattributed_share"] == pytest.approx(0.25)
    assert r.at["gmem_bytes", "unattributed_height"] == pytest.approx(0.5)
    stack = sum(r.at["gmem_bytes", f"{p}_height"] for p in ("kernel", "epilogue", "prologue", "unattributed"))
    assert stack == pytest.approx(r.at["gmem_bytes", "neutrino_ratio"])


def test_figure_value_labels_like_the_paper(tmp_path):
    r = ratios(read_workload_csv(_write(tmp_path / "gemm.csv", GEMM)))
    fig = draw_workload("gemm", r, synthetic=False)
    labels = {t.get_text() for t in fig.axes[0].texts}
    assert {"25.00x", "2.00x", "3.00x", "1.25x", "2.50x"} <= labels


def test_axis_cut_when_ncu_dwarfs_neutrino(tmp_path):
    # ncu 25x vs. at most 2.5x for Neutrino: beyond 6x, so the axis is cut at 1.6 * 2.5 = 4
    r = ratios(read_workload_csv(_write(tmp_path / "gemm.csv", GEMM)))
    ax = draw_workload("gemm", r, synthetic=False).axes[0]
    assert ax.get_ylim()[1] == pytest.approx(4.0)
    ncu_heights = [p.get_height() for p in ax.containers[0]]
    assert ncu_heights == pytest.approx([4.0, 2.0, 3.0])     # only the 25x bar is clipped
    assert "axis cut" in ax.get_ylabel()
    # no cut when ratios are comparable: the tallest bar plus 18 % headroom
    mild = ratios(read_workload_csv(_write(tmp_path / "attn.csv", HEADER + "p,1,3,2,0.1,1.5,0.4\n")))
    ax = draw_workload("attn", mild, synthetic=False).axes[0]
    assert ax.get_ylim()[1] == pytest.approx(3.0 * 1.18)
    assert [p.get_height() for p in ax.containers[0]] == pytest.approx([3.0])


def test_analyze_writes_figures_tables_and_lists_missing(tmp_path):
    src = tmp_path / "exposed_latency"
    _write(src / "gemm.csv", GEMM)
    _write(src / "attn.csv", HEADER + "block_sched,1.0,10.0,1.1,0.0,1.0,0.1\n")
    out = tmp_path / "out"
    res = analyze([src], out)
    assert [i["workload"] for i in res.data["inputs"]] == ["attn", "gemm"]  # paper order
    assert sorted(m.split(": ")[0].rsplit("/", 1)[-1] for m in res.data["missing"]) == ["conv.csv", "gmm.csv"]
    for stem in ("exposed_latency", "exposed_latency_attn", "exposed_latency_gemm"):
        assert (out / f"{stem}.png").stat().st_size > 0
        assert (out / f"{stem}.svg").stat().st_size > 0
    assert res.files["figure"] == out / "exposed_latency.png"
    doc = json.loads((out / "exposed_latency.json").read_text())
    assert doc["bundle_kind"] == "unknown" and doc["synthetic"] is None  # no bundle.json: provenance unknown
    row = [x for x in doc["rows"] if x["workload"] == "attn"][0]
    assert row["ncu_ratio"] == pytest.approx(10.0) and row["neutrino_ratio"] == pytest.approx(1.1)
    assert (out / "exposed_latency.csv").read_text().startswith("workload,probe,original,ncu,neutrino")
    keys = {s["key"]: s["value"] for s in res.summary}
    assert keys["gemm.dmat.neutrino_ratio"] == pytest.approx(2.5)
    assert "conv.csv" in res.text


def test_sample_bundle_marks_synthetic_and_reports_truth(tmp_path, monkeypatch):
    leave_figures_undrawn(monkeypatch)  # provenance and truth are read, not the figures
    src = tmp_path / "b" / "exposed_latency"
    _write(src / "gemm.csv", GEMM)
    bundle.write_manifest(tmp_path / "b", "sample", ground_truth={
        "exposed_latency": {"gemm": {"ncu_over_original": {"dmat": 2.0}, "neutrino_over_original": {"dmat": 2.4}}}})
    res = analyze([src / "gemm.csv"], tmp_path / "out")
    assert res.data["synthetic"] is True and res.data["bundle_kind"] == "sample"
    doc = json.loads((tmp_path / "out" / "exposed_latency.json").read_text())
    assert doc["synthetic"] is True and doc["bundle_kind"] == "sample"
    truth = {s["key"]: s["ground_truth"] for s in res.summary}
    assert truth["gemm.dmat.neutrino_ratio"] == 2.4 and truth["gemm.dmat.ncu_ratio"] == 2.0
    assert truth["gemm.block_sched.ncu_ratio"] is None


@pytest.mark.parametrize("text, message", [
    (HEADER.replace("ncu,", "") + "block_sched,2.0,2.5,0.1,2.0,0.4\n", "missing column 'ncu'"),
    (GEMM.replace("0.5,3.5,6.0", "0.5,abc,6.0"), "column 'kernel' row 3 (probe dmat): 'abc' is not a number"),
    (GEMM.replace("2.0,50.0,2.5", "2.0,n/a,2.5"), "column 'ncu' row 2 (probe block_sched): 'n/a' is not a number"),
    (GEMM.replace("2.0,50.0,2.5", "2.0,50.0,"), "column 'neutrino' row 2 (probe block_sched): empty value"),
    (GEMM.replace("1.0,3.0,2.0", "0,3.0,2.0"), "column 'original' row 4 (probe gmem_bytes): 0.0 is not positive"),
    (HEADER, "no data rows"),
    ("", "empty CSV"),
])
def test_bad_csv_rejected_with_one_clear_line(tmp_path, text, message):
    path = _write(tmp_path / "gemm.csv", text)
    with pytest.raises(InputError) as err:
        read_workload_csv(path)
    assert str(err.value).startswith(f"{path}: {message}")
    assert "\n" not in str(err.value)


def test_missing_ncu_measurement_is_not_an_error(tmp_path, monkeypatch):
    # The dynamic collector leaves ncu empty when Nsight Compute is not installed.
    path = _write(tmp_path / "src" / "gemm.csv", GEMM.replace("2.0,50.0,2.5", "2.0,,2.5"))
    r = ratios(read_workload_csv(path)).set_index("probe")
    assert r["ncu_ratio"].isna().tolist() == [True, False, False]
    assert r.at["block_sched", "neutrino_ratio"] == pytest.approx(1.25)
    fig = draw_workload("gemm", r.reset_index(), synthetic=False)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert "n/a" in labels and "1.25x" in labels and "nanx" not in labels
    with monkeypatch.context() as m:  # the figure was read above; here the numbers and text
        leave_figures_undrawn(m)
        res = analyze([path], tmp_path / "out")
    values = {s["key"]: s["value"] for s in res.summary}
    assert values["gemm.dmat.ncu_ratio"] == pytest.approx(2.0)
    assert values["gemm.block_sched.ncu_ratio"] is None  # not measured (summary_row: no NaN in a result row)
    assert "n/a" in res.text


def test_cli_error_exit_code_and_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NEUTRINO_AE_NO_FORK", "1")  # drawn here, not in a fork that imports matplotlib anew
    bad = _write(tmp_path / "bad" / "conv.csv", HEADER.replace(",epilogue", "") + "x,1,1,1,0,1\n")
    assert run_main(main, [str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    has = "probe, original, ncu, neutrino, prologue, kernel"
    assert err.strip() == f"error: {bad}: missing column 'epilogue' (has: {has})"
    good = _write(tmp_path / "good" / "gemm.csv", GEMM)
    assert run_main(main, [str(good), "--out", str(tmp_path / "o"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["files"]["figure"].endswith("exposed_latency.png")
    assert len(doc["rows"]) == 3


@pytest.mark.parametrize("body, match", [
    ("probe,original,ncu,neutrino,prologue,kernel,epilogue\nblock_sched,1,2,3,0.5,1.5,1\nblock_sched,1,2,3,0.5,1.5,1\n",
     r"probe 'block_sched' is in rows 2 and 3: one row per probe"),
    ("probe,original,ncu,neutrino,prologue,kernel,epilogue\nblock_sched,1,2,3,0.5,0,1\n",
     r"column 'kernel' row 2 \(probe block_sched\): 0 is not positive"),
    ("probe,original,ncu,neutrino,prologue,kernel,epilogue\nblock_sched,0,2,3,0.5,1,1\n",
     r"column 'original' row 2 .* is not positive"),
])
def test_impossible_rows_are_refused_before_anything_is_written(tmp_path, body, match):
    good = tmp_path / "in" / "attn.csv"
    good.parent.mkdir()
    good.write_text("probe,original,ncu,neutrino,prologue,kernel,epilogue\nblock_sched,1,2,3,0.5,1.5,1\n")
    (tmp_path / "in" / "gmm.csv").write_text(body)
    with pytest.raises(InputError, match=match) as info:
        analyze([tmp_path / "in"], tmp_path / "out")
    assert str(tmp_path / "in" / "gmm.csv") in str(info.value)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir()), "validate first, write after"
