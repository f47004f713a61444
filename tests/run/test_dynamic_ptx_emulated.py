"""dynamic.ipynb with the ptx workloads and the REAL Neutrino (CLI, hook driver, probe engine) over the
emulated driver: ``make dynamic-emulated``'s run (``tools/real_neutrino/emulated.py --quick``), with the
same collectors and workload command lines as on a GPU, no stand-in substitution. Every section must
produce results, and each number must be what the emulator's fills and time model put in.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from neutrino_ae.report.section import registry

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "real_neutrino"))

import emulated  # noqa: E402
from real_neutrino_build import shared_install  # noqa: E402
from workload_ptx_cache import shared_ptx_cache  # noqa: E402

#: The paper's sections, whose GPU command lines the emulator answers (a folder added later collects too).
SECTIONS = ("block_sched", "dmat", "kernel_overhead", "max_mem", "exposed_latency", "warp_sched")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    install = shared_install(tmp_path_factory, "artifact")
    base = tmp_path_factory.mktemp("ptx-emulated")
    # The workloads' PTX, compiled once this run (the workload tests use it too), as the run's own cache
    shutil.copytree(shared_ptx_cache(tmp_path_factory), base / "work" / "ptx-cache")
    proc = emulated.run(base / "results", base / "traces", base / "work", quick=True, install=install)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {(r["section"], r["key"]): r["value"]
            for r in json.loads((base / "results" / "summary.json").read_text())["results"]}
    return base, proc, rows


def test_every_section_collects_with_the_gpu_command_lines(run):
    base, proc, _ = run
    for name in SECTIONS:
        assert (base / "traces" / name).is_dir(), name
    manifest = json.loads((base / "traces" / "bundle.json").read_text())
    assert manifest["emulated"] is True
    assert {s: v["workloads"] for s, v in manifest["sections"].items()} == dict.fromkeys(registry.names(), "ptx")
    # the workloads the collectors ran are the ptx family's scripts, as the device script runs them
    logs = "".join(p.read_text(errors="replace") for p in (base / "traces").rglob("*.stderr.log"))
    event_cmds = "".join(p.read_text(errors="replace") for p in (base / "traces").rglob("event.log"))
    assert "ptx_workload.py" in event_cmds and "neutrino_ae.workloads.ptx_ops" in event_cmds, logs[-2000:]


def test_the_verdict_is_labelled_emulated_and_skips_no_claim_for_want_of_a_workload(run):
    base, _, _ = run
    verdict = json.loads((base / "results" / "verdict.json").read_text())
    assert verdict["emulated"] is True and verdict["scope"].startswith("EMULATED")
    assert verdict["overall"] == "PASS" and verdict["counts"]["DIFFERS"] == 0
    skipped = {c["section"] + "/" + c["claim"]: c["reason"] for c in verdict["claims"] if c["status"] == "SKIPPED"}
    allowed = ("ground truth", "published for the authors' A100", "no value to compare")
    unexplained = {k: why for k, why in skipped.items() if not any(a in why for a in allowed)
                   and "launches no kernel Neutrino can probe" not in why}
    assert not unexplained
    results = json.loads((base / "results" / "block_sched" / "block_sched.json").read_text())
    assert results["provenance"]["emulated"] is True and results["provenance"]["synthetic"] is True


def test_block_sched_numbers_are_the_fills(run):
    _, _, rows = run
    e = emulated
    blocks = e.BLOCK_SCHED_KERNELS["fill_fp16_kernel"][0]
    assert rows[("block_sched", "raw.mean_running_cycles")] == pytest.approx(blocks * e.DURATION / e.SMS, rel=1e-12)
    # FIFO on one slot per SM: every block after an SM's first waited GAP cycles
    assert rows[("block_sched", "raw.mean_scheduling_cycles")] == pytest.approx((blocks - e.SMS) * e.GAP / e.SMS,
                                                                                 rel=1e-12)
    assert rows[("block_sched", "persistent.mean_scheduling_cycles")] == 0  # one program per SM
    # the unprobed timing run, on emucuda's clock: a base time per launch plus a time per block
    raw_ms = e.EMU_KERNEL_MS + blocks * e.EMU_BLOCK_US / 1000
    assert rows[("block_sched", "raw.fill_ms")] == pytest.approx(raw_ms, rel=1e-4)
    assert rows[("block_sched", "persistent.speedup")] == pytest.approx(
        raw_ms / (e.EMU_KERNEL_MS + e.SMS * e.EMU_BLOCK_US / 1000), rel=1e-4)


def test_dmat_counts_and_names_the_fills_accesses(run):
    _, _, rows = run
    e = emulated
    for fig, kernel in (("fig1", "attn_fwd"), ("fig10b", "flash_fwd_kernel")):
        threads = e.DMAT_KERNELS[kernel]
        assert rows[("dmat", f"{fig}.accesses")] == threads * len(e.DMAT_ORDER)
        # relocated onto the launch's own q, k, v, o: each tensor named, its first access at its clock
        for tensor, (_, clock) in zip("qkvo", e.DMAT_ORDER, strict=True):
            assert rows[("dmat", f"{fig}.{tensor}.accesses")] == threads
            assert rows[("dmat", f"{fig}.{tensor}.first_clock")] == clock


def test_each_result_names_the_workload_family_and_its_stand_ins(run):
    base, _, _ = run
    for name in SECTIONS:
        data = json.loads((base / "results" / name / f"{name}.json").read_text())
        assert data["workloads"]["workloads"] == "ptx" and data["workloads"]["stand_ins"], name
    titles = {f["figure"]: f["title"] for f in json.loads((base / "results" / "dmat" / "dmat.json").read_text())[
        "figures"]}
    assert "flash_fwd_kernel, a CUDA C stand-in for SDPA's flash back end" in titles["fig10b"]
    assert "the suite's Triton FA-2, sm_80 PTX" in titles["fig1"]
    notebook = (base / "results" / "dynamic.executed.ipynb").read_text()
    assert notebook.count("**Workloads: ptx**") == len(SECTIONS)


def test_table2_fig11_fig12_and_fig13_are_the_emulators_model(run):
    base, _, rows = run
    e = emulated
    for cell in ("pytorch_op.softmax", "triton_op.gmm"):
        for probe in ("block_sched", "dmat"):
            assert rows[("kernel_overhead", f"{cell}.{probe}.slowdown")] == pytest.approx(1.5, rel=1e-3)
    # Fig. 11: block_sched saves 16 bytes per warp; the layer's largest grid is SiLU x up over
    # tokens x MLP elements, one per thread of 256-thread blocks (8 warps)
    tokens, mlp = 32 * 128, 8192
    assert rows[("max_mem", "llama1b-bs32.block_sched.probe_mem_max")] == tokens * mlp // 256 * 8 * 16
    (row,) = pd.read_csv(base / "traces" / "exposed_latency" / "gmm.csv").query("probe == 'block_sched'").to_dict(
        "records")
    gmm_ms = e.EMU_KERNEL_MS + 64 * 4 * e.EMU_BLOCK_US / 1000  # grid (64, 4)
    assert row["original"] == pytest.approx(gmm_ms, rel=1e-4) and row["kernel"] == pytest.approx(1.5 * gmm_ms,
                                                                                                rel=1e-4)
    assert rows[("warp_sched", "fig13a.max_resident_blocks_per_sm")] == 1
    assert rows[("warp_sched", "fig13b.max_resident_blocks_per_sm")] == 4
