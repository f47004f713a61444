"""``make dynamic-emulated``: dynamic.ipynb end to end with the REAL Neutrino over the emulated driver.

    python tools/real_neutrino/emulated.py [--branch artifact] [--out results/dynamic-emulated]
                                           [--traces traces/dynamic-emulated] [--quick] [--sections a,b]

Builds the real Neutrino (CLI, hook driver, probe engine) from ``$NEUTRINO_SRC`` over
``emucuda.c`` (:mod:`harness`), writes the probe-buffer fills below, and runs
``neutrino-ae run dynamic -p workloads ptx`` with that CLI: the same collectors, the same workload
command lines and the same analyses as on a GPU. Only the driver is emulated, so kernels run nothing
and every number is the emulator's: the fills (block records, memory accesses) and its time model.
The run's results and verdict are labelled EMULATED (the stub ``nvidia-smi`` names the emulator).

The fills (``$EMUCUDA_FILL``), per kernel the workloads launch under a probe that saves records:

* block_sched (fill, persistent fill, spin kernel): every block runs ``DURATION`` cycles, blocks
  are dispatched first-in first-out over the emulator's 108 SMs with one slot each and ``GAP``
  cycles between a block's end and the next start on its SM;
* dmat (the four attention kernels): each thread reads Q, K, V and writes O once, in that order in
  time, at addresses inside the kernel's own q, k, v, o arguments (``.rel.bin``: emucuda relocates
  them onto the launch's pointers), so tensor names and time-order claims are judged.

``--quick`` collects the smallest set that gives every section a result (what the test runs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import harness  # beside this file: a script's folder is on sys.path
import numpy as np

from neutrino_ae.formats.records import BLOCK_SCHED, DMAT
from neutrino_ae.sample.dispatch import dispatch_fifo

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

SMS = 108  # emucuda's device
DURATION, GAP, CLOCK0 = 1000, 100, 10_000_000
#: kernel -> (largest grid of any launch, threads per block, slots per SM, growing durations) under
#: block_sched. The spin kernel's launches (warp_sched) take the first 1, 4 or 2.5 blocks per SM of one
#: fill: four slots per SM, so shared scheduling keeps four blocks resident where exclusive keeps one.
BLOCK_SCHED_KERNELS = {"fill_fp16_kernel": (32768, 128, 1, False), "zero_fill_persistent": (SMS, 256, 1, False),
                       "spin_kernel": (4 * SMS, 128, 4, True)}
#: kernel -> most threads of any launch (blocks x threads) under dmat
DMAT_KERNELS = {"attn_fwd": 32768, "flash_fwd_kernel": 32768, "fmha_fwd_kernel": 65536}
#: (parameter index, first clock) per access, in time order: q, k, v read, o written
DMAT_ORDER = ((0, 100), (1, 1000), (2, 2000), (3, 5000))
DMAT_SPAN = 1 << 20  # bytes of each tensor the fill touches (every workload shape is larger)
EMU_KERNEL_MS, EMU_BLOCK_US = 0.02, 0.01  # emucuda's time model: per launch, and per block of the grid

QUICK_ARGS = {
    "dmat": ["--figures", "fig1,fig10b"],
    "kernel_overhead": ["--only", "softmax,gmm", "--probes", "block_sched,dmat"],
    "max_mem": ["--models", "llama1b-bs32", "--probes", "block_sched,dmat"],
    "exposed_latency": ["--workloads", "gmm", "--probes", "block_sched,gmem_bytes"],
}


def block_sched_fill(grid: int, block: int, slots: int = 1, grow: bool = False) -> bytes:
    """The block_sched probe's warp records (start, elapsed, SM) for ``grid`` blocks dispatched FIFO on
    ``slots`` per SM; ``grow``: block i runs ``DURATION * (1 + i / SMS)`` cycles (a last wave that leaves
    SMs idle, Fig. 13c/d's tail)."""
    duration = DURATION * (1 + np.arange(grid) / SMS) if grow else np.full(grid, float(DURATION))
    sched = dispatch_fifo(np.floor(duration), np.full(grid, float(GAP)), sms=SMS, slots=slots)
    rec = np.zeros((grid, block // 32), BLOCK_SCHED)  # every warp of a block saves the block's record
    rec["lstart"] = (CLOCK0 + sched.start.astype(np.uint64))[:, None]
    rec["elapse"] = np.floor(duration).astype(np.uint32)[:, None]
    rec["smid"] = sched.sm[:, None]
    return rec.tobytes()


def dmat_fill(threads: int) -> bytes:
    """(clock, parameter-relative address) records, ``len(DMAT_ORDER)`` per thread."""
    t = np.arange(threads, dtype=np.uint64)
    rec = np.zeros((threads, len(DMAT_ORDER)), DMAT)
    for k, (param, clock) in enumerate(DMAT_ORDER):
        rec["clock"][:, k] = clock + t % 64
        rec["addr"][:, k] = (np.uint64(param + 1) << np.uint64(48)) | ((t * np.uint64(16)) % np.uint64(DMAT_SPAN))
    return rec.tobytes()


def write_fills(fill: Path) -> dict[str, object]:
    """Write every fill; what the analyses should find, for tests and the closing line."""
    fill.mkdir(parents=True, exist_ok=True)
    for kernel, (grid, block, slots, grow) in BLOCK_SCHED_KERNELS.items():
        (fill / f"{kernel}.probe0.bin").write_bytes(block_sched_fill(grid, block, slots, grow))
    for kernel, threads in DMAT_KERNELS.items():
        (fill / f"{kernel}.probe0.rel.bin").write_bytes(dmat_fill(threads))
        (fill / f"{kernel}.count").write_text(str(len(DMAT_ORDER) * DMAT.itemsize))
    raw_blocks = BLOCK_SCHED_KERNELS["fill_fp16_kernel"][0]
    return {"sms": SMS, "duration": DURATION, "gap": GAP, "raw_blocks": raw_blocks,
            "raw_mean_running_cycles": raw_blocks * DURATION / SMS,
            "raw_mean_scheduling_cycles": (raw_blocks - SMS) * GAP / SMS,
            "dmat_accesses_per_thread": len(DMAT_ORDER)}


def run(out: Path, traces: Path, work: Path, branch: str = "artifact", quick: bool = False,
        sections: str | None = None, extra: list[str] | None = None,
        install: harness.Install | None = None) -> subprocess.CompletedProcess[str]:
    """Build Neutrino in ``work`` (unless ``install`` is one already built), write the fills, run
    dynamic.ipynb; the finished ``neutrino-ae`` process."""
    install = install or harness.build(branch, work / branch)
    write_fills(work / "fill")
    # a launch costs a base time plus a per-block one: the fixes' timings then show what fewer blocks save
    env = install.env(work / "fill", kernel_ms=EMU_KERNEL_MS, block_us=EMU_BLOCK_US)
    # the unprobed runs (block_sched's timing) load libcuda.so.1 directly: the emulator's
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(install.root / "emucuda"),
                                                           env.get("LD_LIBRARY_PATH", "")]))
    env.setdefault("NEUTRINO_AE_PTX_CACHE", str(work / "ptx-cache"))
    argv = [sys.executable, "-m", "neutrino_ae", "run", "dynamic", "--output-dir", str(out), "--trace-root",
            str(traces), "-p", "workloads", "ptx", "-p", "neutrino", str(install.neutrino), "-p", "timeout", "600"]
    if quick:
        argv += ["-p", "collect_args", json.dumps(QUICK_ARGS)]
    if sections:
        argv += ["--sections", sections]
    return subprocess.run([*argv, *(extra or [])], cwd=REPO, env=env, text=True, capture_output=True, check=False)


