"""Run the REAL Neutrino probe engine on small PTX kernels and keep what it writes, as test data.

For each Neutrino branch (artifact: what the paper used; main: today's) and each built-in probe,
this does what the hook driver does on a kernel's first launch (``neutrino/src/cuda.c``): write the
kernel's PTX to ``./trace/<dir>/kernel/<i>_<sha1(name)>/original.bin`` and run
``python neutrino/probe/cuda.py <that dir> <kernel name>`` with ``NEUTRINO_PROBES`` set to the probe
exactly as the branch's CLI dumps it (``toml.dumps`` of the tool file; on main, of the DSL compiled
by ``neutrino.language.compiler.compile``). The engine runs ``ptxas`` (CUDA 13 here) and writes
``kernel.info``, ``process.log`` and the pruned/probed/count PTX. A stub ``nvidia-smi`` answers its
compute-capability query (8.0, an A100).

Kept (text only) under ``tests/data/genuine/probe-engine/<branch>/<case>/``: ``probe.toml`` (what
the hook driver writes into a trace dir: the ``NEUTRINO_PROBES`` text), and the kernel folder's
``kernel.info``, ``process.log``, ``pruned.ptx``, ``probed.ptx``, ``countd.ptx``. One substitution
is made, recorded in the MANIFEST: the absolute path of the extracted Neutrino tree (it appears in
the artifact's ``kernel.info`` analyze-hook line) becomes ``/opt/neutrino``. Nothing of Neutrino's
source is copied; the files are outputs of running it.

A case is named by its probe (one small kernel per built-in probe), or ``<probe>-<kernel>`` for the
register-heavy kernels of Table 2's extra-register column (``ilp_sum``: ~128 registers,
``stencil_1d``: ~32), on which ptxas gives the dmat-probed build fewer registers than the pruned one.
``--only`` regenerates some cases and keeps the others as they are (ptxas prints its own compile
time, so a full rerun rewrites every process.log); the MANIFEST lists every case in ``--out``.

    python tools/genuine/probe_engine.py [--src ../shared/neutrino-src] [--out tests/data/genuine/probe-engine]
                                         [--only CASE[,CASE...]]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[2]
KERNELS_CU = Path(__file__).resolve().parent / "kernels.cu"
BRANCHES = {  # branch -> (tarball, commit in ../shared/neutrino-src/README.md)
    "artifact": ("neutrino-artifact.tar.gz", "43182f3082f5617d8bc85cd8902af4f6fbaeeb24"),
    "main": ("neutrino-main.tar.gz", "4a82cd22f474c31ac2fecfa174d381a19bb3f469"),
}
#: branch -> probe -> kernel it is applied to
PROBES = {
    "artifact": {"block_sched": "zero_fill", "dmat": "attn_fwd", "gmem_bytes": "attn_fwd",
                 "tensorop_count": "mma_gemm"},
    "main": {"block_sched": "zero_fill", "dmat": "attn_fwd", "gmem_bytes": "attn_fwd", "tensorop": "mma_gemm"},
}
#: Table 2's register column: these probes on these register-heavy kernels, both branches
REGISTER_PROBES = ("block_sched", "dmat")
REGISTER_KERNELS = ("ilp_sum", "stencil_1d")
TRACE_DIR = "Nov23_000000_4242"  # the hook driver's "%b%d_%H%M%S_<pid>" naming
KEPT = ("kernel.info", "process.log", "pruned.ptx", "probed.ptx", "countd.ptx")
TREE_PLACEHOLDER = "/opt/neutrino"


def missing_tools() -> str | None:
    for tool in ("ptxas", "nvcc", "file"):
        if shutil.which(tool) is None:
            return f"{tool} not on PATH"
    try:
        import toml  # noqa: F401  (the real engine needs it)
    except ImportError:
        return "the Python package 'toml' is not installed (the real Neutrino needs it)"
    return None


def extract(src: Path, branch: str, into: Path) -> Path:
    tarball = src / BRANCHES[branch][0]
    if not tarball.is_file():
        raise FileNotFoundError(f"{tarball}: no such Neutrino tarball")
    with tarfile.open(tarball) as tar:
        tar.extractall(into, filter="data")
    (tree,) = [p for p in into.iterdir() if (p / "neutrino" / "probe" / "cuda.py").is_file()]
    return tree


def probe_text(tree: Path, branch: str, probe: str, env: dict[str, str]) -> str:
    """NEUTRINO_PROBES as the branch's CLI sets it (run in the branch's own package)."""
    if branch == "artifact":
        code = ("import sys, toml; print(toml.dumps(toml.load(sys.argv[1])), end='')",
                str(tree / "neutrino" / "tools" / f"{probe}.toml"))
    else:
        code = ("import sys, toml; from neutrino.language.compiler import compile; "
                "print(toml.dumps(compile('CUDA', open(sys.argv[1]).read())), end='')",
                str(tree / "neutrino" / "tools" / f"{probe}.py"))
    return subprocess.run([sys.executable, "-c", *code], env=env, check=True, capture_output=True,
                          text=True).stdout


def stub_nvidia_smi(bindir: Path) -> Path:
    """Write ``bindir/nvidia-smi`` answering the engine's compute-capability query with 8.0 (an A100),
    so the engine picks ``ptxas -arch=sm_80`` without a GPU; put ``bindir`` first on PATH."""
    bindir.mkdir(parents=True, exist_ok=True)
    smi = bindir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 8.0\n")
    smi.chmod(0o755)
    return bindir


def engine_env(tree: Path, bindir: Path) -> dict[str, str]:
    """The environment the engine runs in: the branch's package importable, the stub nvidia-smi first."""
    return {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(tree)}


