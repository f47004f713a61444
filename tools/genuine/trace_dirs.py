"""Whole trace directories written by the REAL Neutrino CLI + hook driver + probe engine, as test data.

For each branch (artifact, main) this builds Neutrino over our emulated CUDA driver
(``tools/real_neutrino``), then runs ``neutrino -p <probe> [...] python workload.py <kernel> ...``
exactly as a user would, once per case below, and keeps the trace directory it announced under
``tests/data/genuine/<branch>/<case>/`` -- ``event.log``, ``probe.toml``, ``result/*.bin`` and each
``kernel/<i>_<sha1>/`` folder's text files (``kernel.info``, ``process.log``, ``*.ptx`` except the
input ``original.ptx``) plus the CLI's own stdout/stderr -- with the cubins left out. The probe
buffers are filled by the emulator from records made with the sample model (block_sched: the FIFO
dispatcher with a fixed duration and dispatch gap, so the artifact metric is known exactly).

    python tools/genuine/trace_dirs.py [--out tests/data/genuine]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neutrino_ae.formats.records import BLOCK_SCHED, DMAT
from neutrino_ae.sample.dispatch import dispatch_fifo

REPO = Path(__file__).resolve().parents[2]


def _load(path: Path) -> object:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


harness = _load(REPO / "tools" / "real_neutrino" / "harness.py")

#: block_sched fill: blocks on SMS SMs, one slot each, DURATION cycles, GAP cycles between blocks.
SMS, DURATION, GAP, CLOCK0 = 8, 1000, 100, 10_000_000
DMAT_SLOTS = 3  # records per thread the count kernel reports (48 bytes)
DMAT_BASE = 0x7F00_0000_0000


@dataclass(frozen=True)
class Case:
    name: str
    probe: dict[str, str]  # branch -> -p value
    options: tuple[str, ...]
    kernel: str
    grid: int
    block: int

    def probe_for(self, branch: str) -> str:
        return self.probe.get(branch, self.probe.get("*", ""))


CASES = (
    Case("block_sched", {"*": "block_sched"}, (), "zero_fill", 32, 128),
    Case("block_sched-benchmark", {"*": "block_sched"}, ("--benchmark",), "zero_fill", 32, 128),
    Case("block_sched-partial-warp", {"*": "block_sched"}, (), "zero_fill", 8, 112),
    Case("dmat", {"*": "dmat"}, ("-k", "attn"), "attn_fwd", 4, 64),
    Case("dmat-memusage", {"*": "dmat"}, ("--memusage", "-k", "attn"), "attn_fwd", 4, 64),
    Case("gmem_bytes", {"*": "gmem_bytes"}, (), "attn_fwd", 4, 64),
    Case("tensorop", {"artifact": "tensorop_count", "main": "tensorop"}, (), "mma_gemm", 1, 32),
)


def block_sched_fill(grid: int, block: int) -> bytes:
    """Warp records as the block_sched probe writes them: every warp of a block saves the block's
    start, duration and SM, at slot ``block * (blockSize // 32) + warp`` (the probe's floor stride;
    with a partial last warp the next block's warp 0 overwrites it, as it runs later)."""
    sched = dispatch_fifo(np.full(grid, float(DURATION)), np.full(grid, float(GAP)), sms=SMS, slots=1)
    stride, warps = block // 32, -(-block // 32)
    slots = np.zeros(grid * warps, BLOCK_SCHED)
    for b in range(grid):
        for w in range(warps):
            slots[b * stride + w] = (CLOCK0 + int(sched.start[b]), DURATION, int(sched.sm[b]))
    return slots.tobytes()


def dmat_fill(grid: int, block: int) -> bytes:
    """(clock, address) records: DMAT_SLOTS per thread; every 4th thread made one access fewer,
    leaving its last slot to the hook driver's zero fill."""
    rec = np.zeros((grid * block, DMAT_SLOTS), DMAT)
    t = np.arange(grid * block)
    for k in range(DMAT_SLOTS):
        rec["clock"][:, k] = 100 * (k + 1) + t % 64
        rec["addr"][:, k] = DMAT_BASE + k * 0x10000 + 4 * t
    rec[t % 4 == 3, DMAT_SLOTS - 1] = 0
    return rec.tobytes()


def write_fill(case: Case, fill: Path) -> None:
    fill.mkdir(parents=True, exist_ok=True)
    if case.name.startswith("block_sched"):
        (fill / f"{case.kernel}.probe0.bin").write_bytes(block_sched_fill(case.grid, case.block))
    elif case.name.startswith("dmat"):
        (fill / f"{case.kernel}.probe0.bin").write_bytes(dmat_fill(case.grid, case.block))
        (fill / f"{case.kernel}.count").write_text(str(DMAT_SLOTS * DMAT.itemsize))


def keep(trace_dir: Path, dest: Path, stdout: str, stderr: str) -> None:
    """Copy the trace dir's text files and result traces (no cubins, no original input PTX)."""
    shutil.rmtree(dest, ignore_errors=True)
    for f in sorted(trace_dir.rglob("*")):
        rel = f.relative_to(trace_dir)
        if f.is_dir() or (rel.parts[0] == "kernel" and (f.suffix == ".bin" or f.name == "original.ptx")):
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, dest / rel)
    (dest / "cli.stdout.log").write_text(stdout)
    (dest / "cli.stderr.log").write_text(stderr)


