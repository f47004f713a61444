"""The artifact's side of the end-to-end benchmarks (:mod:`benchmarks.e2e`): its snapshot extracted into the
cache (once per tarball), ``dmat.cc`` built with g++, and the command line and outputs of its own
``block_sched.py`` / ``dmat.py``; without the tarball (or g++) the side is skipped and says why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.cases import e2egen
from benchmarks.e2e_cases import E2ECase
from benchmarks.measure import REPO_ROOT
from neutrino_ae.bundle.manifest import sha256_file

#: The artifact snapshot: ``../shared/neutrino-src`` beside the checkout, or ``$NEUTRINO_SRC`` (as the tests).
DEFAULT_ARTIFACT = Path(os.environ.get("NEUTRINO_SRC", REPO_ROOT.parent / "shared" / "neutrino-src")) \
    / "neutrino-artifact.tar.gz"


@dataclass
class Artifact:
    tree: Path | None  # the extracted neutrino-artifact/ folder
    note: str | None  # why the artifact side is skipped (None: available)
    dmat_note: str | None = None  # why the artifact DMAT side is skipped (no g++, build failed)
    build_seconds: float | None = None
    tarball: str | None = None


def prepare_artifact(tarball: Path, cache: Path, need_dmat: bool) -> Artifact:
    """Extract the artifact snapshot into the cache (once per tarball) and build ``dmat.cc`` with g++."""
    if not tarball.is_file():
        return Artifact(None, f"artifact side skipped: {tarball} not found (../shared absent)")
    digest = sha256_file(tarball)[:16]
    root = cache / f"artifact-{digest}"
    tree = root / "neutrino-artifact"
    if not (root / ".complete").exists():
        shutil.rmtree(root, ignore_errors=True)
        tmp = cache / f".artifact-{digest}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with tarfile.open(tarball) as tf:
            tf.extractall(tmp, filter="data")
        (tmp / ".complete").write_text(f"{tarball}\n")
        os.replace(tmp, root)
    art = Artifact(tree, None, tarball=str(tarball))
    if not (tree / "neutrino" / "tools" / "block_sched.py").is_file():
        return Artifact(None, f"artifact side skipped: {tarball} has no neutrino/tools/block_sched.py")
    if need_dmat:
        tools = tree / "neutrino" / "tools"
        gxx = shutil.which("g++")
        if gxx is None:
            art.dmat_note = "artifact DMAT skipped: g++ not found (needed to build neutrino/tools/dmat.cc)"
            return art
        # Built at benchmark time, where the artifact's dmat.py looks for it (it builds it itself when absent).
        binary = tools / "dmat"
        binary.unlink(missing_ok=True)
        t0 = time.perf_counter()
        proc = subprocess.run([gxx, str(tools / "dmat.cc"), "-o", str(binary), "-O3", "-std=c++17"],
                              capture_output=True, text=True)
        art.build_seconds = time.perf_counter() - t0
        if proc.returncode != 0 or not binary.is_file():
            art.dmat_note = f"artifact DMAT skipped: g++ failed: {proc.stderr.strip()[-300:]}"
    return art


def artifact_command(case: E2ECase, art: Artifact, inp: Path, scratch: Path) -> tuple[list[str], dict[str, str]]:
    """argv and environment of the artifact's own script on ``inp`` (its outputs land in ``scratch``)."""
    assert art.tree is not None
    env = dict(os.environ)
    env["PYTHONPATH"] = str(art.tree)  # `from neutrino import TraceHeader`
    tools = art.tree / "neutrino" / "tools"
    if case.artifact == "block_sched":
        return [sys.executable, str(tools / "block_sched.py"), str(inp / "trace.bin")], env
    # dmat.py writes <trace>.dmat and <trace>.png beside the trace (and reuses an existing .dmat), and
    # reads ../event.log and ../tensor.trace: it gets a scratch trace directory linking to the input.
    src = e2egen.dmat_random_result(inp)
    tdir = scratch / "trace" / src.parent.parent.name
    (tdir / "result").mkdir(parents=True, exist_ok=True)
    for name in ("event.log", "tensor.trace"):
        (tdir / name).symlink_to(src.parent.parent / name)
    link = tdir / "result" / src.name
    link.symlink_to(src)
    return [sys.executable, str(tools / "dmat.py"), str(link)], env


def artifact_outputs(case: E2ECase, scratch: Path, stdout: str) -> dict[str, Any]:
    if case.artifact == "block_sched":
        line = next((ln for ln in stdout.splitlines() if ln.startswith("No.block:")), None)
        if line is None:
            raise RuntimeError("artifact block_sched printed no 'No.block:' line")
        return {"line": line}
    pngs = sorted(scratch.rglob("*.png"))
    dmats = sorted(scratch.rglob("*.dmat"))
    if not pngs or not dmats:
        raise RuntimeError("artifact dmat wrote no .dmat/.png")
    return {"png_bytes": pngs[0].stat().st_size, "dmat_bytes": dmats[0].stat().st_size}
