"""Turn the ``genuine.tgz`` a GPU session brought back into committed test data.

    python -m tools.real_gpu.keep <genuine.tgz> <session.log> --gpu h200 [--out tests/data/gpu]

Each case's folder is kept as the Neutrino CLI left it -- ``trace/<dir>`` for every folder it
announced (the workload's and those of the probe engine's ``nvidia-smi`` calls), ``cli.stdout.log``,
``cli.stderr.log``, ``command.txt`` -- minus the cubins (``kernel/*/*.bin``) and the input
``original.ptx``. Traces over ``--max-bytes`` are cut to their first blocks
(:mod:`neutrino_ae.formats.bintrace_slice`), except those named with ``--whole`` (the paper-size
block_sched trace, whose full analysis the tests compare with the artifact's own printed line).
``MANIFEST.md`` records the machine, the Neutrino commits, every command and every cut.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import re
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if not __package__:  # run as a file, the checkout's package would not import (no sys.path edits here)
    sys.exit("error: run from the repository root as: python3 -m tools.real_gpu.keep ...")

from neutrino_ae.formats.bintrace_slice import blocks_within, slice_trace  # noqa: E402
from neutrino_ae.formats.tracedir import TraceDir  # noqa: E402

COMMITS = {"artifact": "43182f3082f5617d8bc85cd8902af4f6fbaeeb24", "main": "4a82cd22f474c31ac2fecfa174d381a19bb3f469"}


def machine(session_log: str) -> dict[str, str]:
    gpu = re.search(r"^(NVIDIA [^,\n]+), ([\d.]+), ([\d.]+), (\d+ MiB)$", session_log, re.M)
    nvcc = re.search(r"^Cuda compilation tools, (release [^\n]+)$", session_log, re.M)
    facts = re.findall(r"FACTS (\{.*\})$", session_log, re.M)
    torch = re.search(r'^(\{"torch": .*\})$', session_log, re.M)
    return {
        "gpu": gpu.group(1) if gpu else "?", "compute capability": gpu.group(2) if gpu else "?",
        "driver": gpu.group(3) if gpu else "?", "memory": gpu.group(4) if gpu else "?",
        "CUDA toolkit (nvcc, ptxas)": nvcc.group(1) if nvcc else "?",
        "python/torch/triton": torch.group(1) if torch else "?",
        "session seconds": str(json.loads(facts[-1]).get("elapsed_s")) if facts else "?",
    }


def keep_case(src: Path, dest: Path, max_bytes: int, whole: bool) -> list[str]:
    notes = []
    shutil.rmtree(dest, ignore_errors=True)
    for f in sorted(src.rglob("*")):
        rel = f.relative_to(src)
        if f.is_dir() or ("kernel" in rel.parts and (f.suffix == ".bin" or f.name == "original.ptx")):
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if f.suffix == ".bin" and f.parent.name == "result" and f.stat().st_size > max_bytes and not whole:
            tr = TraceDir(f.parent.parent).open_result(f)
            k = blocks_within(tr, max_bytes)
            slice_trace(f, target, k, tr)
            notes.append(f"`{rel}`: first {k} of {tr.header.grid_size} blocks ({f.stat().st_size} bytes cut "
                         f"to {target.stat().st_size})")
        else:
            shutil.copy2(f, target)
    return notes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("archive", type=Path)
    ap.add_argument("session_log", type=Path)
    ap.add_argument("--gpu", required=True, help="folder name for this GPU, e.g. h200")
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "gpu")
    ap.add_argument("--max-bytes", type=int, default=256 << 10)
    ap.add_argument("--whole", default="artifact/block_sched-paper", help="comma-separated branch/case kept whole")
    args = ap.parse_args(argv)
    whole = set(args.whole.split(","))
    log = args.session_log.read_text(errors="replace")
    out = args.out / args.gpu
    rows, cuts = [], []
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(args.archive) as tar:
            tar.extractall(tmp, filter="data")
        root = next(Path(tmp).rglob("artifact")).parent
        packed = next(Path(tmp).rglob("MANIFEST"), None)  # what session.py already cut on the GPU machine
        for line in packed.read_text().splitlines() if packed else []:
            if line.startswith("SLICED"):
                cuts.append(f"* on the GPU machine: {line.split('/', 2)[-1]}")
        for branch_dir in sorted(p for p in root.iterdir() if p.is_dir()):
            for case_dir in sorted(p for p in branch_dir.iterdir() if p.is_dir()):
                key = f"{branch_dir.name}/{case_dir.name}"
                cuts += [f"* {key}: {n}" for n in keep_case(case_dir, out / key, args.max_bytes, key in whole)]
                cmd = (case_dir / "command.txt").read_text().strip()
                dirs = sorted(p.name for p in (case_dir / "trace").iterdir())
                rows.append(f"| {branch_dir.name} | {case_dir.name} | `{cmd}` | {', '.join(dirs)} |")
    facts = machine(log)
    text = "\n".join([
        f"# Trace directories from a real {facts['gpu']} (test data)",
        "",
        "Written by the real Neutrino (CLI, hook driver built from `../shared/neutrino-src` against CUDA 12.1's",
        "`cuda.h` and this machine's driver, probe engine) on a real GPU, by `tools/real_gpu/session.py`; kept",
        "by `tools/real_gpu/keep.py`. The workload is `tools/real_neutrino/workload.py` launching the PTX of",
        "`tools/genuine/kernels.cu` (`nvcc -ptx -arch=sm_80`, JIT-compiled by the driver) through the driver",
        "API. Every record, clock and time here was measured on the GPU. Cubins and the input PTX are left",
        "out; the traces listed under *Cut* keep their first blocks only (a valid trace of fewer blocks).",
        "",
        *[f"* {k}: {v}" for k, v in facts.items()],
        f"* collected: {_dt.date.today().isoformat()}",
        *[f"* Neutrino {b}: {c}" for b, c in COMMITS.items()],
        "",
        "Each case holds `trace/<dir>` for every folder the CLI announced: the workload's, and one per",
        "`nvidia-smi` call the probe engine made while probing (it inherits the hook's `LD_PRELOAD`).",
        "",
        "| branch | case | command (run in the case's folder) | trace folders |",
        "|---|---|---|---|",
        *rows,
        "",
        "## Cut",
        "",
        *(cuts or ["* nothing"]),
        "",
    ])
    (out / "MANIFEST.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