class EngineRun(NamedTuple):
    """One run of ``neutrino/probe/cuda.py``: the kernel folder it wrote into, its exit status, its output."""

    kdir: Path
    returncode: int
    output: str  # stdout then stderr


def engine_run(tree: Path, branch: str, probe: str, kernel: str, ptx: str, work: Path, env: dict[str, str],
               probes: str | None = None) -> EngineRun:
    """Run the engine as the hook driver does on ``kernel``'s first launch, in a fresh ``work`` folder;
    a failure is returned, not raised. ``probes``: :func:`probe_text` of (branch, probe) when the caller
    has it already (it costs a Python start per call)."""
    probes = probe_text(tree, branch, probe, env) if probes is None else probes
    kdir_rel = Path("trace") / TRACE_DIR / "kernel" / f"0_{hashlib.sha1(kernel.encode()).hexdigest()}"
    kdir = work / kdir_rel
    kdir.mkdir(parents=True)
    (kdir / "original.bin").write_text(ptx)
    (work / "trace" / TRACE_DIR / "probe.toml").write_text(probes)
    run_env = {**env, "NEUTRINO_PROBES": probes, "NEUTRINO_KERNEL": "", "NEUTRINO_FILTER": ""}
    if "dynamic = true" in probes:
        run_env["NEUTRINO_DYNAMIC"] = "1"
    # The hook driver passes the kernel folder relative to NEUTRINO_TRACEDIR (default ./trace).
    proc = subprocess.run([sys.executable, str(tree / "neutrino" / "probe" / "cuda.py"), f"./{kdir_rel}", kernel],
                          cwd=work, env=run_env, capture_output=True, text=True)
    return EngineRun(kdir, proc.returncode, proc.stdout + proc.stderr)


def run_engine(tree: Path, branch: str, probe: str, kernel: str, ptx: str, work: Path, env: dict[str, str]) -> Path:
    """:func:`engine_run`, raising ``CalledProcessError`` when the engine fails; the kernel folder."""
    run = engine_run(tree, branch, probe, kernel, ptx, work, env)
    if run.returncode != 0:
        raise subprocess.CalledProcessError(run.returncode, ["neutrino/probe/cuda.py", kernel], output=run.output)
    return run.kdir


def cases(branch: str) -> dict[str, tuple[str, str]]:
    """case -> (probe, kernel) of one branch: its output folder is ``<out>/<branch>/<case>``."""
    out = {probe: (probe, kernel) for probe, kernel in PROBES[branch].items()}
    out.update({f"{probe}-{kernel}": (probe, kernel) for probe in REGISTER_PROBES for kernel in REGISTER_KERNELS})
    return out


