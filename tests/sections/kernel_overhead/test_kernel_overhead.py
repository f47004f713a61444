"""Table 2 (kernel slowdown and extra registers) on hand-written event.log / process.log trees."""

from __future__ import annotations

import json
from functools import partial

import numpy as np
import pytest
from undrawn_analysis import leave_figures_undrawn

from neutrino_ae.bundle import manifest as bundle
from neutrino_ae.report.command.script import run_main
from neutrino_ae.report.section import driver, registry

SECTION = registry.get("kernel_overhead")
cli_main = partial(driver.main, SECTION)


def analyze(root, out):
    """The command line's analysis of one folder, figures drawn in this process."""
    return driver.analyze_paths(SECTION, [root], out)



def _launch(t: int, impact: float | None, rc: int = 0, failed: bool = False) -> str:
    lines = [f"[exec] {t} param 7f0000000000 7f0000100000",
             "[exec] grid 64 1 1 block 128 1 1 shared 0",
             "[exec] grid 64 warp 4 probe 16 total 4096"]
    if failed:
        lines.append("[exec] failed to launch probed kernel")
    if impact is not None:
        # original 1.0 ms, so kernel = impact ms; the parser reads impact from its own field
        lines.append(f"[benchmark] prologue 0.010000 kernel {impact:.6f} epilogue 0.020000 "
                     f"original 1.000000 impact {impact:.6f} {rc}")
    return "\n".join(lines) + "\n"


def _ptxas(pruned: int, probed: int) -> str:
    # The probe engine's order: the probed build is assembled (and logged) before the pruned one.
    return (f"ptxas -arch=sm_80 -m64 --verbose ./k/probed.ptx -o ./k/probed.bin\n"
            f"ptxas info    : Used {probed} registers, used 0 barriers, 400 bytes cmem[0]\n\n"
            f"ptxas -arch=sm_80 -m64 --verbose ./k/pruned.ptx -o ./k/pruned.bin\n"
            f"ptxas info    : Used {pruned} registers, used 0 barriers, 392 bytes cmem[0]\n\n")


def _run(root, group, kernel, probe, launches, regs=(40, 46), kernel_dirs=1):
    trace = root / group / kernel / probe / "trace"
    trace.mkdir(parents=True)
    (root / group / kernel / probe / "stdout.log").write_text("ok\n")
    text = "[pid] 4242\n[benchmark] ENABLED L2 Flush Size 41943040\n"
    text += "".join(_launch(1000 + i, *spec) if isinstance(spec, tuple) else _launch(1000 + i, spec)
                    for i, spec in enumerate(launches))
    (trace / "event.log").write_text(text)
    for k in range(kernel_dirs):
        kdir = trace / "kernel" / f"{k}_{'ab' * 20}"
        kdir.mkdir(parents=True)
        (kdir / "kernel.info").write_text(f"kern{k}\n3\n1\n1 16\n")
        if regs is not None:
            (kdir / "process.log").write_text(_ptxas(regs[0] + k, regs[1] + 3 * k))
    return trace


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "kernel_overhead"
    # odd count of good launches (1.2, 1.5, 1.1 -> median 1.2); launch 3 failed, launch 4 rc=1 (impact 9)
    _run(root, "cutlass_op", "gemm", "block_sched", [1.2, 1.5, 1.1, (None, 0, True), (9.0, 1)], regs=(40, 46))
    # even count (2, 3, 5, 4 -> median 3.5); two kernels: extras 6 and 6+2 -> table shows 8
    _run(root, "cutlass_op", "gemm", "dmat", [2.0, 3.0, 5.0, 4.0], regs=(40, 46), kernel_dirs=2)
    # process.log missing: slowdown still reported, registers listed as missing
    _run(root, "cutlass_op", "conv", "block_sched", [1.05, 1.07], regs=None)
    _run(root, "triton_op", "attn", "block_sched", [1.3], regs=(128, 130))
    return root


