"""DMAT memory bound, the manual benchmark of issue 23 item 7: a dense raw dmat trace (1024 blocks x 128
threads x 128 records = 256 MiB, 5 % unfilled, per-warp rising absolute clocks near 2**60) run through
``python dmat/dmat.py`` under address-space limits (RLIMIT_AS, what ``ulimit -v`` sets).

    python -m benchmarks.dmat_memory [--blocks 1024] [--limits-mb 0,1500,900,600,400,300] [--keep DIR]

Per limit (0: none) it prints the exit code, the peak RSS of the run (``ru_maxrss`` of the child) and
its wall time, and the error line of a refused run. The test suite runs a 32 MiB version
(tests/sections/dmat/test_dmat_memory.py).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from neutrino_ae.formats.bintrace import TraceHeader
from neutrino_ae.formats.bintrace_write import SectionSpec, TraceWriter
from neutrino_ae.formats.level import Level
from neutrino_ae.formats.records import DMAT

REPO = Path(__file__).resolve().parents[1]
T0 = 1_700_000_000_000_000_000


def write_dense_trace(path: Path, blocks: int, threads: int = 128, per_thread: int = 128,
                      unfilled: float = 0.05, seed: int = 1) -> Path:
    rng = np.random.default_rng(seed)
    header = TraceHeader((blocks, 1, 1), (threads, 1, 1), 0)
    with TraceWriter(path, header, [SectionSpec(Level.THREAD, per_thread * DMAT.itemsize)], "v1") as w:
        for lo in range(0, blocks, 16):
            nb = min(16, blocks - lo)
            clock = np.cumsum(rng.exponential(1000, (nb, threads // 32, 1, per_thread)), axis=-1).astype(np.uint64)
            clock = np.broadcast_to(clock + np.uint64(T0), (nb, threads // 32, 32, per_thread))
            rec = np.empty((nb, threads, per_thread), DMAT)
            rec["clock"] = clock.reshape(nb, threads, per_thread)
            rec["addr"] = np.uint64(0x7F3A_0000_0000) + (rng.integers(0, (256 << 20) // 16, rec.shape)
                                                        .astype(np.uint64) * np.uint64(16))
            rec[rng.random(rec.shape) < unfilled] = np.zeros((), DMAT)
            w.write(rec)
    return path


def run_limited(trace: Path, out: Path, limit_mb: int) -> tuple[int, float, float, str]:
    """(exit code, peak RSS MB, seconds, last stderr line) of ``dmat/dmat.py`` under ``limit_mb`` (0: none)."""
    def cap() -> None:
        if limit_mb:
            resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))

    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "dmat/dmat.py", str(trace), "--out", str(out)], cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=err, text=True, preexec_fn=cap)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak RSS
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        lines = err.read().strip().splitlines()
    return proc.returncode, usage.ru_maxrss / 1024, time.perf_counter() - start, lines[-1] if lines else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=1024)
    parser.add_argument("--limits-mb", default="0,1500,900,600,400,300")
    parser.add_argument("--keep", type=Path, help="folder for the trace and outputs (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        trace = write_dense_trace(work / "dense.bin", args.blocks)
        print(f"trace: {trace} ({trace.stat().st_size / 2**20:.0f} MiB)")
        for limit in (int(x) for x in args.limits_mb.split(",")):
            code, peak, seconds, line = run_limited(trace, work / f"out-{limit}", limit)
            print(f"limit {limit or 'none':>6} MB: exit {code}, peak RSS {peak:7.1f} MB, {seconds:6.1f} s"
                  + (f"  {line}" if code else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
