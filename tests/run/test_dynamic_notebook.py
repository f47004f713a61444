"""dynamic.ipynb: generated and output-free; runs under papermill with the fake neutrino, and degrades
to one 'skipped:' line per section without it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from papermill_run import execute_notebook

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
    # Plumbing (the kernel check, the set-up) shows its outputs only, as in static.ipynb.
    for cid in ("kernel-check", "env"):
        cell = next(c for c in code if c.id == cid)
        assert "remove-input" in cell.metadata["tags"] and cell.metadata["jupyter"]["source_hidden"] is True


def _execute(tmp_path: Path, path_dirs: list[str], sections: str, **params) -> tuple[nbformat.NotebookNode, dict]:
    env_path = os.pathsep.join([*path_dirs, str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    old = os.environ["PATH"]
    os.environ["PATH"] = env_path
    try:
        out_nb = tmp_path / "out.ipynb"
        execute_notebook(
            str(NOTEBOOK), str(out_nb), cwd=str(REPO), kernel_name="python3", progress_bar=False,
            parameters={"sections": sections, "output_dir": str(tmp_path / "res"),
                        "trace_root": str(tmp_path / "traces"), **params})
    finally:
        os.environ["PATH"] = old
    nb = nbformat.read(out_nb, as_version=4)
    summary = json.loads((tmp_path / "res" / "summary.json").read_text())
    return nb, summary


def _execute_in_process(tmp_path: Path, path_dirs: list[str], sections: str,
                        capsys: pytest.CaptureFixture[str]) -> tuple[str, dict]:
    """The notebook's code cells run in this process, in order, with ``_execute``'s parameters put in after
    its parameters cell (as papermill's injected cell does) and its PATH: what the kernel would print and
    the summary. ``_execute`` (papermill, a kernel) runs the notebook once per test run; a variation of its
    parameters runs here."""
    from neutrino_ae.run import lock

    cells = [c for c in nbformat.read(NOTEBOOK, as_version=4).cells if c.cell_type == "code"]
    params = {"sections": sections, "output_dir": str(tmp_path / "res"), "trace_root": str(tmp_path / "traces")}
    namespace: dict = {"__name__": "__main__"}
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", os.pathsep.join([*path_dirs, str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
        mp.chdir(REPO)
        try:
            for cell in cells:
                exec(compile(cell.source, f"dynamic.ipynb:{cell.id}", "exec"), namespace)  # noqa: S102
                if "parameters" in cell.metadata.get("tags", []):
                    namespace.update(params)
        finally:
            lock.release_output_lock(tmp_path / "res")  # the kernel's lock, released when a kernel exits
    return capsys.readouterr().out, json.loads((tmp_path / "res" / "summary.json").read_text())


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


def test_collects_with_fake_neutrino(tmp_path, gpu_bin, monkeypatch, capsys):
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
    # The tour is of a block_sched trace directory (none collected here: dmat and max_mem only).
    shown = _all_text(nb)
    assert "probe.toml (block_sched)" in shown and "pruned.ptx vs probed.ptx" in shown
    # Collected now: the verdict says so.
    verdict = json.loads((tmp_path / "res" / "verdict.json").read_text())
    assert verdict["source"] == "traces collected on this GPU" and "by this run" in verdict["scope"]

    # A second run without neutrino analyses the traces collected above (the notebook's cells, in-process).
    text2, summary2 = _execute_in_process(tmp_path, [gpu_bin], "max_mem", capsys)
    assert "max_mem: skipped: the Neutrino CLI 'neutrino' is not on PATH" in text2
    assert "analysing earlier traces" in text2
    rows2 = {(r["section"], r["key"]): r["value"] for r in summary2["results"]}
    assert rows2[("max_mem", "llama1b-bs32.dmat.probe_mem_max")] == 123456
    # ... and its headline says it analysed traces it did not collect (issue 37 item 4).
    verdict2 = json.loads((tmp_path / "res" / "verdict.json").read_text())
    assert verdict2["source"] == "earlier traces, nothing collected", verdict2["source"]
    assert verdict2["scope"].startswith("nothing was collected by this run: the Neutrino CLI"), verdict2["scope"]
    assert "max_mem analysed traces an earlier run collected" in verdict2["scope"]



# ------------------------------------------------------------------ without a GPU, as users run it (issue 37 item 4)


@pytest.fixture(scope="module")
def no_gpu(tmp_path_factory):
    """One ``neutrino-ae run dynamic`` on a machine without a GPU, shared by the tests below: an
    ``nvidia-smi`` that fails as it does without a driver (it shadows a real one), no ``neutrino``; the
    output and trace folders inside the checkout, as the defaults are. Nothing collected: exit 1 (one
    line saying so), the notebook and verdict still written; ``--allow-skip`` (test_verdict_cli) exits 0."""
    import shutil
    import uuid

    tmp = tmp_path_factory.mktemp("nogpu")
    no_driver = tmp / "bin"
    no_driver.mkdir()
    smi = no_driver / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                   "driver.\" >&2\nexit 9\n")
    smi.chmod(0o755)
    tag = uuid.uuid4().hex[:8]
    # results/ is where a checkout's runs write (make run makes it); a fresh clone has none until then,
    # and the command refuses a folder whose parent is missing
    (REPO / "results").mkdir(exist_ok=True)
    out, traces = REPO / "results" / f".test-dyn-{tag}", REPO / "results" / f".test-dyn-traces-{tag}"
    env = {**os.environ, "PATH": os.pathsep.join([str(no_driver), str(Path(sys.executable).parent), "/usr/bin",
                                                   "/bin"])}
    try:
        proc = subprocess.run([sys.executable, "-m", "neutrino_ae", "-q", "run", "dynamic",
                               "--output-dir", str(out), "--trace-root", str(traces)],
                              capture_output=True, text=True, cwd=REPO, env=env, timeout=300, check=False)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert proc.stderr.strip().splitlines()[-1] == "error: nothing was collected (pass --allow-skip to accept that)"
        nb = nbformat.read(out / "dynamic.executed.ipynb", as_version=4)
        verdict = json.loads((out / "verdict.json").read_text())
        yield {"nb": nb, "verdict": verdict, "out": out, "traces": traces, "proc": proc}
    finally:
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(traces, ignore_errors=True)


def _outputs(nb) -> list[tuple[str, dict]]:
    """(cell id, output) in page order; no cell failed."""
    found = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            assert o.get("output_type") != "error", o
            found.append((cell.get("id"), o))
    return found


def _out_text(o) -> str:
    return o.get("text", "") + "\n".join(v for k, v in o.get("data", {}).items()
                                          if k.startswith("text/") and isinstance(v, str))


def _all_text(nb) -> str:
    return "\n".join(_out_text(o) for _, o in _outputs(nb))


def test_without_a_gpu_the_environment_check_is_the_first_output(no_gpu):
    first_id, first = _outputs(no_gpu["nb"])[0]
    assert first_id == "env"
    env = [_out_text(o) for cid, o in _outputs(no_gpu["nb"]) if cid == "env"]
    table = next(t for t in env if "| missing | needed | here | how to get it |" in t)
    rows = {ln.split("|")[1].strip(" *"): ln for ln in table.splitlines() if ln.startswith("| **")}
    # The GPU and the CLI are missing and both say how to get them; what was found is not a row.
    assert "nvidia-gpu" in rows and "static.ipynb runs without one" in rows["nvidia-gpu"]
    assert "neutrino" in rows and "prepare_env.py --install" in rows["neutrino"]
    assert "python" not in rows and "workloads" not in rows
    # Before any section: every section line comes after the table.
    text = _all_text(no_gpu["nb"])
    assert text.index("| missing |") < text.index("block_sched: skipped: no NVIDIA GPU")


def test_without_a_gpu_each_section_skips_in_one_line(no_gpu):
    text = _all_text(no_gpu["nb"])
    for name in ("block_sched", "dmat", "kernel_overhead", "max_mem", "exposed_latency", "warp_sched"):
        lines = [ln for ln in text.splitlines() if ln.startswith(f"{name}: ")]
        assert len(lines) == 1 and lines[0].startswith(f"{name}: skipped: no NVIDIA GPU ("), lines
    summary = json.loads((no_gpu["out"] / "summary.json").read_text())
    assert summary["results"] == [] and summary["collected"] is False


def test_without_a_gpu_each_claim_that_can_apply_to_gpu_data_is_listed_once_and_no_ground_truth(no_gpu):
    from neutrino_ae.report.section import registry

    # Claims a GPU run is judged on: the shape claims and any published number held to dynamic data.
    applicable = [(s.name, c) for s in registry.sections() for c in s.claims
                  if c.kind == "shape" or (c.kind == "published" and "dynamic" in c.kinds)]
    truth = [(s.name, c) for s in registry.sections() for c in s.claims if c.kind == "truth"]
    assert applicable and truth
    verdict = no_gpu["verdict"]
    assert [(c["section"], c["claim"]) for c in verdict["claims"]] == [(s, c.id) for s, c in applicable]
    assert all(c["status"] == "SKIPPED" and c["reason"].startswith("not run") for c in verdict["claims"])
    assert verdict["overall"] == "NOTHING COLLECTED"
    nb = no_gpu["nb"]
    page = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown") + "\n" + _all_text(nb)
    for _, c in applicable:
        assert page.count(c.text.replace("|", "\\|")) == 1, c.text
    assert "ground truth" not in page
    for _, c in truth:
        assert c.text not in page, c.text
    assert f"Not run: {len(applicable)} claims" in page


def test_without_a_gpu_the_headline_says_nothing_was_collected(no_gpu):
    nb = no_gpu["nb"]
    top = nb.cells[1]
    assert top.id == "verdict-top"
    heading, bold = top.source.splitlines()[0], top.source.splitlines()[2]
    assert heading == "## Verdict: NOTHING COLLECTED · no NVIDIA GPU here"
    assert bold.startswith("**nothing was collected on this machine: no NVIDIA GPU (")
    everything = "\n".join(c.source for c in nb.cells) + _all_text(nb)
    assert "collected on this machine's GPU" not in everything and "traces from this GPU" not in everything
    # The claims are listed once, at the end: no table under the title.
    assert "|---" not in top.source


def test_without_a_gpu_no_output_names_an_absolute_path(no_gpu):
    import re

    nb = no_gpu["nb"]
    injected = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert f'output_dir = "{no_gpu["out"].relative_to(REPO).as_posix()}"' in injected.source
    shown = [injected.source] + [_out_text(o) for _, o in _outputs(nb)] + \
        [c.source for c in nb.cells if c.cell_type == "markdown"]
    for text in shown:
        for folder in (str(REPO), str(no_gpu["out"]), "/tmp/", "/usr/", "/home/", "/root/", "/opt/"):
            assert folder not in text, (folder, text[:300])
        # No absolute path at all: a "/" after a space, quote, backtick or bracket starts none.
        assert not re.search(r"(?:^|[\s\"'`(=])/(?:[\w.-]+/)+[\w.-]+", text), text[:300]


def test_the_tour_shows_the_block_sched_probe_and_explains_event_log_line_by_line(no_gpu):
    text = _all_text(no_gpu["nb"])
    genuine = REPO / "tests" / "data" / "genuine" / "artifact" / "block_sched"
    # No trace collected here: the tour is of the genuine block_sched directory, its probe.toml shown.
    assert "tests/data/genuine/artifact/block_sched" in text
    probe = (genuine / "probe.toml").read_text()
    assert "probe.toml (block_sched)" in text and 'position = "kernel"' in probe and 'position = "kernel"' in text
    # Every event.log line is a row beside what it says, none unexplained.
    table = next(_out_text(o) for _, o in _outputs(no_gpu["nb"]) if "event.log, line by line" in _out_text(o))
    rows = [ln for ln in table.splitlines() if re.match(r"\| \d+ \|", ln)]
    lines = [ln for ln in (genuine / "event.log").read_text(errors="replace").splitlines() if ln.strip()]
    assert len(rows) == len(lines) == 27
    for row, line in zip(rows, lines, strict=True):
        assert line.split()[0] in row and "(not a line this tour knows)" not in row, row
        assert row.rstrip(" |").rsplit("|", 1)[1].strip(), row  # an explanation
    assert "[jit] subproc" in table and "the probe engine started in a subprocess" in table
    # The probe engine's steps, the analysis script and a probe-engine failure, from real files.
    assert "The probe engine: `kernel/0_29cd7ecab20335e526a7242511bd34c416f73fb2/`" in text
    assert "| 3 | pruned to the one kernel named on the command line | `pruned.ptx` | here |" in text
    assert "The analysis script: `block_sched.py`" in text and "No.block:32 Running:4000 Scheduling:300(cycle)" in text
    assert "When the probe engine fails" in text and "CalledProcessError" in text


def test_the_tour_lists_neutrinos_built_in_probes_from_its_source(no_gpu):
    import neutrino_source

    if (why := neutrino_source.missing_reason("artifact")) is not None:
        pytest.skip(why)
    text = _all_text(no_gpu["nb"])
    toml = neutrino_source.read_member("artifact", "neutrino/tools/block_sched.toml")
    assert "`block_sched.toml`, `block_sched_amd.toml`" in text and "tools/block_sched.toml: the probe" in text
    first = next(ln for ln in toml.splitlines() if ln.startswith("datamodel"))
    assert first in text
    script = neutrino_source.read_member("artifact", "neutrino/tools/block_sched.py")
    assert next(ln for ln in script.splitlines() if ln.startswith("def ")) in text


def test_the_tour_prefers_a_collected_trace_directory_and_its_engine_failure(tmp_path):
    import shutil

    from neutrino_ae.run.dynamic_tour import block_sched_dir, engine_failure

    genuine = REPO / "tests" / "data" / "genuine" / "artifact" / "block_sched"
    older, newer = (tmp_path / "block_sched" / "trace" / n for n in ("Nov23_001920_24869", "Nov24_001920_24870"))
    shutil.copytree(genuine, older)
    shutil.copytree(genuine, newer)
    found, what = block_sched_dir(tmp_path)
    assert found == newer and "collected under `trace_root`" in what
    assert engine_failure(tmp_path)[1].startswith("genuine")  # none collected fails
    log = next(newer.glob("kernel/*/process.log"))
    log.write_text(log.read_text() + "Traceback (most recent call last):\nValueError: x\n")
    assert engine_failure(tmp_path) == (log, "collected under `trace_root`")
    # Nothing collected: the genuine directory, said to be the real Neutrino over the emulated driver.
    found, what = block_sched_dir(tmp_path / "none")
    assert found == genuine and "emulated CUDA driver" in what


def test_provenance_says_where_the_analysed_data_came_from():
    from neutrino_ae.run.dynamic_view import provenance

    assert provenance(["dmat"], [], "dynamic", None, "traces/dynamic")[0] == "traces collected on this GPU"
    label, scope = provenance([], ["dmat"], "sample", "collect=False", "traces/sample")
    assert label == "SYNTHETIC sample bundle, nothing collected"
    assert scope == ("nothing was collected by this run: collect=False; dmat analysed the SYNTHETIC sample bundle "
                     "(an execution model, not a GPU) under `traces/sample`")
    label, scope = provenance([], [], "dynamic", "no NVIDIA GPU (nvidia-smi not on PATH)", "/abs/traces")
    assert label == "no NVIDIA GPU here" and "/abs" not in scope


def test_a_bundle_it_did_not_collect_is_analysed_and_said_so(tiny_bundle, tmp_path, capsys):
    """``-p bundle <folder>`` (or "sample"): nothing is collected, the bundle is analysed, and the verdict
    says whose data it is; on the sample its ground truth applies, published A100 numbers do not."""
    from neutrino_ae.run import lock
    from neutrino_ae.run.dynamic_notebook import DynamicNotebook

    try:
        nb = DynamicNotebook(sections="max_mem", output_dir=str(tmp_path / "out"), bundle=str(tiny_bundle))
        assert nb.blocker == f"bundle={str(tiny_bundle)!r}: analysing it" and nb.trace_root == tiny_bundle
        nb.section("max_mem")
        nb.summary()
    finally:
        lock.release_output_lock(tmp_path / "out")
    printed = capsys.readouterr().out
    assert "max_mem: analysing …/" in printed and "nothing collected)" in printed
    verdict = json.loads((tmp_path / "out" / "verdict.json").read_text())
    assert verdict["source"] == "SYNTHETIC sample bundle, nothing collected"
    assert "max_mem analysed the SYNTHETIC sample bundle (an execution model, not a GPU)" in verdict["scope"]
    assert "collected on this machine's GPU" not in verdict["scope"] and str(tiny_bundle) not in verdict["scope"]
    from neutrino_ae.report.section import registry

    expected = [c.id for c in registry.get("max_mem").claims if c.kind != "published"]
    assert [c["claim"] for c in verdict["claims"]] == expected
    assert any(c["kind"] == "truth" for c in verdict["claims"])
    assert all(c["status"] == "PASS" for c in verdict["claims"]), verdict["claims"]
