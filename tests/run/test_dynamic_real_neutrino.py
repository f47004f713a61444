"""dynamic.ipynb through papermill with the REAL Neutrino CLI, hook driver and probe engine over our
emulated CUDA driver: collection, trace layout and the same analyses as static.ipynb, with values
checked against what the emulator was told to write. Only the GPU workloads are stand-ins
(tools/real_neutrino/neutrino_standin.py maps each to a driver-API workload running our PTX).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import nbformat
import pytest
from papermill_run import execute_notebook

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "real_neutrino"))
sys.path.insert(0, str(REPO / "tools" / "genuine"))

import trace_dirs  # noqa: E402
from real_neutrino_build import shared_install  # noqa: E402

STANDIN = REPO / "tools" / "real_neutrino" / "neutrino_standin.py"


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    return shared_install(tmp_path_factory, "artifact")


def test_dynamic_notebook_collects_and_analyses_with_the_real_cli(artifact, tmp_path, monkeypatch):
    fill = tmp_path / "fill"
    block = next(c for c in trace_dirs.CASES if c.name == "block_sched")
    trace_dirs.write_fill(block, fill)
    for kernel in ("attn_fwd", "flash_fwd_kernel", "fmha_fwd_kernel"):  # Fig. 1/10a, 10b, 10c stand-ins
        trace_dirs.write_fill(trace_dirs.Case("dmat", {}, (), kernel, 4, 64), fill)
    (fill / "zero_fill.count").write_text("32")
    log = tmp_path / "calls.jsonl"
    for key, value in artifact.env(fill).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("REAL_NEUTRINO", str(artifact.neutrino))
    monkeypatch.setenv("STANDIN_PTX", str(artifact.ptx))
    monkeypatch.setenv("STANDIN_LOG", str(log))
    out = tmp_path / "res"
    execute_notebook(
        str(REPO / "dynamic.ipynb"), str(tmp_path / "out.ipynb"), cwd=str(REPO), kernel_name="python3",
        progress_bar=False, parameters={
            "sections": "block_sched,dmat,kernel_overhead,max_mem,exposed_latency", "output_dir": str(out),
            "trace_root": str(tmp_path / "traces"), "neutrino": str(STANDIN), "strict": True, "workloads": "paper",
            "collect_args": {"kernel_overhead": ["--only", "softmax,attn", "--probes", "block_sched,dmat"],
                             "max_mem": ["--models", "llama1b-bs32", "--probes", "block_sched,dmat"],
                             "exposed_latency": ["--workloads", "attn", "--probes", "block_sched"]}})
    nb = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "collection: enabled" in text and "skipped:" not in text

    # Every command line went to the real CLI, which accepted it (its argparse would have exited 2).
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert any(c[:2] == ["-p", "dmat"] for c in calls) and any("--benchmark" in c for c in calls)
    assert any("--memusage" in c for c in calls)

    rows = {(r["section"], r["key"]): r["value"] for r in json.loads((out / "summary.json").read_text())["results"]}
    per_sm = block.grid // trace_dirs.SMS
    assert rows[("block_sched", "raw.mean_running_cycles")] == per_sm * trace_dirs.DURATION
    assert rows[("block_sched", "raw.mean_scheduling_cycles")] == (per_sm - 1) * trace_dirs.GAP
    assert rows[("block_sched", "persistent.mean_scheduling_cycles")] == 0  # one block per SM
    for fig in ("fig1", "fig10a", "fig10b", "fig10c"):
        assert rows[("dmat", f"{fig}.accesses")] == 256 * 3 - 64 and rows[("dmat", f"{fig}.pages")] == 3
    for cell in ("pytorch_op.softmax", "triton_op.attn"):
        for probe in ("block_sched", "dmat"):
            assert rows[("kernel_overhead", f"{cell}.{probe}.slowdown")] == pytest.approx(1.5)  # emulator's model
            assert rows[("kernel_overhead", f"{cell}.{probe}.extra_registers")] > 0
    # zero_fill <<<16, 128>>>: 4 warps x 16 B per block; dmat: 32 B per thread from the count kernel
    assert rows[("max_mem", "llama1b-bs32.block_sched.probe_mem_max")] == 16 * 4 * 16
    assert rows[("max_mem", "llama1b-bs32.dmat.probe_mem_max")] == 16 * 128 * 32
    # Fig. 12: prologue/kernel/epilogue of a run that SAVED its trace (the epilogue holds the copy
    # back and the write), the original kernel time from a --benchmark run of the same cell.
    import pandas as pd

    (row,) = pd.read_csv(tmp_path / "traces" / "exposed_latency" / "attn.csv").to_dict("records")
    assert (row["probe"], row["original"], row["kernel"]) == ("block_sched", 1.0, 1.5)  # emulator's model
    assert row["epilogue"] > 0 and row["neutrino"] == pytest.approx(row["prologue"] + 1.5 + row["epilogue"])
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["overall"] != "NOTHING COLLECTED" and verdict["bundle_kind"] == "dynamic"
    assert os.path.isdir(tmp_path / "traces" / "block_sched" / "variants" / "persistent")