def generate(src: Path, out: Path, only: set[str] | None = None) -> None:
    """Run the engine for every case (or those in ``only``) of both branches; write into ``out``."""
    problem = missing_tools()
    if problem:
        raise SystemExit(f"error: {problem}")
    unknown = (only or set()) - {c for b in BRANCHES for c in cases(b)}
    if unknown:
        raise SystemExit(f"error: --only: no such case {', '.join(sorted(unknown))}")
    with tempfile.TemporaryDirectory(prefix="neutrino-genuine-") as tmp:
        tmp_path = Path(tmp)
        bindir = stub_nvidia_smi(tmp_path / "bin")
        ptx_path = tmp_path / "kernels.ptx"
        subprocess.run(["nvcc", "-ptx", "-arch=sm_80", str(KERNELS_CU), "-o", str(ptx_path)], check=True)
        ptx = ptx_path.read_text()
        for branch in BRANCHES:
            todo = {c: pk for c, pk in cases(branch).items() if only is None or c in only}
            if not todo:
                continue
            tree = extract(src, branch, tmp_path / f"src-{branch}")
            env = engine_env(tree, bindir)
            for case, (probe, kernel) in todo.items():
                work = tmp_path / f"work-{branch}-{case}"
                kdir = run_engine(tree, branch, probe, kernel, ptx, work, env)
                dest = out / branch / case
                shutil.rmtree(dest, ignore_errors=True)
                dest.mkdir(parents=True)
                (dest / "probe.toml").write_text((work / "trace" / TRACE_DIR / "probe.toml").read_text())
                for name in KEPT:
                    if (kdir / name).is_file():
                        text = (kdir / name).read_text().replace(str(tree), TREE_PLACEHOLDER)
                        (dest / name).write_text(text)


def manifest_rows(out: Path) -> list[str]:
    """One table row per case folder present in ``out``, in the tool's case order."""
    rows = []
    for branch in BRANCHES:
        for case, (probe, kernel) in cases(branch).items():
            dest = out / branch / case
            if dest.is_dir():
                files = ", ".join(sorted(p.name for p in dest.iterdir()))
                rows.append(f"| {branch} | {case} | {probe} | {kernel} | {files} |")
    return rows


def _shown(path: Path) -> Path:
    path = path.resolve()
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path,
                    default=Path(os.environ.get("NEUTRINO_SRC", REPO.parent / "shared" / "neutrino-src")))
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "genuine" / "probe-engine")
    ap.add_argument("--only", type=lambda s: {c for c in s.split(",") if c},
                    help="comma-separated cases to regenerate (e.g. dmat-ilp_sum); the others are kept")
    args = ap.parse_args(argv)
    generate(args.src, args.out, args.only)
    rows = manifest_rows(args.out)
    ptxas = subprocess.run(["ptxas", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    manifest = "\n".join([
        "# Genuine probe-engine output (test data)",
        "",
        "Written by the real Neutrino probe engine (`neutrino/probe/cuda.py`), run by",
        "`tools/genuine/probe_engine.py` on the kernels of `tools/genuine/kernels.cu`. Not edited except:",
        f"the extracted Neutrino tree's absolute path is replaced by `{TREE_PLACEHOLDER}`.",
        "",
        f"* generated: {_dt.date.today().isoformat()}"
        + (f" (cases {', '.join(sorted(args.only))}; the others by an earlier run)" if args.only else ""),
        f"* ptxas: {ptxas}; arch from a stub nvidia-smi: sm_80",
        *[f"* Neutrino {b}: {BRANCHES[b][1]} ({BRANCHES[b][0]})" for b in BRANCHES],
        f"* command: `python tools/genuine/probe_engine.py --out {_shown(args.out)}"
        + (f" --only {','.join(sorted(args.only))}`" if args.only else "`"),
        "",
        "| branch | case | probe | kernel | files |",
        "|---|---|---|---|---|",
        *rows,
        "",
    ])
    (args.out / "MANIFEST.md").write_text(manifest)
    print(manifest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
