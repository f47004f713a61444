"""static.ipynb: committed clean and generated, and executed end to end on a small sample bundle."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from bundle_edit import reseal
from papermill_run import execute_notebook

from neutrino_ae.bundle.manifest import read_manifest
from neutrino_ae.report.results.summary import read_summary
from neutrino_ae.report.section import registry
from neutrino_ae.run import runner

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "static.ipynb"
sys.path.insert(0, str(REPO / "tools"))
import build_static_notebook  # noqa: E402
from notebook_builder import celled_sections  # noqa: E402

#: The paper's sections, by name (any folder added later is found through the registry).
PAPER_SECTIONS = ("block_sched", "dmat", "kernel_overhead", "max_mem", "exposed_latency", "warp_sched")
PARAMETERS = {"bundle", "trace_root", "bundle_url", "bundle_sha256", "sections", "output_dir", "sample_scale", "seed",
              "force", "workers"}


def _notebook() -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOK, as_version=4)


# --------------------------------------------------------------------------------------------- static checks


def test_committed_notebook_has_no_outputs_and_a_parameters_cell():
    nb = _notebook()
    nbformat.validate(nb)
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    for cell in code_cells:
        assert cell.outputs == [] and cell.execution_count is None, f"cell {cell.id} has outputs"
    # The first code cell checks the kernel (standard library only); the parameters cell comes next.
    assert code_cells[0].id == "kernel-check" and "find_spec" in code_cells[0].source
    first = code_cells[1]
    assert "parameters" in first.metadata.get("tags", [])
    assigned = {t.id: ast.literal_eval(node.value) for node in ast.parse(first.source).body
                if isinstance(node, ast.Assign) for t in node.targets}
    assert set(assigned) == PARAMETERS
    # "" = the bundle kind's own folder (traces/sample/ or traces/paper/); one results layout for
    # Jupyter and neutrino-ae run: results/static/.
    assert assigned["bundle"] == "auto" and assigned["trace_root"] == ""
    assert assigned["bundle_url"].startswith("https://") and assigned["bundle_url"].endswith("trace.zip")
    assert assigned["bundle_sha256"] == "" and assigned["output_dir"] == "results/static/"
    assert assigned["sections"] == "all", "every registered section, a folder added after the build too"
    assert assigned["sample_scale"] == "small" and assigned["seed"] == 0 and assigned["force"] is False
    assert assigned["workers"] == 2


def test_papermill_reads_every_parameter():
    from papermill.translators import PythonTranslator

    cell = next(c for c in _notebook().cells if "parameters" in c.metadata.get("tags", []))
    assert {p.name for p in PythonTranslator.inspect(cell)} == PARAMETERS


def test_committed_notebook_has_no_shell_outs_magics_or_pickle():
    for cell in _notebook().cells:
        if cell.cell_type != "code":
            continue
        for line in cell.source.splitlines():
            assert not line.lstrip().startswith(("!", "%")), f"shell-out or magic in {cell.id}: {line}"
        assert "pickle" not in cell.source
        assert "%%capture" not in cell.source and "%%writefile" not in cell.source
        ast.parse(cell.source)  # plain Python, so ruff and papermill both read it


def test_notebook_follows_the_registry_order():
    ids = [c.id for c in _notebook().cells if c.cell_type == "code"]
    # The paper's sections have cells of their own; a folder added since the build may not (the summary
    # cell shows it) until the builder runs again.
    celled = [name for name in registry.names() if name.replace("_", "-") in ids]
    assert set(PAPER_SECTIONS) <= set(celled)
    order = [ids.index(name.replace("_", "-")) for name in celled]
    assert order == sorted(order)
    assert ids[-1] == "summary"


def test_committed_notebook_is_what_the_builder_produces():
    text = NOTEBOOK.read_text(encoding="utf-8")
    assert text == build_static_notebook.build(celled_sections(text)), \
        "static.ipynb is stale: run python tools/build_static_notebook.py"


# --------------------------------------------------------------------------------------------- execution


def _execute(tmp: Path, **params) -> tuple[Path, Exception | None]:
    """Run static.ipynb with papermill from an empty working directory; return the executed notebook."""
    from papermill.exceptions import PapermillExecutionError

    cwd = tmp / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    executed = tmp / "executed.ipynb"
    error = None
    try:
        execute_notebook(str(NOTEBOOK), str(executed), parameters=params, cwd=str(cwd),
                                   progress_bar=False, kernel_name="python3")
    except PapermillExecutionError as exc:
        error = exc
    assert list(cwd.iterdir()) == [], "the notebook wrote into its working directory"
    return executed, error


def _error_outputs(executed: Path) -> list[dict]:
    nb = nbformat.read(executed, as_version=4)
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]


def _text_outputs(executed: Path) -> str:
    nb = nbformat.read(executed, as_version=4)
    return "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                     for o in c.get("outputs", []) if o.output_type == "stream")


@pytest.fixture
def kernel_env(monkeypatch):
    # The kernel runs in an empty directory, so make the package importable the way an install would.
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("MPLBACKEND", "Agg")


def test_run_all_on_the_sample_bundle(sample_run):
    """The whole notebook on the small sample bundle (seed 0): the test session's one run of it, through the
    public command (``neutrino-ae run static -p bundle sample``, conftest ``sample_run``), from an empty
    working directory."""
    out = sample_run.out
    executed = out / "static.executed.ipynb"
    assert sample_run.proc.returncode == 0, sample_run.proc.stderr[-3000:]
    assert _error_outputs(executed) == []
    log = _text_outputs(executed)
    assert "WARNING: SYNTHETIC DATA" in log and "bundle: sample" in log

    nb = nbformat.read(executed, as_version=4)
    # Each result once, in the paper's form: the figures each section declares (all of a section
    # that declares none), each shown once; no table inline (they are linked), no repr.
    # (issue 25: each an image/png output, named in its text/plain)
    shown = [Path(o["data"]["text/plain"].removeprefix("[figure] ")).name for c in nb.cells if c.cell_type == "code"
             for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    expected = []
    for sec in registry.sections():
        if sec.notebook_figures:
            expected += [key for key, _ in sec.notebook_figures]
        elif sec.notebook_show is not None:
            expected += [name for name in sec.notebook_show if name.endswith(".png")]
        else:
            expected += [p.name for p in (out / sec.name).glob("*.png")]
    assert sorted(shown) == sorted(expected) and len(set(shown)) == len(shown), shown
    assert {"fig1.png", "fig13a.png", "fig13b.png", "exposed_latency.png", "max_mem.png"} <= set(shown)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not any('class="dataframe"' in o.get("data", {}).get("text/html", "") for o in outputs)
    assert not any(o.output_type == "execute_result" for o in outputs), "a cell printed a repr"
    assert "Full tables and files: [kernel_overhead.csv](" in str(outputs)

    doc = read_summary(out / "summary.json")
    rows = doc["results"]
    assert {r["section"] for r in rows} == set(registry.names())
    for name in registry.names():
        numbers = [r["value"] for r in rows if r["section"] == name and r["value"] is not None]
        assert numbers, f"no numbers for {name}"
    assert {r["bundle_kind"] for r in rows} == {"sample"}
    md = (out / "summary.md").read_text()
    assert md.startswith("Summary of ") and "SYNTHETIC" in md
    assert "| section | paper_ref | key | value | unit | bundle_kind | ground_truth |" in md
    assert md.count("\n| block_sched |") == sum(r["section"] == "block_sched" for r in rows)
    for name in registry.names():
        assert (out / name / runner.RECORD).is_file()

    _check_against_ground_truth(rows, read_manifest(sample_run.traces))

    # Every claim of every section is judged; on the sample bundle all hold, and the verdict says
    # that it checks the pipeline, not the paper.
    verdict = json.loads((out / "verdict.json").read_text())
    declared = {(s.name, c.id) for s in registry.sections() for c in s.claims}
    assert {(c["section"], c["claim"]) for c in verdict["claims"]} == declared and len(declared) >= 12
    assert all(c["status"] == "PASS" for c in verdict["claims"]), [c for c in verdict["claims"]
                                                                  if c["status"] != "PASS"]
    assert verdict["overall"] == "PASS" and "checks the pipeline" in verdict["scope"]
    # ... and it names the trace directories the sections read (issue 23: the newest collection of a folder).
    dirs = verdict["trace_dirs"]
    assert dirs["warp_sched"][-1].startswith("warp_sched/tail/") and len(dirs["warp_sched"]) == 3
    assert dirs["block_sched"][0] == "block_sched/Jan_23_06_27_37_268336"
    assert len(dirs["dmat"]) == 4 and all(d.startswith("dmat/raw/fig") for d in dirs["dmat"])
    assert any("Trace directories read" in str(o.get("data", {})) for c in nb.cells for o in c.get("outputs", []))
    assert "Verdict: PASS" in _text_outputs(executed) or any(
        "Verdict: PASS" in str(o.get("data", {})) for c in nb.cells for o in c.get("outputs", []))

    # Nothing outside trace_root and output_dir (the executed notebook is in output_dir): the working
    # directory stays empty, and nothing was written beside the two folders.
    assert list(sample_run.cwd.iterdir()) == [], "the run wrote into its working directory"
    assert executed.is_file()
    assert {p.name for p in sample_run.dir.iterdir() if p.is_dir()} == {"cwd", "results", "traces"}


def _check_against_ground_truth(rows: list[dict], manifest: dict) -> None:
    """Measured values against what the sample model injected, read straight from bundle.json."""
    truth = manifest["ground_truth"]
    value = {(r["section"], r["key"]): r["value"] for r in rows}

    # Sec. 4.5: scheduling cost per dispatched block ~ the gap injected between a block's end and the
    # next block's start on the same SM. The artifact metric reports cycles per SM; divide by the
    # gaps per SM.
    bs = truth["block_sched"]
    per_sm = value[("block_sched", "raw.mean_scheduling_cycles")]
    per_gap = per_sm * bs["sms_used"] / bs["dispatch_gaps"]
    assert per_gap == pytest.approx(bs["mean_dispatch_gap_cycles"], rel=0.10)
    assert value[("block_sched", "raw.mean_slot_reuse_cycles")] == pytest.approx(bs["scheduling_cycles_per_sm"],
                                                                               rel=0.05)
    assert value[("block_sched", "raw.mean_running_cycles")] == pytest.approx(bs["running_cycles_per_sm"], rel=0.01)
    # the two optimisations of Sec. 4.5 remove most of the scheduling gaps, not all (issue 25): a small
    # cost stays, measured as injected, and the reduction is the injected one
    assert set(bs["variants"]) == {"memset", "persistent"}
    for variant, vt in bs["variants"].items():
        kept = value[("block_sched", f"{variant}.mean_slot_reuse_cycles")]
        assert 0 < vt["scheduling_cycles_per_sm"] < 0.1 * bs["scheduling_cycles_per_sm"], variant
        assert kept == pytest.approx(vt["scheduling_cycles_per_sm"], rel=0.02), variant
        reduction = 1 - vt["scheduling_cycles_per_sm"] / bs["scheduling_cycles_per_sm"]
        assert value[("block_sched", f"{variant}.scheduling_reduction")] == pytest.approx(reduction, abs=0.01)

    # Fig. 1 / 10: every access the model emitted is plotted (no clock cut-off).
    for fig in ("fig1", "fig10a", "fig10b", "fig10c"):
        expected = truth["dmat"].get(fig, {}).get("expected_accesses")
        if expected:
            assert value[("dmat", f"{fig}.accesses")] == sum(expected.values()), fig

    # Table 2: a test may launch several kernels; the table shows the largest extra register count and
    # the median slowdown over all launches, which lies within the kernels' own slowdowns.
    cells: dict[str, list[dict]] = {}
    for row in truth["kernel_overhead"]["rows"]:
        cells.setdefault(f"{row['suite']}.{row['test']}.{row['probe']}", []).append(row)
    for key, kernels in cells.items():
        assert value[("kernel_overhead", f"{key}.extra_registers")] == max(k["extra_regs"] for k in kernels), key
        impacts = [k["mean_impact"] for k in kernels]
        assert min(impacts) * 0.9 <= value[("kernel_overhead", f"{key}.slowdown")] <= max(impacts) * 1.1, key

    # Fig. 12: Neutrino and Nsight Compute time over the original run.
    for workload, t in truth["exposed_latency"].items():
        for probe, ratio in t["neutrino_over_original"].items():
            assert value[("exposed_latency", f"{workload}.{probe}.neutrino_ratio")] == pytest.approx(ratio, rel=0.01)
        for probe, ratio in t["ncu_over_original"].items():
            assert value[("exposed_latency", f"{workload}.{probe}.ncu_ratio")] == pytest.approx(ratio, rel=0.01)

    # Whatever else the analyses matched to ground truth themselves must agree too, except the artifact's
    # FIFO metric on the memset's short blocks: it estimates the injected gaps with a bias there by design
    # (docs/sample-model.md; the fifo-truth claim judges it on the raw kernel only).
    biased = {"memset.mean_scheduling_cycles", "memset.scheduling_ratio", "memset.scheduling_cycles_per_dispatch"}
    for r in rows:
        if r["section"] == "block_sched" and r["key"] in biased:
            continue
        if r["ground_truth"] is not None and r["value"] is not None:
            assert r["value"] == pytest.approx(r["ground_truth"], rel=0.10, abs=1e-6), (r["section"], r["key"])


def test_single_section_from_a_fresh_trace_root(tiny_bundle, tmp_path):
    """One section, from a fresh trace root, with ``sections`` as papermill's command line hands a YAML list
    over (``-y 'sections: [dmat]'``, a real list; its ``-p`` string form: tests/run/test_papermill_parameters.py),
    from an empty working directory."""
    fresh = tmp_path / "traces"
    shutil.copytree(tiny_bundle, fresh)
    out = tmp_path / "results"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    executed = tmp_path / "executed.ipynb"
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-m", "papermill", "--no-progress-bar", "-k", "python3", str(NOTEBOOK),
                           str(executed), "--cwd", str(cwd), "-y", "sections: [dmat]", "-p", "bundle", "auto",
                           "-p", "trace_root", str(fresh), "-p", "output_dir", str(out), "-p", "workers", "0"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, f"notebook failed: {proc.stderr[-2000:]}"
    assert list(cwd.iterdir()) == [], "the notebook wrote into its working directory"
    assert _error_outputs(executed) == []
    log = _text_outputs(executed)
    assert "bundle: sample" in log and "WARNING: SYNTHETIC DATA" in log, "auto found the sample bundle and says so"
    assert "sections: dmat" in log
    for name in registry.names():
        if name != "dmat":
            assert f"{name}: skipped (not in sections)" in log
    rows = read_summary(out / "summary.json")["results"]
    assert rows and {r["section"] for r in rows} == {"dmat"}
    assert sorted(p.name for p in out.iterdir()) == [".neutrino-ae.lock", "dmat", "run.log", "summary.json",
                                                     "summary.md", "verdict.json"]
    assert {p.name for p in (out / "dmat").glob("*.png")} == {"fig1.png", "fig10a.png", "fig10b.png", "fig10c.png"}
    assert not (out / "block_sched").exists()


def test_a_section_with_missing_input_fails_alone(tiny_bundle, tmp_path, kernel_env):
    # exposed_latency has lost a CSV, so its input check fails; kernel_overhead (cheap) still runs,
    # the summary is written, then the run stops naming the failed section.
    fresh = tmp_path / "traces"
    shutil.copytree(tiny_bundle, fresh, ignore=shutil.ignore_patterns("max_mem", "dmat", "warp_sched", "block_sched"))
    (fresh / "exposed_latency" / "gmm.csv").unlink()
    reseal(fresh)  # the bundle as made without it (else the run refuses it: tests/bundle/test_bundle_trust.py)
    out = tmp_path / "results"
    # workers=0: no worker processes to start (they compute sections ahead: tests/run/test_notebook_facade.py)
    executed, error = _execute(tmp_path, bundle="auto", trace_root=str(fresh), output_dir=str(out),
                               sections=["exposed_latency", "kernel_overhead"], workers=0)
    assert error is not None and error.ename == "NotebookStop"
    missing = fresh / "exposed_latency" / "gmm.csv"
    assert "1 section(s) failed" in error.evalue and f"exposed_latency: {missing}: missing" in error.evalue
    nb = nbformat.read(executed, as_version=4)
    failed = [c.id for c in nb.cells if c.cell_type == "code" and any(o.output_type == "error" for o in c.outputs)]
    assert failed == ["summary"], "the section reports one line and the run goes on to the summary"
    assert f"exposed_latency: FAILED: {missing}: missing" in _text_outputs(executed)
    doc = read_summary(out / "summary.json")
    assert {r["section"] for r in doc["results"]} == {"kernel_overhead"}
    assert set(doc["failed_sections"]) == {"exposed_latency"}
    assert "Failed sections" in (out / "summary.md").read_text()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_paper_bundle_without_network_stops_with_one_clear_message(tmp_path, kernel_env):
    url = f"http://127.0.0.1:{_closed_port()}/trace.zip"
    executed, error = _execute(tmp_path, bundle="paper", trace_root=str(tmp_path / "traces"),
                               output_dir=str(tmp_path / "results"), bundle_url=url)
    assert error is not None, "the set-up cell must stop the run"
    assert error.ename == "NotebookNetworkError"  # the network: `neutrino-ae run` exits 4 for it
    assert url in error.evalue and 'bundle="sample"' in error.evalue
    errors = _error_outputs(executed)
    assert len(errors) == 1
    assert errors[0].traceback == [f"NotebookNetworkError: {error.evalue}"], "one line, no traceback"
    nb = nbformat.read(executed, as_version=4)
    failed = [c for c in nb.cells if c.cell_type == "code" and any(o.output_type == "error" for o in c.outputs)]
    assert failed[0].id == "setup"
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*.json"))
    # the last cell repeats the stop (the set-up guard: every cell between does nothing), hint included
    stop = f"Set-up stopped, so no cell after it ran: NotebookNetworkError: {error.evalue}"
    assert [o.text.strip() for o in nb.cells[-1].outputs] == [stop]
    assert [c.id for c in nb.cells if c.cell_type == "code" and c.outputs and c.id != "summary"] == ["setup"]
    assert not re.search(r"\bsynthetic\b", _text_outputs(executed).replace(stop, ""), re.I), \
        "must not fall back to sample data"
    assert json.dumps(error.evalue).count("\\n") == 0
