"""The artifact's own scripts, extracted from its tarball at test time and run beside ours.

Nothing of the artifact is copied into the repo: ``artifact_tree`` extracts the tarball once per
test session into a temporary folder, and ``artifact_dmat`` builds its ``dmat.cc`` there with the
system C++ compiler, the way its ``dmat.py`` does (``g++ -O3 -std=c++17``). Without the tarball or
a compiler the differential tests skip, naming what is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from neutrino_source import extract_tree, missing_reason


@pytest.fixture(scope="session")
def artifact_tree(tmp_path_factory) -> Path:
    reason = missing_reason("artifact")
    if reason:
        pytest.skip(reason)
    return extract_tree("artifact", tmp_path_factory.mktemp("neutrino-artifact"))


@pytest.fixture(scope="session")
def artifact_dmat(artifact_tree: Path) -> Path:
    """The artifact's sparsifier binary (``neutrino/tools/dmat.cc``), built as its ``dmat.py`` builds it."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler (g++ or c++) on PATH to build the artifact's dmat.cc")
    src = artifact_tree / "neutrino" / "tools" / "dmat.cc"
    exe = src.with_suffix("")
    subprocess.run([cxx, str(src), "-o", str(exe), "-O3", "-std=c++17"], check=True, capture_output=True)
    return exe
