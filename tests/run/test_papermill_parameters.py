"""Both notebooks take ``sections`` the way papermill users pass it: a list (``-p sections
'["dmat"]'``, papermill's ``-p`` hands that over as a string; ``-y 'sections: [dmat]'``, a real list)
or the command line's comma string (``dmat,max_mem``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from neutrino_ae.report.section import NotebookInputError
from neutrino_ae.run.notebook_setup import section_names

REPO = Path(__file__).resolve().parents[2]
PAPERMILL = [sys.executable, "-m", "papermill", "--no-progress-bar", "-k", "python3"]


@pytest.mark.parametrize("value, expected", [
    ('["dmat"]', ["dmat"]),
    ("['warp_sched', 'dmat']", ["dmat", "warp_sched"]),
    ("[dmat, max_mem]", ["dmat", "max_mem"]),  # YAML's flow list, written as text
    ('("block_sched",)', ["block_sched"]),
    ("dmat,max_mem", ["dmat", "max_mem"]),
    (["max_mem"], ["max_mem"]),
])
def test_a_list_or_a_comma_string(value, expected):
    assert section_names(value) == expected


def test_a_list_text_naming_an_unknown_section_names_it():
    with pytest.raises(NotebookInputError, match="unknown section 'fig13'"):
        section_names('["dmat", "fig13"]')


def _papermill(notebook: str, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, str]:
    out_nb = tmp_path / "out.ipynb"
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}
    proc = subprocess.run([*PAPERMILL, str(REPO / notebook), str(out_nb), "--cwd", str(REPO), *args],
                          capture_output=True, text=True, env=env, timeout=600)
    text = ""
    if out_nb.is_file():
        nb = nbformat.read(out_nb, as_version=4)
        text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    return proc, text


# papermill's -p form (a string); its -y form (a real list) is tests/run/test_static_notebook.py's
# test_single_section_from_a_fresh_trace_root, one run of the notebook for both.
@pytest.mark.parametrize("form", [["-p", "sections", '["dmat"]']])
def test_static_notebook_takes_a_papermill_list(form, tiny_bundle, tmp_path):
    traces = tmp_path / "traces"
    shutil.copytree(tiny_bundle, traces)
    out = tmp_path / "results"
    proc, text = _papermill("static.ipynb", tmp_path, *form, "-p", "bundle", "auto", "-p", "trace_root", str(traces),
                            "-p", "output_dir", str(out), "-p", "workers", "0")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "sections: dmat" in text and "block_sched: skipped (not in sections)" in text
    assert {p.name for p in (out / "dmat").glob("*.png")} == {"fig1.png", "fig10a.png", "fig10b.png", "fig10c.png"}
    assert not (out / "block_sched").exists()


def test_dynamic_notebook_takes_a_papermill_list(tmp_path):
    proc, text = _papermill("dynamic.ipynb", tmp_path, "-p", "sections", '["dmat", "max_mem"]',
                            "-p", "output_dir", str(tmp_path / "res"), "-p", "trace_root", str(tmp_path / "traces"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "sections: dmat, max_mem" in text
    assert "block_sched: not selected" in text and "warp_sched: not selected" in text
