"""Both notebooks opened in a plain Jupyter kernel whose Python lacks the project: the first code
cell stops with one actionable line (which kernel to pick, or the command that installs it), not a
ModuleNotFoundError traceback from deep inside a later cell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest
from papermill_run import execute_notebook

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plain_kernel(tmp_path_factory) -> tuple[str, Path]:
    """A Jupyter kernel on a fresh virtual environment that sees ipykernel and the scientific stack
    but not the project: the project's env's site-packages are on its path as a plain folder, so the
    editable install's .pth hook is not run (as in a kernel of another env that has ipykernel)."""
    tmp = tmp_path_factory.mktemp("plain-kernel")
    env = tmp / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    python = env / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib).mkdir(parents=True, exist_ok=True)
    (Path(purelib) / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # As the kernel will run (the test drops PYTHONPATH): an inherited one would make the project importable.
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run([str(python), "-c", "import ipykernel, pandas; import neutrino_ae"], cwd=tmp,
                           capture_output=True, text=True, check=False, env=clean)
    assert "No module named 'neutrino_ae'" in probe.stderr, probe.stderr  # the setting the test needs
    spec = tmp / "jupyter" / "kernels" / "plain"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "plain Python without the project", "language": "python"}))
    return "plain", tmp / "jupyter"


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
