"""A Jupyter kernel whose Python lacks the project, as a reviewer's own Jupyter starts it: a fresh venv that sees
ipykernel and the scientific stack (this env's site-packages as a plain folder on its path, so the editable
install's .pth hook does not run) but not ``neutrino_ae``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

NAME = "plain"


def make_plain_kernel(folder: Path) -> Path:
    """Make the kernel's venv in ``folder / "env"`` and its kernelspec :data:`NAME`; return the JUPYTER_PATH
    folder holding that kernelspec (``folder / "jupyter"``)."""
    env = folder / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    python = env / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib).mkdir(parents=True, exist_ok=True)
    (Path(purelib) / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # As the kernel runs (without PYTHONPATH: an inherited one would make the project importable).
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run([str(python), "-c", "import ipykernel, pandas; import neutrino_ae"], cwd=folder,
                           capture_output=True, text=True, check=False, env=clean)
    assert "No module named 'neutrino_ae'" in probe.stderr, probe.stderr  # the setting the tests need
    spec = folder / "jupyter" / "kernels" / NAME
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "plain Python without the project", "language": "python"}))
    return folder / "jupyter"
