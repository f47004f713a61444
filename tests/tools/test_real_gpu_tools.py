"""The real-GPU session's own tools, checked here without a GPU: the ptxas wrapper Triton is pointed at
and the packer that brings traces back within the machine's file limits."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from neutrino_ae.formats.bintrace import TraceHeader, open_trace
from neutrino_ae.formats.bintrace_write import write_trace

REPO = Path(__file__).resolve().parents[2]
WRAPPER = REPO / "tools" / "real_gpu" / "ptxas_with_ptx.sh"


def _stub(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def _run_wrapper(tmp_path: Path, ptx_text: str) -> tuple[bytes, str]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # ptxas writes a "cubin"; fatbinary writes its --create file from the images it was given
    real = _stub(tmp_path / "ptxas", 'while [ $# -gt 0 ]; do [ "$1" = -o ] && { shift; echo CUBIN > "$1"; }; '
                                     "shift; done\n")
    _stub(bindir / "fatbinary", 'out=; for a; do case "$a" in --create=*) out=${a#--create=} ;; esac; done\n'
                                'for a; do case "$a" in --image3=*) f=${a##*file=}; echo "IMAGE ${a#--image3=}"; '
                                'cat "$f" ;; esac; done > "$out"\n')
    src = tmp_path / "k.ptx"
    src.write_text(ptx_text)
    env = {**os.environ, "REAL_PTXAS": str(real), "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run([str(WRAPPER), "-lineinfo", "-v", "--gpu-name=sm_90a", str(src), "-o", str(tmp_path / "k.cubin")],
                   check=True, env=env)
    return (tmp_path / "k.cubin").read_bytes(), (tmp_path / "k.cubin").read_text()


def test_the_wrapper_puts_the_ptx_beside_the_cubin(tmp_path):
    _, text = _run_wrapper(tmp_path, ".version 8.0\n.target sm_90a\n.entry spin() { ret; }\n")
    assert "IMAGE kind=elf,sm=90a" in text and "CUBIN" in text
    assert "IMAGE kind=ptx,sm=90," in text and ".target sm_90\n" in text  # re-assemblable with -arch=sm_90


def test_sm_90a_only_ptx_keeps_its_target(tmp_path):
    _, text = _run_wrapper(tmp_path, ".target sm_90a\n.entry k() { wgmma.fence.sync.aligned; ret; }\n")
    assert "IMAGE kind=ptx,sm=90a," in text and ".target sm_90a" in text


def test_the_packer_slices_big_traces_and_lists_what_it_kept(tmp_path):
    session = importlib.import_module("tools.real_gpu.session")  # as `python3 -m tools.real_gpu.session` runs it
    root = tmp_path / "case"
    (root / "trace" / "Nov26_220244_562" / "result").mkdir(parents=True)
    (root / "trace" / "Nov26_220244_562" / "event.log").write_text("[pid] 1\n")
    h = TraceHeader((1000, 1, 1), (128, 1, 1))
    rec = np.arange(1000 * 4 * 2, dtype=np.uint64).reshape(1000, 4, 2)
    write_trace(root / "trace" / "Nov26_220244_562" / "result" / "0.5.bin", h, [("warp", rec)])
    (root / "big.log").write_bytes(b"x" * 5000)
    out = tmp_path / "out"
    out.mkdir()
    s = session.Session(out, budget=60, slice_bytes=10_000)
    s.pack("case", [root], max_file=4000)
    with tarfile.open(out / "case.tgz") as tar:
        names = tar.getnames()
        manifest = tar.extractfile("case/MANIFEST").read().decode()
        tar.extractall(tmp_path / "x", filter="data")
    assert "case/case/trace/Nov26_220244_562/result/0.5.bin" in names and "case/case/big.log" not in names
    assert "SLICED" in manifest and "first 156 of 1000 blocks" in manifest
    assert "LEFT OUT case/case/big.log 5000" in manifest
    cut = open_trace(tmp_path / "x" / "case" / "case" / "trace" / "Nov26_220244_562" / "result" / "0.5.bin")
    np.testing.assert_array_equal(cut.records(0, "<u8"), rec[:156])


@pytest.mark.parametrize("name", ["session", "keep"])
def test_the_gpu_scripts_run_as_modules_and_say_so_when_run_as_files(name):
    as_file = subprocess.run([sys.executable, str(REPO / "tools" / "real_gpu" / f"{name}.py"), "--help"], cwd=REPO,
                             capture_output=True, text=True, timeout=60)
    assert as_file.returncode == 1
    assert as_file.stderr == f"error: run from the repository root as: python3 -m tools.real_gpu.{name} ...\n"
    as_module = subprocess.run([sys.executable, "-m", f"tools.real_gpu.{name}", "--help"], cwd=REPO,
                               capture_output=True, text=True, timeout=60)
    assert as_module.returncode == 0 and as_module.stdout.startswith("usage:"), as_module.stderr
