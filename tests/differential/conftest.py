"""The artifact's own scripts, extracted from its tarball at test time and run beside ours.

Nothing of the artifact is copied into the repo: ``artifact_tree`` extracts the tarball once per
test run (shared by the xdist workers, tests/shared_build.py) into a temporary folder, and
``artifact_dmat`` builds its ``dmat.cc`` there, also once, with the
system C++ compiler, the way its ``dmat.py`` does (``g++ -O3 -std=c++17``). Without the tarball or
a compiler the differential tests skip, naming what is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from neutrino_source import extract_tree, missing_reason
from shared_build import build_once

from .script_server import ScriptServer


@pytest.fixture(scope="session")
def artifact_tree(tmp_path_factory) -> Path:
    reason = missing_reason("artifact")
    if reason:
        pytest.skip(reason)
    folder = build_once(tmp_path_factory, "artifact-tree", lambda f: extract_tree("artifact", f / "x"))
    (root,) = [p for p in (folder / "x").iterdir() if (p / "neutrino" / "__init__.py").is_file()]
    return root  # read only: tests run the artifact's scripts from it and never write into it


@pytest.fixture(scope="session")
def artifact_dmat(artifact_tree: Path, tmp_path_factory) -> Path:
    """The artifact's sparsifier binary (``neutrino/tools/dmat.cc``), built as its ``dmat.py`` builds it."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler (g++ or c++) on PATH to build the artifact's dmat.cc")
    src = artifact_tree / "neutrino" / "tools" / "dmat.cc"
    exe = src.with_suffix("")
    build_once(tmp_path_factory, "artifact-dmat", lambda _: subprocess.run(
        [cxx, str(src), "-o", str(exe), "-O3", "-std=c++17"], check=True, capture_output=True))
    return exe


@pytest.fixture(scope="session")
def artifact_python(artifact_tree: Path):
    """Runs the artifact's Python scripts (``PYTHONPATH`` = its tree, as its notebook has it) in one
    interpreter kept for the session: see script_server.py."""
    server = ScriptServer({"PYTHONPATH": str(artifact_tree)})
    yield server
    server.close()