def test_table2_arithmetic(tree, tmp_path, monkeypatch):
    leave_figures_undrawn(monkeypatch)  # cells, tables, text and documents are read, not the heatmap
    res = analyze(tree, tmp_path / "out")
    cells = {(c["group"], c["kernel"], c["probe"]): c for c in res.data["cells"]}
    gemm_bs = cells[("cutlass_op", "gemm", "block_sched")]
    assert gemm_bs["slowdown"] == pytest.approx(1.2)
    assert gemm_bs["launches"] == 5 and gemm_bs["used"] == 3
    assert [(f["launch"], f["reason"]) for f in gemm_bs["failed"]] == [(3, "[exec] failed"), (4, "rc 1")]
    assert gemm_bs["extra_regs"] == 6
    assert gemm_bs["registers"][0]["pruned"] == 40 and gemm_bs["registers"][0]["probed"] == 46
    assert gemm_bs["registers"][0]["name"] == "kern0"

    gemm_dmat = cells[("cutlass_op", "gemm", "dmat")]
    assert gemm_dmat["slowdown"] == pytest.approx(3.5)
    assert [r["extra"] for r in gemm_dmat["registers"]] == [6, 8]
    assert gemm_dmat["extra_regs"] == 8
    assert gemm_dmat["failed"] == []

    conv = cells[("cutlass_op", "conv", "block_sched")]
    assert conv["slowdown"] == pytest.approx(1.06)
    assert conv["extra_regs"] is None
    assert any("process.log: missing" in p for p in conv["problems"])
    assert cells[("triton_op", "attn", "block_sched")]["extra_regs"] == 2

    wide = res.tables["kernel_overhead"]
    assert list(wide.columns) == ["group", "kernel", "block_sched slowdown", "block_sched +regs",
                                  "dmat slowdown", "dmat +regs", "notes"]
    assert list(wide["notes"]) == ["", "", ""]  # no negative +regs here
    assert list(zip(wide["group"], wide["kernel"], strict=True)) == [
        ("CUTLASS", "GEMM"), ("CUTLASS", "Conv2D"), ("Triton", "FlashAttn-2")]
    assert wide["dmat slowdown"].iloc[0] == pytest.approx(3.5)
    assert np.isnan(wide["dmat slowdown"].iloc[1]) and np.isnan(wide["block_sched +regs"].iloc[1])

    # pytorch_op absent, failures and the missing process.log all reported, not dropped
    problems = res.data["problems"]
    assert any("pytorch_op: missing" in p for p in problems)
    assert any("conv/block_sched/trace/kernel/0_" in p and "process.log" in p for p in problems)
    assert res.data["failed_launches"] == ["cutlass_op/gemm/block_sched launch 3 ([exec] failed)",
                                           "cutlass_op/gemm/block_sched launch 4 (rc 1)"]
    assert "failed launches (excluded): 2" in res.text and "process.log: missing" in res.text


def test_outputs_written(tree, tmp_path):
    out = tmp_path / "out"
    res = analyze(tree, out)
    for name in ("kernel_overhead.png", "kernel_overhead.html", "kernel_overhead.json",
                 "kernel_overhead.csv", "kernel_overhead.md", "kernel_overhead_long.csv"):
        assert (out / name).stat().st_size > 0, name
    assert not (out / "kernel_overhead.svg").exists()  # the heatmap is an image: PNG only
    page = (out / "kernel_overhead.html").read_text()
    assert "<td title='2 failed launch(es)'>1.20&times;*</td>" in page
    assert "<td>+8</td>" in page
    doc = json.loads((out / "kernel_overhead.json").read_text())
    assert doc["synthetic"] is None  # no bundle.json: provenance unknown
    md = (out / "kernel_overhead.md").read_text()
    assert md.startswith("| group | kernel | block_sched slowdown |")
    summary = {s["key"]: s["value"] for s in res.summary}
    assert summary["cutlass_op.gemm.dmat.slowdown"] == pytest.approx(3.5)
    assert summary["cutlass_op.gemm.block_sched.extra_registers"] == 6


def test_missing_event_log_and_trace_listed(tmp_path, monkeypatch):
    leave_figures_undrawn(monkeypatch)  # cells, tables, text and documents are read, not the heatmap
    root = tmp_path / "kernel_overhead"
    _run(root, "pytorch_op", "softmax", "block_sched", [1.5])
    trace = _run(root, "pytorch_op", "sum", "block_sched", [1.5])
    (trace / "event.log").unlink()
    (root / "pytorch_op" / "gather" / "dmat").mkdir(parents=True)  # collection failed: no trace at all
    res = analyze(root / "pytorch_op", tmp_path / "out")
    cells = {c["kernel"]: c for c in res.data["cells"]}
    assert cells["softmax"]["slowdown"] == pytest.approx(1.5)
    assert cells["sum"]["slowdown"] is None and cells["sum"]["extra_regs"] == 6
    assert any(p.endswith("sum/block_sched/trace/event.log: missing") for p in cells["sum"]["problems"])
    assert cells["gather"]["problems"] == [f"{root / 'pytorch_op/gather/dmat'}: no trace folder "
                                           "(expected trace/event.log)"]