def own_folder(top: str) -> Path:
    """``<checkout>/<top>/dynamic-emulated``, with ``<top>`` made when missing."""
    (REPO / top).mkdir(exist_ok=True)
    return REPO / top / "dynamic-emulated"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--branch", choices=("artifact", "main"), default="artifact")
    ap.add_argument("--out", type=Path, help="results folder (default results/dynamic-emulated)")
    ap.add_argument("--traces", type=Path, help="trace root (default traces/dynamic-emulated)")
    ap.add_argument("--quick", action="store_true", help="the smallest collection that gives every section a result")
    ap.add_argument("--sections", help="comma-separated sections (default all)")
    args = ap.parse_args(argv)
    # The defaults are this command's own folders: their parents are made here (a fresh clone has no traces/
    # before `make run`), where a folder the user names must have its parent (neutrino-ae refuses it otherwise).
    args.out = args.out or own_folder("results")
    args.traces = args.traces or own_folder("traces")
    problem = harness.unavailable(args.branch)
    if problem:
        print(f"error: cannot build the real Neutrino here: {problem}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="neutrino-emulated-") as tmp:
        proc = run(args.out, args.traces, Path(tmp), args.branch, args.quick, args.sections)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    print(f"\nEMULATED run: results in {args.out} (verdict.json, summary.json, dynamic.executed.ipynb)")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
