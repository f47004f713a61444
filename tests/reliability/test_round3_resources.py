"""Issue 36, resources: every reader that allocates in proportion to a header's counts checks the memory
available first (one line, exit 5, as DMAT), and the temp files of a killed section worker are removed
and never counted as figures. Through the public commands."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from faultkit import REPO, cli_env, toy_section

from neutrino_ae.formats.bintrace import HEADER_BYTES, HEADER_DTYPE

#: ``ulimit -v`` for the memory cases: enough to start and map the 2 GiB trace, far too little to analyse it.
LIMIT = 3_000_000_000


def _sparse_trace(tiny_bundle: Path, dest: Path, size: int = 2 << 30) -> Path:
    """A trace folder whose result is a ``size``-byte sparse file with a valid header: the tiny sample's
    block_sched trace with its grid stretched to fill the file (every record zero past the header)."""
    src = next((tiny_bundle / "block_sched").glob("Jan_*"))
    dest.mkdir()
    for name in ("probe.toml", "event.log"):
        (dest / name).write_bytes((src / name).read_bytes())
    (dest / "result").mkdir()
    raw = next((src / "result").glob("*.bin")).read_bytes()
    header = np.frombuffer(raw[:HEADER_BYTES], dtype=HEADER_DTYPE).copy()
    per_block = (len(raw) - HEADER_BYTES - 16) // int(header["grid_x"][0])
    header["grid_x"] = (size - HEADER_BYTES - 16) // per_block
    with open(dest / "result" / "0.5.bin", "wb") as fh:
        fh.write(header.tobytes() + raw[HEADER_BYTES:HEADER_BYTES + 16])
        fh.truncate(HEADER_BYTES + 16 + int(header["grid_x"][0]) * per_block)
    return dest


def _limited(argv: list, cwd: Path) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))

    return subprocess.run(argv, cwd=cwd, env=cli_env(), text=True, capture_output=True, stdin=subprocess.DEVNULL,
                          timeout=300, check=False, preexec_fn=limit)


def _refused_for_memory(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 5 and len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith("error: ") and "not enough memory" in lines[0] and "RLIMIT_AS" in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("how", ["block_sched.py", "export perfetto", "fig13cd.py"])
def test_a_huge_sparse_trace_with_a_valid_header_is_refused_for_memory(tiny_bundle, tmp_path, how):
    trace = _sparse_trace(tiny_bundle, tmp_path / "trace")
    argv = {"block_sched.py": [sys.executable, str(REPO / "block_sched" / "block_sched.py"), str(trace),
                               "--out", str(tmp_path / "out")],
            "fig13cd.py": [sys.executable, str(REPO / "warp_sched" / "fig13cd.py"), str(trace),
                              "--out", str(tmp_path / "out")],
            "export perfetto": [sys.executable, "-m", "neutrino_ae", "export", "perfetto", str(trace),
                                "-o", str(tmp_path / "trace.json")]}[how]
    line = _refused_for_memory(_limited(argv, tmp_path))
    assert str(trace / "result" / "0.5.bin") in line
    assert not (tmp_path / "trace.json").exists()


TEMP_INIT = '''
from neutrino_ae.report.section import Section

SECTION = Section(name="dies", title="A worker killed mid-write", paper_ref="none", order=92, runtime="instant",
                  inputs=(), analyze="analysis:analyze")
'''
TEMP_ANALYSIS = '''
import multiprocessing
import os
import signal
from pathlib import Path

from neutrino_ae.report.results import SectionResult


def analyze(bundle, out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if multiprocessing.parent_process() is not None:  # a section worker: killed mid-write (the OOM killer, say)
        (out / ".dies_figure.tmp-x1y2z3.png").write_bytes(b"half a figure")
        os.kill(os.getpid(), signal.SIGKILL)
    return SectionResult("dies", {"ok": 1}, {}, {}, [], "computed again in the kernel")
'''


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="section workers run only with two cores or more")
def test_a_killed_workers_temp_files_are_removed_and_never_counted(tiny_bundle, tmp_path):
    sections = toy_section(tmp_path / "sections", "dies", {"__init__.py": TEMP_INIT, "analysis.py": TEMP_ANALYSIS})
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "neutrino_ae", "run", "static", "--trace-root", str(tiny_bundle),
                           "--output-dir", str(out), "--sections", "kernel_overhead,dies", "-p", "workers", "2"],
                          cwd=tmp_path,
                          env=cli_env(NEUTRINO_AE_SECTIONS=str(sections)), text=True, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=600, check=False)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    left = [p for p in out.rglob("*") if ".tmp-" in p.name]
    assert left == [], (left, proc.stdout[-2000:], proc.stderr[-2000:])
    pngs = [p for p in out.rglob("*.png") if not p.name.startswith(".")]
    # paths inside the working directory are printed relative to it
    assert f"figures: {len(pngs)} PNG files under {out.relative_to(tmp_path)}" in proc.stdout, proc.stdout[-2000:]