def test_ground_truth_reported_on_sample_bundle(tree, tmp_path, monkeypatch):
    leave_figures_undrawn(monkeypatch)  # cells, tables, text and documents are read, not the heatmap
    # the generator's rows are per compiled kernel; gemm/dmat holds two kernels, attn one
    rows = [
        {"suite": "cutlass_op", "test": "gemm", "kernel": "k0", "probe": "dmat", "model_slowdown": 3.0,
         "extra_regs": 6, "failed_launches": 0},
        {"suite": "cutlass_op", "test": "gemm", "kernel": "k1", "probe": "dmat", "model_slowdown": 4.0,
         "extra_regs": 8, "failed_launches": 0},
        {"suite": "triton_op", "test": "attn", "kernel": "_attn_fwd", "probe": "block_sched",
         "model_slowdown": 1.3, "extra_regs": 2, "failed_launches": 0},
    ]
    bundle.write_manifest(tree.parent, "sample", ground_truth={"kernel_overhead": {"rows": rows}})
    res = analyze(tree, tmp_path / "out")
    truth = {s["key"]: s["ground_truth"] for s in res.summary}
    assert truth["triton_op.attn.block_sched.slowdown"] == 1.3
    # two kernels: the median of their slowdowns over the cell's launches (one each here: 3 and 4)
    assert truth["cutlass_op.gemm.dmat.slowdown"] == 3.5
    assert truth["cutlass_op.gemm.dmat.extra_registers"] == 8      # largest, like the table
    assert truth["cutlass_op.conv.block_sched.slowdown"] is None
    cell = [c for c in res.data["cells"] if (c["kernel"], c["probe"]) == ("gemm", "dmat")][0]
    assert cell["ground_truth"]["slowdown_range"] == [3.0, 4.0]
    assert "1/1 multi-kernel cells inside" in res.text        # 3.5 in [3, 4]
    assert "extra registers equal the injected value in 2/2 cells" in res.text
    assert json.loads((tmp_path / "out" / "kernel_overhead.json").read_text())["synthetic"] is True
    assert "SYNTHETIC" in (tmp_path / "out" / "kernel_overhead.html").read_text()


def test_cli_and_group_wrapper(tree, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NEUTRINO_AE_NO_FORK", "1")  # drawn here, not in a fork that imports matplotlib anew
    cutlass_op_main = partial(cli_main, options={"groups": ("cutlass_op",)})  # cutlass_op/overhead.py's
    assert run_main(cutlass_op_main, [str(tree / "cutlass_op"), "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    assert "GEMM" in text and "1.20x" in text and "FlashAttn" not in text
    assert (tmp_path / "o" / "kernel_overhead_cutlass_op.json").is_file()
    assert run_main(cli_main, [str(tree), "--out", str(tmp_path / "o"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["files"]["html"].endswith("kernel_overhead.html") and len(doc["cells"]) == 4
    assert run_main(cli_main, [str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'nope'}: no such folder")


def test_a_cut_event_log_is_named_and_a_probed_build_with_fewer_registers_is_shown_signed(tmp_path, monkeypatch):
    leave_figures_undrawn(monkeypatch)  # cells, tables, text and documents are read, not the heatmap
    # Reliability item 3: a log cut mid-launch must not count that launch. Issue 20: ptxas allocates
    # each build on its own, so a probed build can use fewer registers than the pruned one; Table 2
    # shows the signed value (here 40 - 46 = -6), marked, and it is not an input problem.
    root = tmp_path / "kernel_overhead"
    trace = _run(root, "cutlass_op", "gemm", "block_sched", [1.2, 1.4, 9.0], regs=(46, 40))
    log = trace / "event.log"
    text = log.read_text()
    log.write_text(text[: text.rindex("impact") + len("impact 9.0")])  # killed while writing launch 2
    res = analyze(root, tmp_path / "out")
    (cell,) = res.data["cells"]
    assert (cell["launches"], cell["used"]) == (2, 2) and cell["slowdown"] == pytest.approx(1.3)
    assert cell["problems"] == [f"{log}: ends mid-line (run killed?); launch 2 left out"]
    assert cell["extra_regs"] == -6 and [r["extra"] for r in cell["registers"]] == [-6]
    assert cell["registers_note"] == "probed build allocated fewer registers"
    wide = res.tables["kernel_overhead"]
    assert wide["block_sched +regs"].iloc[0] == -6
    assert wide["notes"].iloc[0] == "block_sched -6: probed build allocated fewer registers"
    assert "<td class='fewer' title='probed build allocated fewer registers'>-6&dagger;</td>" in (
        tmp_path / "out" / "kernel_overhead.html").read_text()