def generate(out: Path, branches: tuple[str, ...] = ("artifact", "main")) -> list[str]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="neutrino-traces-") as tmp:
        for branch in branches:
            install = harness.build(branch, Path(tmp) / branch)
            for case in CASES:
                fill = Path(tmp) / f"fill-{branch}-{case.name}"
                write_fill(case, fill)
                argv = ["-p", case.probe_for(branch), *case.options]
                trace_dir, proc = harness.run(install, argv, harness.workload(install, case.kernel, case.grid,
                                                                              case.block),
                                              Path(tmp) / f"work-{branch}-{case.name}", fill=fill)
                keep(trace_dir, out / branch / case.name, proc.stdout, proc.stderr)
                rows.append(f"| {branch} | {case.name} | `neutrino {' '.join(argv)} python workload.py "
                            f"{case.kernel} {case.grid} {case.block}` | {trace_dir.name} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "genuine")
    args = ap.parse_args(argv)
    problem = harness.unavailable("artifact") or harness.unavailable("main")
    if problem:
        raise SystemExit(f"error: {problem}")
    rows = generate(args.out)
    ptxas = subprocess.run(["ptxas", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    text = "\n".join([
        "# Genuine trace directories (test data)",
        "",
        "Written by the real Neutrino CLI, hook driver (`src/cuda.c`, `src/preload.c`, built by",
        "`tools/real_neutrino/harness.py` with the steps of `neutrino/build.py`) and probe engine, over",
        "the emulated CUDA driver `tools/real_neutrino/emucuda.c`; generated by `tools/genuine/trace_dirs.py`.",
        "Only the cubins and the input PTX are left out. The probe records are synthetic (filled by the",
        "emulator from the sample model: block_sched with "
        f"{SMS} SMs, {DURATION}-cycle blocks, {GAP}-cycle gaps); times in",
        "event.log are the emulator's modelled clock. Everything else is what Neutrino wrote.",
        "",
        f"* generated: {_dt.date.today().isoformat()}; ptxas: {ptxas}; hook driver built against CUDA 12.1's cuda.h",
        *[f"* Neutrino {b}: {c}" for b, (_, c) in {
            "artifact": ("", "43182f3082f5617d8bc85cd8902af4f6fbaeeb24"),
            "main": ("", "4a82cd22f474c31ac2fecfa174d381a19bb3f469")}.items()],
        "",
        "| branch | case | command | trace dir |",
        "|---|---|---|---|",
        *rows,
        "",
    ])
    (args.out / "MANIFEST.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
