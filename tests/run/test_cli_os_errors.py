"""Every command line ends an OS error on a user path (a file where a folder is expected, a folder
below a file) with one ``error:`` line and exit code 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    base = tmp_path_factory.mktemp("oserr")
    afile = base / "afile"
    afile.write_text("not a folder\n")
    return {"file": afile, "below": afile / "sub"}


CASES = [
    ("sample --out {below}", ["sample", "--out", "{below}"]),
    ("sample --out {file}", ["sample", "--out", "{file}"]),
    ("fetch --trace-root {file}", ["fetch", "--trace-root", "{file}"]),
    ("run static --output-dir {below}", ["run", "static", "-p", "bundle", "sample", "--output-dir", "{below}"]),
    ("compare {file} {below}", ["compare", "{file}", "{below}"]),
]


@pytest.mark.parametrize("argv", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_one_error_line_and_exit_2(paths, argv):
    args = [a.format(**{k: str(v) for k, v in paths.items()}) for a in argv]
    proc = subprocess.run([sys.executable, "-m", "neutrino_ae", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=False)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and str(paths["file"]) in errors[0], proc.stderr[-2000:]
