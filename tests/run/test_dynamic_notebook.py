"""dynamic.ipynb: generated and output-free; runs under papermill with the fake neutrino, and degrades
to one 'skipped:' line per section without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "dynamic.ipynb"
FAKE = REPO / "tests" / "fake_neutrino"


def test_notebook_is_generated_and_clean():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "build_dynamic_notebook.py"), "--check"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].id == "kernel-check" and code[1].metadata.get("tags") == ["parameters"]
    for cell in code:
        assert not cell.outputs and cell.execution_count is None
        for line in cell.source.splitlines():
            assert not line.lstrip().startswith(("!", "%")), line
    text = "\n".join(c.source for c in code)
    assert "DynamicNotebook(" in text and "os.listdir" not in text


def _execute(tmp_path: Path, path_dirs: list[str], sections: str, **params) -> tuple[nbformat.NotebookNode, dict]:
    papermill = pytest.importorskip("papermill")
    env_path = os.pathsep.join([*path_dirs, str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    old = os.environ["PATH"]
    os.environ["PATH"] = env_path
    try:
        out_nb = tmp_path / "out.ipynb"
        papermill.execute_notebook(
            str(NOTEBOOK), str(out_nb), cwd=str(REPO), kernel_name="python3", progress_bar=False,
            parameters={"sections": sections, "output_dir": str(tmp_path / "res"),
                        "trace_root": str(tmp_path / "traces"), **params})
    finally:
        os.environ["PATH"] = old
    nb = nbformat.read(out_nb, as_version=4)
    summary = json.loads((tmp_path / "res" / "summary.json").read_text())
    return nb, summary


def _text(nb) -> str:
    parts = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            assert o.get("output_type") != "error", o
            parts.append(o.get("text", ""))
    return "".join(parts)


@pytest.fixture
def gpu_bin(tmp_path):
    bindir = tmp_path / "gpubin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text('#!/bin/sh\necho "NVIDIA A100-SXM4-40GB, 8.0, 535.104.05"\n')
    smi.chmod(0o755)
    return str(bindir)


def test_collects_with_fake_neutrino(tmp_path, gpu_bin, monkeypatch):
    monkeypatch.setenv("FAKE_NEUTRINO_PROBE_MEM", "123456")
    monkeypatch.setenv("FAKE_NEUTRINO_WORKLOAD_MEM", "7777777")
    monkeypatch.setenv("FAKE_NEUTRINO_LOG", str(tmp_path / "calls.jsonl"))
    nb, summary = _execute(tmp_path, [str(FAKE), gpu_bin], "dmat,max_mem",
                           collect_args={"max_mem": ["--models", "llama1b-bs32", "--probes", "block_sched,dmat"]},
                           workloads="paper")  # the fake CLI answers the paper scripts; the ptx ones need nvcc
    text = _text(nb)
    assert "collection: enabled" in text and "skipped:" not in text
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert sum(c[:4] == ["-p", "dmat", "-k", "attn"] for c in calls) == 2
    assert any(c[:4] == ["-p", "dmat", "-k", "flash"] for c in calls)
    assert any(c[:4] == ["-p", "dmat", "-k", "fmha"] for c in calls)
    assert sum("--memusage" in c for c in calls) == 2

    rows = {(r["section"], r["key"]): r for r in summary["results"]}
    assert summary["bundle_kind"] == "dynamic" and summary["collected"] is True
    # max_mem: exactly the numbers the fake CLI wrote.
    for probe in ("block_sched", "dmat"):
        assert rows[("max_mem", f"llama1b-bs32.{probe}.probe_mem_max")]["value"] == 123456
        assert rows[("max_mem", f"llama1b-bs32.{probe}.workload_max")]["value"] == 7777777
    # dmat: the fake's trace has 2 blocks x 32 threads x 4 slots, 16 + 16 of them empty markers.
    for fig in ("fig1", "fig10a", "fig10b", "fig10c"):
        assert rows[("dmat", f"{fig}.accesses")]["value"] == 2 * 32 * 4 - 32
        assert rows[("dmat", f"{fig}.pages")]["value"] == 2
    assert all(r["bundle_kind"] == "dynamic" for r in summary["results"])
    # Section 7 rendered the newest trace directory.
    assert "newest trace directory:" in text and "pruned.ptx vs probed.ptx" in text

    # A second run without neutrino analyses the traces collected above.
    nb2, summary2 = _execute(tmp_path, [gpu_bin], "max_mem")
    text2 = _text(nb2)
    assert "max_mem: skipped: the Neutrino CLI 'neutrino' is not on PATH" in text2
    assert "analysing earlier traces" in text2
    rows2 = {(r["section"], r["key"]): r["value"] for r in summary2["results"]}
    assert rows2[("max_mem", "llama1b-bs32.dmat.probe_mem_max")] == 123456


def test_without_neutrino_every_section_skips(tmp_path):
    # nvidia-smi as it answers on a machine without a working driver (also shadows a real one).
    no_driver = tmp_path / "no_driver_bin"
    no_driver.mkdir()
    smi = no_driver / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                   "driver.\" >&2\nexit 9\n")
    smi.chmod(0o755)
    nb, summary = _execute(tmp_path, [str(no_driver)], "all")
    text = _text(nb)
    for name in ("block_sched", "dmat", "kernel_overhead", "max_mem", "exposed_latency", "warp_sched"):
        lines = [ln for ln in text.splitlines() if ln.startswith(f"{name}: ")]
        assert len(lines) == 1 and ": skipped: " in lines[0], lines
        # Neither a GPU nor the CLI here: the GPU is what the line names.
        assert lines[0].startswith(f"{name}: skipped: no NVIDIA GPU ("), lines
    assert "internals: skipped: no trace directory" in text
    assert summary["results"] == [] and summary["collected"] is False
