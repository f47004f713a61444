#!/usr/bin/env python3
"""Check (and optionally install) what dynamic.ipynb needs.

    python prepare_env.py --check [--json]     table of requirements; exit code below
    python prepare_env.py --install [--dry-run] install what is missing (idempotent)

Both work on the project's environment, the one the notebooks' kernel uses: .venv/ next to this
file (made by `make setup`), whatever Python runs this script (it re-runs itself under .venv's
Python and says so); --python picks another environment. Python packages are installed with that
environment's pip (`<python> -m pip install`), never with `setup.py install`.

Exit codes: 0 ready; 1 something required is missing (or an install step failed);
2 bad usage; 3 no NVIDIA GPU/driver.

Install sources (environment variables):
  NEUTRINO_SRC    a local Neutrino checkout to install (skips the clone)
  NEUTRINO_REPO   git URL (default https://github.com/open-neutrino/neutrino)
  NEUTRINO_REF    branch/tag to check out (default artifact, the OSDI'25 artifact branch)
  CUTLASS_DIR     where CUTLASS lives / is cloned (default third_party/cutlass)
  CUTLASS_REPO    git URL of the artifact's CUTLASS tree with examples/benchmark
                  (default https://github.com/neutrino-gpu/cutlass)
  CUTLASS_REF     branch/tag (default: the repository's default branch)
  CUTLASS_ARCH    compute capability digits to build for (default: detected, e.g. 80)
  THIRD_PARTY     where clones go (default third_party/ next to this file)
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from neutrino_ae.report.command.layout import third_party_dir
from neutrino_ae.workloads import envcheck  # this file's folder (the repo root) is sys.path[0]
from neutrino_ae.workloads.family import AUTO, FAMILIES, PTX

HERE = Path(__file__).resolve().parent
STEP_TIMEOUT_S = 3600  # a CUTLASS build is the slowest step
PROJECT_PYTHON = HERE / ".venv" / "bin" / "python"  # the environment `make setup` creates
_REEXEC_ENV = "NEUTRINO_AE_PREPARE_ENV_REEXEC"
#: the paper family's Triton: the artifact's pin, the last line that launches with cuLaunchKernel (a newer
#: one crashes under Neutrino's hook driver, neutrino_ae/workloads/family.py)
TRITON_PIN = "triton==3.1.0"


def _env_of(python: str | os.PathLike[str]) -> Path:
    """The environment (sys.prefix) a Python executable belongs to: ``<env>/bin/python``."""
    return Path(os.path.abspath(python)).parent.parent


def target_python(requested: str | None) -> str:
    """The Python whose environment is checked and installed into: ``--python``, else the project's
    .venv when there is one, else the Python running this script."""
    if requested:
        return requested
    return str(PROJECT_PYTHON) if PROJECT_PYTHON.is_file() else sys.executable


def _same_env(python: str) -> bool:
    return _env_of(python).resolve() == Path(sys.prefix).resolve()


@dataclass
class Step:
    what: str
    argv: list[str]
    cwd: Path | None = None
    hint: str = ""


@dataclass
class Plan:
    steps: list[Step] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _third_party() -> Path:
    return third_party_dir()  # the folder the collection looks in (CUTLASS: envcheck.cutlass_dir)


def _clone_steps(name: str, repo: str, ref: str | None, dest: Path, hint: str) -> list[Step]:
    if (dest / ".git").exists() or (dest / "setup.py").exists() or (dest / "CMakeLists.txt").exists():
        return []  # an existing checkout is reused as is: re-running --install must not re-clone
    argv = ["git", "clone", "--depth", "1", *(["--branch", ref] if ref else []), repo, str(dest)]
    return [Step(f"clone {name}", argv, None, hint)]


def plan_install(report: envcheck.Report) -> Plan:
    """The commands that would bring the machine to 'ready', given what --check found."""
    plan = Plan()
    py = sys.executable
    tp = _third_party()

    neutrino = report.get("neutrino")
    if neutrino and neutrino.status == envcheck.OK:
        plan.skipped.append(f"neutrino: already installed ({neutrino.detail})")
    else:
        src_env = os.environ.get("NEUTRINO_SRC")
        repo = os.environ.get("NEUTRINO_REPO", "https://github.com/open-neutrino/neutrino")
        ref = os.environ.get("NEUTRINO_REF", "artifact")
        src = Path(src_env) if src_env else tp / "neutrino"
        if src_env and not (src / "setup.py").is_file():
            plan.problems.append(f"NEUTRINO_SRC={src}: no setup.py there; point it at a Neutrino checkout")
        elif not src_env:
            plan.steps += _clone_steps("neutrino", repo, ref, src,
                                       f"no network? clone {repo} (ref {ref}) yourself and set NEUTRINO_SRC to it")
        # Neutrino has no wheel: its setup.py builds the hook driver against the local CUDA driver.
        # pip runs it in this environment (no isolated build env: the build sees the CUDA toolkit
        # and the packages installed just before).
        plan.steps.append(Step("neutrino build and runtime deps",
                               [py, "-m", "pip", "install", "toml", "psutil", "setuptools", "wheel"], None,
                               "pip could not install toml/psutil/setuptools; check network or pip configuration"))
        plan.steps.append(Step("install neutrino", [py, "-m", "pip", "install", "--no-build-isolation", str(src)],
                               None, "the build needs gcc and the CUDA toolkit (cuobjdump, ptxas) on PATH; "
                                     "see the output above"))

    triton = report.get("triton")
    if report.family == PTX:
        # The PTX family runs the suite's Triton kernels from committed sm_80 PTX: no Triton needed, and a
        # Triton >= 3.3 would crash under the hook driver (workloads/family.py).
        plan.skipped.append(f"triton: not needed by the ptx workloads ({report.family_reason})")
    elif triton and triton.status == envcheck.OK:
        plan.skipped.append(f"triton: already installed ({triton.detail})")
    else:
        plan.steps.append(Step("install triton", [py, "-m", "pip", "install", TRITON_PIN], None,
                               "pip could not install triton; it needs Linux x86-64 and a matching Python"))

    torch = report.get("torch")
    if report.family == PTX:
        plan.skipped.append("torch: not needed by the ptx workloads")
    elif torch is None or torch.status != envcheck.OK:
        plan.problems.append("torch: not installed; install a CUDA build of PyTorch for your driver yourself "
                             "(https://pytorch.org), it is too build-specific to automate here")
    ptx = report.get("torch-ptx")
    if report.family != PTX and ptx is not None and ptx.status == envcheck.MISSING:
        plan.problems.append(f"torch-ptx: {ptx.hint}")

    cutlass = report.get("cutlass")
    if cutlass and cutlass.status == envcheck.OK:
        plan.skipped.append(f"cutlass: benchmark binaries present ({cutlass.detail})")
    else:
        arch = os.environ.get("CUTLASS_ARCH") or envcheck.gpu_arch(report)
        cdir = envcheck.cutlass_dir()
        repo = os.environ.get("CUTLASS_REPO", "https://github.com/neutrino-gpu/cutlass")
        if arch is None:
            plan.problems.append("cutlass: no GPU detected and CUTLASS_ARCH unset; cannot pick the build arch")
        else:
            plan.steps += _clone_steps("cutlass", repo, os.environ.get("CUTLASS_REF"), cdir,
                                       f"no network? clone {repo} yourself and set CUTLASS_DIR to it")
            # EMBED_PTX: Neutrino probes PTX, so the binaries must carry it, not only SASS.
            plan.steps.append(Step("configure cutlass", [
                "cmake", "-S", str(cdir), "-B", str(cdir / "build"), f"-DCUTLASS_NVCC_ARCHS={arch}",
                "-DCUTLASS_NVCC_EMBED_PTX=ON", "-DCUTLASS_ENABLE_TESTS=OFF", "-DCMAKE_BUILD_TYPE=Release"],
                None, "cmake failed: needs cmake >= 3.19 and nvcc on PATH"))
            plan.steps.append(Step("build cutlass benchmarks",
                                   ["make", "-C", str(cdir / "build" / "examples" / "benchmark"),
                                    f"-j{os.cpu_count() or 1}"], None,
                                   "the tree must be the artifact's CUTLASS (with examples/benchmark)"))
    return plan


def _tail(text: str, n: int = 15) -> str:
    lines = text.rstrip().splitlines()
    return "\n".join("    " + ln for ln in lines[-n:]) or "    (no output)"


def execute(plan: Plan, dry_run: bool) -> int:
    for line in plan.skipped:
        print(f"[skip] {line}")
    for line in plan.problems:
        print(f"[todo] {line}")
    for i, step in enumerate(plan.steps, 1):
        cmd = shlex.join(step.argv) + (f"   (in {step.cwd})" if step.cwd else "")
        print(f"[{i}/{len(plan.steps)}] {step.what}: {cmd}", flush=True)
        if dry_run:
            continue
        rc, out = envcheck.run_tool(step.argv, timeout=STEP_TIMEOUT_S, cwd=step.cwd)
        if rc != 0:
            print(f"[fail] {step.what} exited {rc}: {cmd}\n{_tail(out)}\n  what to do: {step.hint}", flush=True)
            return envcheck.EXIT_MISSING
        print(f"[ok]   {step.what}", flush=True)
    if dry_run:
        print(f"dry run: {len(plan.steps)} step(s) listed, nothing executed")
    return envcheck.EXIT_MISSING if plan.problems else envcheck.EXIT_READY


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="report what is there (default)")
    mode.add_argument("--install", action="store_true", help="install what is missing")
    ap.add_argument("--json", action="store_true", help="with --check: machine-readable output")
    ap.add_argument("--dry-run", action="store_true", help="with --install: print the commands only")
    ap.add_argument("--neutrino", default="neutrino", help="name or path of the Neutrino CLI")
    ap.add_argument("--torch-timeout", type=float, default=180.0, help="seconds allowed for 'import torch'")
    ap.add_argument("--workloads", choices=(AUTO, *FAMILIES), default=AUTO,
                    help="the workload family to check for: paper (the artifact's PyTorch/Triton scripts), ptx "
                         "(the same kernels as PTX through the driver API) or auto (ptx unless PyTorch embeds "
                         "PTX and Triton is older than 3.3)")
    ap.add_argument("--python", help=f"the environment to check and install into, by its Python executable "
                                     f"(default: {PROJECT_PYTHON} when it exists, else this Python)")
    args = ap.parse_args(argv)

    python = target_python(args.python)
    if not _same_env(python):
        if os.environ.get(_REEXEC_ENV) or not Path(python).is_file():
            print(f"error: {python}: not a Python executable of an environment this script can run in",
                  file=sys.stderr)
            return 2
        # Re-run under the target environment's Python, so the checks see its packages and pip
        # installs into it (not into whatever Python started this script).
        print(f"running under the project's environment {_env_of(python)} ({python})", flush=True)
        script_args = list(sys.argv[1:] if argv is None else argv)
        os.execve(python, [python, str(Path(__file__).resolve()), *script_args], {**os.environ, _REEXEC_ENV: "1"})
    where = f"environment {sys.prefix} (Python {sys.executable})"
    report = envcheck.run_checks(neutrino=args.neutrino, torch_timeout=args.torch_timeout,
                                 workloads=args.workloads)
    if args.install:
        print(report.table(), "\n", flush=True)
        print(f"installing into the {where}; the notebooks' kernel must use this environment "
              "(the 'neutrino-ae' kernel: .venv/bin/python -m ipykernel install --user --name neutrino-ae)\n",
              flush=True)
        rc = execute(plan_install(report), args.dry_run)
        if args.dry_run or rc != 0:
            return rc
        final = envcheck.run_checks(neutrino=args.neutrino, torch_timeout=args.torch_timeout,
                                 workloads=args.workloads)
        print("\nafter install:\n" + final.table())
        return final.exit_code
    if args.json:
        print(json.dumps({**report.to_json(), "environment": sys.prefix, "python": sys.executable}, indent=2))
    else:
        print(f"checking the {where}")
        print(report.table())
    return report.exit_code


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(130)
