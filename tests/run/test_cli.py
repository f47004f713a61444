"""CLI wiring: run (real papermill on throwaway notebooks), sample, fetch, help and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest

from neutrino_ae import cli
from neutrino_ae.bundle.manifest import read_manifest, write_manifest
from neutrino_ae.run.papermill import package_repo_root, parse_parameter

PARAMS = 'bundle = "auto"\nsections = None\noutput_dir = "results"\ntrace_root = "traces"\nn = 0\n'
RECORD = (
    "import json, os, pathlib\n"
    "pathlib.Path(output_dir, 'seen.json').write_text(json.dumps(\n"
    "    {'bundle': bundle, 'sections': sections, 'trace_root': trace_root, 'n': n, 'cwd': os.getcwd()}))\n"
)


def make_notebook(path: Path, *cells: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    params = nbformat.v4.new_code_cell(PARAMS)
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, *(nbformat.v4.new_code_cell(c) for c in cells)]
    nbformat.write(nb, path)
    return path


def test_parse_parameter() -> None:
    assert parse_parameter('["dmat"]') == ["dmat"]
    assert parse_parameter("sample") == "sample"
    assert parse_parameter("3") == 3 and parse_parameter("0.5") == 0.5
    assert parse_parameter("true") is True and parse_parameter("False") is False
    assert parse_parameter("None") is None and parse_parameter("null") is None
    assert parse_parameter("['a', 'b']") == ["a", "b"]
    assert parse_parameter("[dmat]") == "[dmat]"
    assert parse_parameter("traces/x") == "traces/x"


def test_run_injects_parameters_and_saves_executed_notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    nb = make_notebook(tmp_path / "tiny.ipynb", RECORD)
    monkeypatch.chdir(tmp_path)
    code = cli.main(["run", "static", "--notebook", str(nb), "-p", "bundle", "sample", "-p", "n", "7",
                     "--sections", "dmat,block_sched", "--trace-root", "tr", "--output-dir", "out"])
    assert code == 0, capsys.readouterr().err
    # run from tmp_path: the executed notebook is named relative to the working directory
    assert capsys.readouterr().out.strip() == "out/tiny.executed.ipynb"
    executed = tmp_path / "out" / "tiny.executed.ipynb"
    seen = json.loads((tmp_path / "out" / "seen.json").read_text())
    assert seen["bundle"] == "sample" and seen["n"] == 7
    assert seen["sections"] == ["dmat", "block_sched"]
    assert seen["trace_root"] == str(tmp_path / "tr")  # resolved against the caller's cwd
    assert seen["cwd"] == str(package_repo_root() or tmp_path)
    injected = [c for c in nbformat.read(executed, as_version=4).cells
                if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and f'output_dir = "{tmp_path / "out"}"' in injected[0].source
    # plus the hidden lock file that keeps a second run out of the folder, run.log, the run's log beside its
    # results, and the published set's generation with the pointer to it (run/publish.py)
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert [n for n in names if not n.startswith(".neutrino-ae.gen-")] == [
        ".neutrino-ae.current", ".neutrino-ae.lock", "run.log", "seen.json", "tiny.executed.ipynb"]
    assert len(names) == 6 and (tmp_path / "out" / "seen.json").is_symlink()


def test_failing_cell_exits_1_with_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nb = make_notebook(tmp_path / "bad.ipynb", "x = 1", "raise RuntimeError('no trace bundle here')\n", "y = 2")
    code = cli.main(["-q", "run", "dynamic", "--notebook", str(nb), "--output-dir", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("error: bad.ipynb: cell [4] failed: RuntimeError: no trace bundle here")
    assert err.count("\n") == 1
    # Without -q the progress lines (INFO) come first; the error is still one line, the last.
    code = cli.main(["run", "dynamic", "--notebook", str(nb), "--output-dir", str(tmp_path / "out2")])
    lines = capsys.readouterr().err.splitlines()
    assert code == 1 and lines[0].startswith("executing bad.ipynb")
    assert lines[-1].startswith("error: bad.ipynb: cell [4] failed: RuntimeError: no trace bundle here")
    assert (tmp_path / "out" / "bad.failed.ipynb").is_file()  # beside, never in place of, a good run's
    assert not (tmp_path / "out" / "bad.executed.ipynb").exists()
    assert not list((tmp_path / "out").glob(".*running*"))


def test_run_missing_notebook_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "static", "--notebook", str(tmp_path / "nope.ipynb")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'nope.ipynb'}: notebook not found\n"


def test_sample_subcommand_delegates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    calls = []

    def generate_bundle(out, scale="small", seed=0, progress=True):
        calls.append((Path(out), scale, seed))
        Path(out).mkdir(parents=True, exist_ok=True)
        write_manifest(out, "sample", scale=scale, seed=seed)
        return Path(out)

    monkeypatch.setitem(sys.modules, "neutrino_ae.sample",
                        types.SimpleNamespace(generate_bundle=generate_bundle))
    out = tmp_path / "traces"
    assert cli.main(["sample", "--out", str(out), "--seed", "4"]) == 0
    assert cli.main(["sample", "--out", str(out), "--seed", "4"]) == 0  # reused
    assert [c[1:] for c in calls] == [("small", 4)]
    assert cli.main(["sample", "--out", str(out), "--seed", "4", "--force", "--scale", "paper"]) == 0
    assert calls[-1][1:] == ("paper", 4) and read_manifest(out)["scale"] == "paper"
    assert capsys.readouterr().out.splitlines() == [str(out)] * 3


def test_fetch_unreachable_exits_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    from neutrino_ae.bundle import download
    monkeypatch.setattr(download, "_sleep", lambda s: None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/trace.zip"
    # 4: the network, not bad input (issue 23 item 12); tests/run/test_exit_codes.py has the rest.
    assert cli.main(["fetch", "--trace-root", str(tmp_path / "t"), "--url", url]) == 4
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1
    assert lines[0].startswith(f"error: {url}: could not connect after 3 attempts (")
    assert "Connection refused" in lines[0]


def test_bad_usage_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "nonsense"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_python_dash_m_help() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for args in ([], ["sample"], ["fetch"], ["run"], ["compare"]):
        proc = subprocess.run([sys.executable, "-m", "neutrino_ae", *args, "--help"], capture_output=True,
                              text=True, timeout=60, env=env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("usage: neutrino-ae")


def test_run_points_at_summary_and_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    writes = (
        "import pathlib\n"
        "from neutrino_ae.report.results.summary import summary_row, write_summary\n"
        "out = pathlib.Path(output_dir)\n"
        "(out / 'dmat').mkdir()\n"
        "(out / 'dmat' / 'fig1.png').write_bytes(b'png')\n"
        "write_summary(out, [summary_row('dmat', 'fig1.accesses', 3, bundle_kind='sample'),\n"
        "                    summary_row('dmat', 'fig1.pages', 1, bundle_kind='sample')])\n"
    )
    nb = make_notebook(tmp_path / "nb.ipynb", writes)
    out = tmp_path / "out"
    assert cli.main(["run", "static", "--notebook", str(nb), "--output-dir", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == [str(out / "nb.executed.ipynb"),
                     f"summary: {out / 'summary.json'} (2 results, bundle kind sample) (SYNTHETIC sample data)",
                     f"figures: 1 PNG files under {out}"]


def test_the_injected_parameters_name_no_folder_of_this_machine_inside_the_checkout(tmp_path, capsys):
    """Issue 37 item 8: the injected-parameters cell showed ``output_dir = "/home/.../results/static"``.
    A folder inside the checkout (where the kernel runs) is injected relative to it; the run still writes
    there. One outside it stays absolute (the kernel needs it)."""
    root = package_repo_root()
    if root is None:
        pytest.skip("not a source checkout")
    import uuid

    out = root / "results" / f".test-injected-{uuid.uuid4().hex[:8]}"
    traces = root / "results" / f".test-traces-{uuid.uuid4().hex[:8]}"
    nb = make_notebook(tmp_path / "tiny.ipynb", RECORD)
    try:
        traces.mkdir(parents=True)
        code = cli.main(["-q", "run", "static", "--notebook", str(nb), "--output-dir", str(out),
                         "--trace-root", str(traces)])
        assert code == 0, capsys.readouterr().err
        seen = json.loads((out / "seen.json").read_text())
        assert seen["trace_root"] == traces.relative_to(root).as_posix() and seen["cwd"] == str(root)
        cell = next(c for c in nbformat.read(out / "tiny.executed.ipynb", as_version=4).cells
                    if "injected-parameters" in c.metadata.get("tags", []))
        assert f'output_dir = "{out.relative_to(root).as_posix()}"' in cell.source
        assert str(root) not in cell.source, cell.source
        assert str(root) not in (out / "tiny.executed.ipynb").read_text()  # papermill's metadata neither
    finally:
        import shutil

        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(traces, ignore_errors=True)
