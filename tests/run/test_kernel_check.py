"""Both notebooks opened in a plain Jupyter kernel whose Python lacks the project: the first code
cell stops with one actionable line (which kernel to pick, or the command that installs it), not a
ModuleNotFoundError traceback from deep inside a later cell."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from papermill_run import execute_notebook
from plain_kernel import NAME, make_plain_kernel

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plain_kernel(tmp_path_factory) -> tuple[str, Path]:
    return NAME, make_plain_kernel(tmp_path_factory.mktemp("plain-kernel"))


@pytest.mark.parametrize("notebook", ["static.ipynb", "dynamic.ipynb"])
def test_a_kernel_without_the_project_gets_one_line(plain_kernel, notebook, tmp_path, monkeypatch):
    from papermill.exceptions import PapermillExecutionError

    name, jupyter_path = plain_kernel
    monkeypatch.setenv("JUPYTER_PATH", str(jupyter_path))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    executed = tmp_path / "executed.ipynb"
    with pytest.raises(PapermillExecutionError) as info:
        execute_notebook(str(REPO / notebook), str(executed), cwd=str(cwd), kernel_name=name,
                                   progress_bar=False)
    assert info.value.ename == "KernelLacksProject"
    message = info.value.evalue
    assert "cannot import neutrino_ae" in message and "\n" not in message
    assert "'neutrino-ae'" in message and "ipykernel install --user --name neutrino-ae" in message
    assert f"{jupyter_path.parent / 'env' / 'bin' / 'python'} -m pip install -e" in message
    nb = nbformat.read(executed, as_version=4)
    errors = [(c.id, o) for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert len(errors) == 1 and errors[0][0] == "kernel-check", "the first code cell stops the run"
    assert errors[0][1].traceback == [f"KernelLacksProject: {message}"], "one line, no traceback"
