#!/usr/bin/env python3
"""One session on a real NVIDIA GPU machine: build the real Neutrino, run dynamic.ipynb section by
section with the real ``neutrino`` CLI, and bring back the executed notebooks, the verdicts, the
figures and small slices of every real trace.

Run from the repository root on the GPU machine, after ``tools/real_gpu/prepare.sh`` filled the
ignored folders ``.whl/`` (Jupyter/papermill wheels the machine lacks) and ``.gpu/`` (the Neutrino
source tarballs and CUDA 12.1's ``cuda.h``)::

    OUT=/some/folder python3 -m tools.real_gpu.session [--budget 560] [--sections a,b]

Everything is logged to ``$OUT/session.log`` as it happens, and each section is packed into
``$OUT/<section>.tgz`` as soon as it ends, so a session stopped at its time limit still returns
what it finished. Every step has its own time cap, taken from what is left of ``--budget``.
Traces larger than ``--slice-bytes`` are cut to their first blocks
(:mod:`neutrino_ae.formats.bintrace_slice`); the MANIFEST in each archive lists every file with its
original size and what was kept.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SITE = Path("/tmp/site")
NSRC = Path("/tmp/neutrino-src")
T0 = time.monotonic()
if not __package__:  # run as a file, the checkout's package would not import (no sys.path edits here)
    sys.exit("error: run from the repository root as: python3 -m tools.real_gpu.session ...")

#: section -> (collect_args, notebook `timeout` per collection command, cap of the whole run), in run order,
#: for the ptx workload family (``-p workloads ptx``: what Neutrino can probe with PyTorch 2.11 / Triton 3.6).
#: The plan of one session, within 8 minutes of GPU-machine time (480 s; ``--budget``):
#:
#: | step                                   | cap (s) |
#: |----------------------------------------|---------|
#: | machine facts, torch/triton versions   |      20 |
#: | wheels (papermill, ipykernel, toml)    |      40 |
#: | build the artifact's Neutrino          |      40 |
#: | prepare_env.py --check                 |      20 |
#: | compile the PTX (nvcc), check 5 kernels|      45 |
#: | block_sched                            |      40 |
#: | warp_sched                             |      30 |
#: | dmat and max_mem, side by side         |      80 |
#: | kernel_overhead                        |      70 |
#: | exposed_latency                        |      60 |
#: | all sections, analysis only            |      35 |
#: | total                                  |     480 |
#:
#: Packing takes the reserve each step leaves (``--budget`` 470 keeps 10 s more in hand).
#: Every step's cap is also cut to what is left of the budget, less a reserve for packing, so a slow step
#: cannot eat the session; each section is packed as soon as it ends.
#: Not the list of sections (that is the registry's): a time plan; a section added later runs here once it
#: is given its caps, a decision about the GPU budget, not discovery.
PLAN: dict[str, tuple[list[str], int, int]] = {
    "block_sched": ([], 35, 40),
    "warp_sched": (["--iters", "20000"], 25, 30),
    "dmat": ([], 35, 80),
    # about 6 s a run (the hook JIT-probes each of a layer's ~5 kernels): 6 runs
    "max_mem": (["--models", "resnet-bs32,llama1b-bs32,llama8b-bs32", "--probes", "block_sched,dmat"], 35, 80),
    # about 3 s a run (probe engine, inputs drawn on the host): 15 runs
    "kernel_overhead": (["--only", "norm,softmax,gather,attn,gmm", "--probes", "block_sched,gmem_bytes,dmat"], 30, 70),
    # two runs per cell (a saving one and a --benchmark one): 16 runs
    "exposed_latency": (["--workloads", "attn,gmm,gemm,conv", "--probes", "block_sched,gmem_bytes"], 30, 60),
}


#: The cases of tools/genuine/trace_dirs.py, on the real driver and at real sizes: (case, probe, options,
#: kernel of tools/genuine/kernels.cu, grid, block). The probe is named as each branch names it.
GENUINE: list[tuple[str, dict[str, str], list[str], str, int, int]] = [
    ("block_sched-paper", {"*": "block_sched"}, [], "zero_fill", 32768, 128),
    ("block_sched", {"*": "block_sched"}, [], "zero_fill", 32, 128),
    ("block_sched-benchmark", {"*": "block_sched"}, ["--benchmark"], "zero_fill", 32768, 128),
    ("block_sched-partial-warp", {"*": "block_sched"}, [], "zero_fill", 8, 112),
    ("block_sched-spin", {"*": "block_sched"}, [], "spin_kernel", 264, 128),
    ("dmat", {"*": "dmat"}, ["-k", "attn"], "attn_fwd", 4, 64),
    ("dmat-large", {"*": "dmat"}, ["-k", "attn"], "attn_fwd", 264, 128),
    ("dmat-memusage", {"*": "dmat"}, ["--memusage", "-k", "attn"], "attn_fwd", 4, 64),
    ("gmem_bytes", {"*": "gmem_bytes"}, [], "attn_fwd", 4, 64),
    ("gmem_bytes-benchmark", {"*": "gmem_bytes"}, ["--benchmark"], "attn_fwd", 264, 128),
    ("tensorop", {"artifact": "tensorop_count", "main": "tensorop"}, [], "mma_gemm", 1, 32),
    ("tensorop-benchmark", {"artifact": "tensorop_count", "main": "tensorop"}, ["--benchmark"], "mma_gemm", 132, 32),
]


class Session:
    def __init__(self, out: Path, budget: float, slice_bytes: int) -> None:
        self.out = out
        self.budget = budget
        self.slice_bytes = slice_bytes
        self.log = open(out / "session.log", "a", buffering=1, encoding="utf-8", errors="replace")
        self.env = dict(os.environ)
        self.env.update(GIT_ALLOW_PROTOCOL="file", GIT_TERMINAL_PROMPT="0", PYTHONUNBUFFERED="1", MPLBACKEND="Agg",
                        PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=f"{SITE}:{REPO}", PIP_NO_INDEX="1",
                        PIP_FIND_LINKS=str(REPO / ".whl"),
                        PATH=os.pathsep.join([str(SITE / "bin"), "/tmp/nbin", str(Path.home() / ".local/bin"),
                                              "/usr/local/cuda/bin", self.env.get("PATH", "")]))
        self.facts: dict[str, object] = {}
        self.family = "ptx"

    def left(self) -> float:
        return self.budget - (time.monotonic() - T0)

    def say(self, text: str) -> None:
        self.log.write(f"[{time.monotonic() - T0:6.1f}s] {text}\n")

    def sh(self, name: str, cmd: str | list[str], cap: float, cwd: Path | None = None, reserve: float = 20.0,
           env: dict[str, str] | None = None) -> int | None:
        """Run ``cmd`` (a shell line or argv) with its output in the log; None when it was not run or timed out."""
        limit = min(cap, self.left() - reserve)
        if limit < 5:
            self.say(f"SKIP {name}: {self.left():.0f}s left")
            return None
        shown = cmd if isinstance(cmd, str) else shlex.join(cmd)
        self.say(f"RUN {name} (cap {limit:.0f}s): {shown}")
        t = time.monotonic()
        try:
            proc = subprocess.run(cmd, shell=isinstance(cmd, str), cwd=cwd or REPO, env=env or self.env,
                                  stdout=self.log, stderr=subprocess.STDOUT, timeout=limit,
                                  start_new_session=True)
            rc: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
        self.say(f"END {name}: rc={rc} in {time.monotonic() - t:.1f}s")
        self.facts.setdefault("steps", []).append({"step": name, "rc": rc, "s": round(time.monotonic() - t, 1)})
        return rc

    def capture(self, cmd: str, timeout: float = 20) -> str:
        try:
            return subprocess.run(cmd, shell=True, env=self.env, capture_output=True, text=True,
                                  timeout=timeout).stdout.strip()
        except subprocess.TimeoutExpired:
            return "(timed out)"

    # -- steps -------------------------------------------------------------------------------------
    def machine_facts(self) -> None:
        self.sh("facts", "uname -a; nproc; free -g; df -h /tmp; nvidia-smi; "
                "nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv; "
                "nvcc --version; for t in cc gcc nm file ptxas cuobjdump nvdisasm ncu nsys git; do "
                "printf '%s: ' $t; command -v $t || echo MISSING; done; ldconfig -p | grep -i 'libcuda\\.'; "
                "ls -l /usr/local/nvidia/lib64/libcuda* /usr/lib/x86_64-linux-gnu/libcuda* 2>/dev/null; "
                "ls /usr/local/cuda/targets/x86_64-linux/include/cuda.h; python3 -VV; command -v python3", 10)
        self.sh("torch", [sys.executable, "-c",
                          "import torch, triton, json; p = torch.cuda.get_device_properties(0); "
                          "print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda, "
                          "'triton': triton.__version__, 'device': p.name, 'sms': p.multi_processor_count, "
                          "'cc': f'{p.major}.{p.minor}', 'arch_list': torch.cuda.get_arch_list()}))"], 10)
        self.facts["gpu"] = self.capture("nvidia-smi --query-gpu=name,compute_cap,driver_version "
                                         "--format=csv,noheader")
        self.facts["nvcc"] = self.capture("nvcc --version | tail -2")

    def install_wheels(self) -> None:
        wheels = sorted(str(p) for p in (REPO / ".whl").glob("*.whl"))
        self.sh("wheels", [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                           "--no-cache-dir", "--upgrade", "--target", str(SITE), *wheels], 40)

    def extract(self) -> dict[str, Path]:
        shutil.rmtree(NSRC, ignore_errors=True)
        trees = {}
        for tb in sorted((REPO / ".gpu" / "neutrino-src").glob("neutrino-*.tar.gz")):
            branch = tb.name.removesuffix(".tar.gz").removeprefix("neutrino-")
            with tarfile.open(tb) as tar:
                tar.extractall(NSRC / branch, filter="data")
            trees[branch] = next((NSRC / branch).iterdir())
        return trees

    def readme_build(self, tree: Path) -> None:
        """What the artifact's README does (setup.py install runs neutrino/build.py), in a copy, for its log."""
        copy = NSRC / "readme-way"
        shutil.copytree(tree, copy)
        self.sh("artifact neutrino/build.py (the README way)", [sys.executable, "neutrino/build.py"], 60, cwd=copy)

    def real_driver(self) -> Path | None:
        lines = self.capture("/sbin/ldconfig -p").splitlines()
        cands = [ln.split()[-1] for ln in lines if "libcuda.so.1" in ln and "lib32" not in ln]
        cands += [f"{d}/libcuda.so.1" for d in self.env.get("LD_LIBRARY_PATH", "").split(":") if d]
        cands += ["/usr/local/nvidia/lib64/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"]
        for c in cands:
            if Path(c).exists():
                return Path(os.path.realpath(c))
        return None

    def manual_build(self, tree: Path, branch: str = "artifact") -> None:
        include = REPO / ".gpu" / "cuda12" / "include"
        driver = self.real_driver()
        self.say(f"manual build: header {include / 'cuda.h'}, real driver {driver}")
        if driver is None or not (include / "cuda.h").is_file():
            self.say("manual build impossible: no real driver or no CUDA 12 cuda.h")
            return
        src, out = tree / "neutrino" / "src", tree / "neutrino" / "build"
        out.mkdir(exist_ok=True)
        steps = [("parse.py", [sys.executable, str(src / "parse.py"), str(include / "cuda.h"), str(driver)], 10),
                 ("cc cuda.c", ["cc", str(src / "cuda.c"), "-fPIC", "-shared", "-ldl", "-lpthread", "-O3",
                                "-I", str(include), "-o", str(out / "libcuda.so.1")], 25),
                 ("cc preload.c", ["cc", str(src / "preload.c"), "-fPIC", "-shared", "-O3",
                                   "-o", str(out / "preload.so")], 5)]
        ok = all(self.sh(f"{branch}: {what}", argv, cap, cwd=src) == 0 for what, argv, cap in steps)
        if not ok:
            self.facts[f"build_{branch}"] = "failed"
            return
        link = out / "libcuda.so"
        if not link.exists():
            link.symlink_to("libcuda.so.1")
        (out / "config.toml").write_text(
            "[system]\n"
            'NEUTRINO_MODE = "CUDA"\nNEUTRINO_DRIVER_HEADER_NAME = "cuda.h"\n'
            f'NEUTRINO_DRIVER_HEADER_DIR = "{include}"\nNEUTRINO_HOOK_DRIVER_LIB_NAME = "libcuda.so.1"\n'
            f'NEUTRINO_REAL_DRIVER_LIB_NAME = "{driver.name}"\nNEUTRINO_REAL_DRIVER_LIB_DIR = "{driver.parent}"\n')
        nbin = Path("/tmp/nbin" if branch == "artifact" else f"/tmp/nbin-{branch}")
        nbin.mkdir(exist_ok=True)
        launcher = nbin / "neutrino"
        launcher.write_text(f"#!/bin/sh\nPYTHONPATH={tree}:$PYTHONPATH exec {sys.executable} "
                            f"{tree / 'neutrino' / 'cli.py'} \"$@\"\n")
        launcher.chmod(0o755)
        self.facts[f"build_{branch}"] = "ok"

    def genuine(self, branch: str) -> None:
        """The genuine-fixture cases with the real driver: real records, real event.log timings."""
        ptx = Path("/tmp/kernels.ptx")
        if not ptx.is_file() and self.sh("nvcc -ptx kernels.cu", ["nvcc", "-ptx", "-arch=sm_80",
                                         str(REPO / "tools/genuine/kernels.cu"), "-o", str(ptx)], 60) != 0:
            return
        cli = "/tmp/nbin/neutrino" if branch == "artifact" else f"/tmp/nbin-{branch}/neutrino"
        if not Path(cli).is_file():
            self.say(f"SKIP genuine {branch}: no CLI")
            return
        for case, probe, opts, kernel, grid, block in GENUINE:
            work = Path("/tmp/genuine") / branch / case
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            argv = [cli, "-p", probe.get(branch, probe.get("*")), *opts, sys.executable,
                    str(REPO / "tools/real_neutrino/workload.py"), str(ptx), kernel, str(grid), str(block)]
            (work / "command.txt").write_text(shlex.join(["neutrino", *argv[1:]]) + "\n")
            self.sh(f"genuine {branch}/{case}", f"{shlex.join(argv)} > cli.stdout.log 2> cli.stderr.log; "
                    "rc=$?; tail -3 cli.stderr.log; exit $rc", 45, cwd=work)

    def ptx(self) -> None:
        """Compile every CUDA C workload to PTX (nvcc, cached) before any section runs, then run two kernels
        with their numerical check: the first time these kernels run on a GPU at all."""
        self.env["NEUTRINO_AE_PTX_CACHE"] = "/tmp/ptx-cache"
        sources = "block_sched/fill.cu dmat/attention.cu neutrino_ae/workloads/cuda/ops.cu " \
                  "neutrino_ae/workloads/cuda/layers.cu"
        self.sh("compile PTX", [sys.executable, "-c", "import sys; from pathlib import Path; "
                                "from neutrino_ae.workloads.ptx_kernels import prebuild; "
                                "print(*prebuild(Path(s) for s in sys.argv[1:]), sep='\\n')", *sources.split()], 20)
        self.sh("check fill", [sys.executable, "block_sched/ptx_workload.py", "raw", "--check"], 5, reserve=60)
        for kernel in ("attn_fwd_m128", "attn_fwd_m64", "flash_fwd_kernel", "fmha_fwd_kernel"):  # dmat.FIGURES' ptx
            self.sh(f"check {kernel}", [sys.executable, "dmat/ptx_workload.py", kernel, "--shape", "1,2,256,64",
                                        "--check"], 5, reserve=60)

    def check_env(self) -> None:
        self.sh("prepare_env --check", [sys.executable, "prepare_env.py", "--check"], 20)

    def section(self, name: str, args: list[str], timeout: int, cap: int, reserve: float = 20.0,
                background: bool = False) -> subprocess.Popen | int | None:
        argv = [sys.executable, "-m", "neutrino_ae", "run", "dynamic", "--sections", name,
                "--output-dir", f"results/gpu/{name}", "--trace-root", "traces/gpu", "--kernel", "python3",
                "-p", "timeout", str(timeout), "-p", "workloads", self.family,
                "-p", "collect_args", json.dumps({name: args} if args else {})]
        if not background:
            rc = self.sh(f"section {name}", argv, cap, reserve=reserve)
            self.pack(name, [REPO / "results" / "gpu" / name, REPO / "traces" / "gpu" / name])
            return rc
        limit = min(cap, self.left() - reserve)
        if limit < 30:
            self.say(f"SKIP section {name}: {self.left():.0f}s left")
            return None
        self.say(f"START section {name} in the background (cap {limit:.0f}s): {shlex.join(argv)}")
        log = open(f"/tmp/{name}.log", "w")
        proc = subprocess.Popen(argv, cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        proc.deadline = time.monotonic() + limit  # type: ignore[attr-defined]
        return proc

    def finish_background(self, name: str, proc: subprocess.Popen | None) -> None:
        if proc is None:
            return
        try:
            rc = proc.wait(timeout=max(1.0, proc.deadline - time.monotonic()))  # type: ignore[attr-defined]
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            rc = None
        self.say(f"END section {name} (background): rc={rc}")
        self.log.write(Path(f"/tmp/{name}.log").read_text(errors="replace")[-20000:] + "\n")

    # -- packing -----------------------------------------------------------------------------------
    def pack(self, name: str, roots: list[Path], max_file: int = 4 << 20) -> None:
        """``$OUT/<name>.tgz``: every file under ``roots`` up to ``max_file`` bytes, traces above
        ``slice_bytes`` cut to their first blocks, and a MANIFEST of what was kept."""
        from neutrino_ae.formats.bintrace_slice import copy_or_slice

        tmp = self.out / f".{name}.tgz"
        manifest = []
        with tarfile.open(tmp, "w:gz") as tar:
            for root in roots:
                if not root.exists():
                    manifest.append(f"MISSING {root}")
                    continue
                for p in sorted(root.rglob("*")):
                    if not p.is_file() or p.is_symlink():
                        continue
                    size = p.stat().st_size
                    arc = f"{name}/{p.relative_to(REPO if p.is_relative_to(REPO) else root.parent)}"
                    if p.suffix == ".bin" and p.parent.name == "result" and size > self.slice_bytes:
                        cut = Path("/tmp/slice.bin")
                        try:
                            _, kept, total = copy_or_slice(p, cut, self.slice_bytes)
                            tar.add(cut, arcname=arc)
                            manifest.append(f"SLICED {arc} {size} bytes: first {kept} of {total} blocks, "
                                            f"{cut.stat().st_size} bytes")
                        except Exception as exc:  # a real trace we cannot read is itself a finding
                            manifest.append(f"UNREADABLE {arc} {size} bytes: {exc}")
                        continue
                    if size > max_file:
                        manifest.append(f"LEFT OUT {arc} {size} bytes")
                        continue
                    tar.add(p, arcname=arc)
                    manifest.append(f"KEPT {arc} {size}")
            data = ("\n".join(manifest) + "\n").encode()
            info = tarfile.TarInfo(f"{name}/MANIFEST")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        tmp.rename(self.out / f"{name}.tgz")
        self.say(f"PACKED {name}.tgz ({(self.out / f'{name}.tgz').stat().st_size} bytes, {len(manifest)} entries)")

    def write_facts(self) -> None:
        self.facts["elapsed_s"] = round(time.monotonic() - T0, 1)
        self.say("FACTS " + json.dumps(self.facts))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", type=float, default=470.0, help="seconds for the whole session (the plan: PLAN)")
    ap.add_argument("--sections", default=",".join(PLAN))
    ap.add_argument("--slice-bytes", type=int, default=3 << 20)
    ap.add_argument("--genuine", action="store_true",
                    help="also the genuine-fixture cases of tools/genuine (the 2026-11-26 session's; ~90 s)")
    args = ap.parse_args()
    out = Path(os.environ.get("OUT") or "out-gpu")
    out.mkdir(parents=True, exist_ok=True)
    s = Session(out, args.budget, args.slice_bytes)
    wanted = [x for x in args.sections.split(",") if x]
    try:
        s.machine_facts()
        s.install_wheels()
        trees = s.extract()
        s.manual_build(trees["artifact"], "artifact")
        s.write_facts()
        if args.genuine:
            s.readme_build(trees["artifact"])
            s.genuine("artifact")
            s.pack("genuine", [Path("/tmp/genuine")])
        s.check_env()
        s.ptx()
        for name in [x for x in ("block_sched", "warp_sched") if x in wanted]:
            s.section(name, *PLAN[name])
        # DMAT and Fig. 11 measure no time (access patterns; probe memory), so they share the GPU.
        bg = {n: s.section(n, *PLAN[n], background=True) for n in ("dmat", "max_mem") if n in wanted}
        for name, proc in bg.items():
            s.finish_background(name, proc)  # type: ignore[arg-type]
        if bg:  # one archive for both: what comes back from the machine is at most 8 files
            s.pack("dmat_max_mem", [REPO / d / "gpu" / n for n in bg for d in ("results", "traces")])
        for name in [x for x in ("kernel_overhead", "exposed_latency") if x in wanted]:
            s.section(name, *PLAN[name])
        if args.genuine and "main" in trees and s.left() > 90:
            s.manual_build(trees["main"], "main")
            s.genuine("main")
            s.pack("genuine", [Path("/tmp/genuine")])
        done = [n for n in wanted if (REPO / "traces" / "gpu" / n).exists()]
        if done and s.left() > 40:
            s.sh("all sections, analysis only", [sys.executable, "-m", "neutrino_ae", "run", "dynamic", "--sections",
                                                 ",".join(done), "--output-dir", "results/gpu/all", "--trace-root",
                                                 "traces/gpu", "--kernel", "python3", "-p", "collect", "False",
                                                 "-p", "workloads", s.family],
                 s.left() - 12, reserve=10)
            s.pack("all", [REPO / "results" / "gpu" / "all"])
    finally:
        s.write_facts()
        s.say("session over")
    return 0


if __name__ == "__main__":
    sys.exit(main())
