"""Build and run the REAL Neutrino (hook driver, CLI, probe engine) over our emulated CUDA driver.

:func:`build` extracts a Neutrino branch's source (``$NEUTRINO_SRC/neutrino-<branch>.tar.gz``),
compiles ``emucuda.c`` into ``libcuda.so.1`` and builds the hook driver from Neutrino's own files
with the steps of its ``neutrino/build.py``: ``src/parse.py`` generates the pass-through wrappers
from ``cuda.h`` and the driver's symbols, ``cc`` compiles ``src/cuda.c`` and ``src/preload.c``
unmodified, and ``build/config.toml`` records the same keys. Two things differ from running
build.py itself, both because of this machine, not of Neutrino:

* the header is CUDA 12.1's ``cuda.h`` (pip package ``nvidia-cuda-runtime-cu12``, the artifact's
  era). CUDA 13's ``cuda.h`` declares both ``cuX`` -- itself a macro for ``cuX_v2`` -- and
  ``cuX_v2`` for several entry points (cuEventElapsedTime, cuStreamUpdateCaptureDependencies,
  cuMemcpyBatchAsync, ...), so parse.py emits both wrappers and cuda.c fails to compile
  ("redefinition of cuEventElapsedTime_v2"); build.py has no option for another header folder;
* the "real" driver is our emulator, found by path rather than by ``ldconfig -p``.

A stub ``nvidia-smi`` answers the probe engine's compute-capability query (8.0). :func:`run`
then runs the real CLI like a user: ``neutrino -p <probe> [options] python workload.py ...``.
Nothing of Neutrino is copied into this repository; only what it writes is kept (as test data).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from neutrino_ae.formats.tracedir import launched_nothing

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
KERNELS_CU = REPO / "tools" / "genuine" / "kernels.cu"


#: What the stub nvidia-smi runs first, as the real one does: dlopen libcuda.so.1 (under the hook, the hook
#: driver) and cuInit(0).
CUINIT_C = r"""#include <dlfcn.h>
#include <stdio.h>
int main(void) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    int (*cu_init)(unsigned) = (int (*)(unsigned))dlsym(cuda, "cuInit");
    return cu_init ? cu_init(0) : 1;
}
"""


class Unavailable(RuntimeError):
    """What this machine lacks to run the real Neutrino (a test skips with this one line)."""


@dataclass(frozen=True)
class Install:
    branch: str
    root: Path  # work folder of this build
    tree: Path  # the extracted Neutrino source, built
    neutrino: Path  # the CLI as a command
    bindir: Path  # stub nvidia-smi and the neutrino command
    ptx: Path  # our kernels, compiled by nvcc

    def env(self, fill: Path | None = None, **emucuda: str) -> dict[str, str]:
        env = {**os.environ, "PATH": f"{self.bindir}{os.pathsep}{os.environ['PATH']}",
               "PYTHONPATH": str(self.tree)}
        if fill is not None:
            env["EMUCUDA_FILL"] = str(fill)
        env.update({f"EMUCUDA_{k.upper()}": str(v) for k, v in emucuda.items()})
        return env


def cuda_include() -> Path | None:
    """The folder of a cuda.h the artifact's hook driver compiles against (see the module docstring)."""
    if os.environ.get("NEUTRINO_CUDA_INCLUDE"):
        return Path(os.environ["NEUTRINO_CUDA_INCLUDE"])
    try:
        import nvidia.cuda_runtime  # the pip wheel of CUDA 12's runtime ships include/cuda.h
    except ImportError:
        return None
    for base in nvidia.cuda_runtime.__path__:
        if (Path(base) / "include" / "cuda.h").is_file():
            return Path(base) / "include"
    return None


def source_dir() -> Path:
    return Path(os.environ.get("NEUTRINO_SRC", REPO.parent / "shared" / "neutrino-src"))


def source_of(branch: str) -> Path:
    """Where ``branch``'s source is: ``$NEUTRINO_SRC`` as a folder of ``neutrino-<branch>.tar.gz``, as one
    such tarball, or as a Neutrino checkout (a folder holding ``neutrino/build.py``; any branch)."""
    src = source_dir()
    if src.is_file() or (src / "neutrino" / "build.py").is_file():
        return src
    return src / f"neutrino-{branch}.tar.gz"


def unavailable(branch: str = "artifact") -> str | None:
    """Why the real Neutrino cannot be built here, or None."""
    tarball = source_of(branch)
    if not tarball.exists():
        return (f"Neutrino source {tarball} not found (set NEUTRINO_SRC to a folder of neutrino-<branch>.tar.gz, "
                "one such tarball, or a Neutrino checkout)")
    for tool in ("cc", "nm", "ptxas", "nvcc", "file"):
        if shutil.which(tool) is None:
            return f"{tool} not on PATH"
    if cuda_include() is None:
        return ("CUDA 12's cuda.h not found: pip install 'nvidia-cuda-runtime-cu12==12.1.105' (the hook driver "
                "compiles against it) or set NEUTRINO_CUDA_INCLUDE")
    try:
        import toml  # noqa: F401
    except ImportError:
        return "the Python package 'toml' is not installed (the real Neutrino needs it)"
    return None


def _stubs(cuda_h: Path, implemented: set[str]) -> str:
    """C stubs for every driver entry point cuda.h declares that emucuda.c does not implement: the
    hook driver dlsym()s them all at start-up. Each returns CUDA_ERROR_NOT_SUPPORTED (801).

    Only the names as declared are exported, not the ``_v2`` targets of cuda.h's versioning macros
    (``#define cuX __CUDA_API_PTSZ(cuX_v2)``): Neutrino's parse.py would add a wrapper for each such
    symbol next to the macro-renamed one and the hook driver stops compiling (its cuda.c #undefs
    only the macros of its day). A driver of the artifact's era exported just those; emucuda.c
    implements the ``_v2`` entry points the hook driver calls itself (cuMemsetD32_v2, ...)."""
    text = cuda_h.read_text(errors="replace")
    names = set(re.findall(r"CUresult CUDAAPI\s+(cu\w+)\s*\(", text))
    return "\n".join(f"int {n}(void) {{ return 801; }}" for n in sorted(names - implemented)) + "\n"


def build_emucuda(emu: Path, include: Path) -> Path:
    """Compile the emulated driver into ``emu/`` (its folder is what LD_LIBRARY_PATH names for a process
    run without the hook); the ``libcuda.so.1`` link."""
    implemented = set(re.findall(r"^CUresult (cu\w+)\(", (HERE / "emucuda.c").read_text(), re.M))
    (emu / "emucuda_stubs.c").write_text(_stubs(include / "cuda.h", implemented))
    _cc("-shared", "-fPIC", "-O2", "-o", str(emu / "libcuda.so.999.0"), str(HERE / "emucuda.c"),
        str(emu / "emucuda_stubs.c"))
    # Named like a driver release: preload.so redirects every dlopen of a name containing
    # "libcuda.so.1" to the hook driver, the real driver's own file name included.
    (emu / "libcuda.so.1").symlink_to("libcuda.so.999.0")
    return emu / "libcuda.so.1"


def _cc(*args: str) -> None:
    subprocess.run(["cc", *args], check=True, capture_output=True, text=True)


def build(branch: str, root: Path) -> Install:
    """Extract and build ``branch`` in ``root`` (a fresh folder). Raises Unavailable or CalledProcessError."""
    problem = unavailable(branch)
    if problem:
        raise Unavailable(problem)
    root.mkdir(parents=True, exist_ok=True)
    bindir, emu = root / "bin", root / "emucuda"
    bindir.mkdir()
    emu.mkdir()
    smi = bindir / "nvidia-smi"
    # The probe engine asks for compute_cap alone; other callers (prepare_env) for a full GPU line.
    # Like the real nvidia-smi it loads libcuda.so.1 and calls cuInit: run by the probe engine, it
    # inherits the hook's LD_PRELOAD and LD_LIBRARY_PATH, so the hook driver opens a trace folder for it
    # and announces it on the CLI's stderr, as on a real GPU (tests/data/gpu/h200/MANIFEST.md).
    # In C, not ``python -c``: a run calls it once per probed kernel, and a Python start costs ~0.1 s.
    (bindir / "cuinit.c").write_text(CUINIT_C)
    _cc("-O1", "-o", str(bindir / "cuinit"), str(bindir / "cuinit.c"), "-ldl")
    smi.write_text("#!/bin/sh\n"
                   f"{shlex.quote(str(bindir / 'cuinit'))} >&2 || true\n"
                   'case "$*" in *query-gpu=compute_cap" "*) echo 8.0 ;;\n'
                   '  *) echo "NVIDIA A100-SXM4-40GB (emucuda), 8.0, 999.0" ;; esac\n')
    smi.chmod(0o755)

    include = cuda_include()
    assert include is not None
    build_emucuda(emu, include)

    source = source_of(branch)
    if source.is_dir():  # a checkout: copied, so the build writes nothing into it
        shutil.copytree(source, root / "src" / source.name, ignore=shutil.ignore_patterns(".git", "build"))
    else:
        with tarfile.open(source) as tar:
            tar.extractall(root / "src", filter="data")
    tree = _source_tree(root)
    src, out = tree / "neutrino" / "src", tree / "neutrino" / "build"
    out.mkdir(exist_ok=True)
    # The steps of neutrino/build.py for CUDA, on Neutrino's unmodified sources:
    subprocess.run([sys.executable, str(src / "parse.py"), str(include / "cuda.h"), str(emu / "libcuda.so.999.0")],
                   check=True, capture_output=True, text=True)
    _cc(str(src / "cuda.c"), "-fPIC", "-shared", "-ldl", "-lpthread", "-O3", "-I", str(include),
        "-o", str(out / "libcuda.so.1"))
    _cc(str(src / "preload.c"), "-fPIC", "-shared", "-O3", "-o", str(out / "preload.so"))
    (out / "libcuda.so").symlink_to("libcuda.so.1")
    import toml

    config = {"system": {"NEUTRINO_MODE": "CUDA", "NEUTRINO_DRIVER_HEADER_NAME": "cuda.h",
                         "NEUTRINO_DRIVER_HEADER_DIR": str(include), "NEUTRINO_HOOK_DRIVER_LIB_NAME": "libcuda.so.1",
                         "NEUTRINO_REAL_DRIVER_LIB_NAME": "libcuda.so.999.0", "NEUTRINO_REAL_DRIVER_LIB_DIR": str(emu)}}
    (out / "config.toml").write_text(toml.dumps(config))
    neutrino = bindir / "neutrino"
    # Quoted: the Python may live in a checkout whose path has a space.
    neutrino.write_text(f"#!/bin/sh\nexec {shlex.join([sys.executable, str(tree / 'neutrino' / 'cli.py')])} \"$@\"\n")
    neutrino.chmod(0o755)
    ptx = root / "kernels.ptx"
    subprocess.run(["nvcc", "-ptx", "-arch=sm_80", str(KERNELS_CU), "-o", str(ptx)], check=True,
                   capture_output=True, text=True)
    return installed(branch, root)


def _source_tree(root: Path) -> Path:
    """The extracted Neutrino source under ``root/src`` (the folder holding ``neutrino/build.py``)."""
    return next(p for p in (root / "src").iterdir() if (p / "neutrino" / "build.py").is_file())


def installed(branch: str, root: Path) -> Install:
    """The :class:`Install` that ``build(branch, root)`` made earlier, e.g. in another test process."""
    tree = _source_tree(root)
    return Install(branch, root, tree, root / "bin" / "neutrino", root / "bin", root / "kernels.ptx")


def workload(install: Install, kernel: str, grid: int, block: int, launches: int = 1) -> list[str]:
    """The argv of our driver-API workload (what follows ``neutrino -p <probe>``)."""
    return [sys.executable, str(HERE / "workload.py"), str(install.ptx), kernel, str(grid), str(block),
            "--launches", str(launches)]


def run(install: Install, cli_args: list[str], command: list[str], workdir: Path, fill: Path | None = None,
        timeout: float = 300, **emucuda: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """Run ``neutrino <cli_args> <command>`` in ``workdir``; return the trace dir it announced."""
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([str(install.neutrino), *cli_args, *command], cwd=workdir, capture_output=True,
                          text=True, env=install.env(fill, **emucuda), timeout=timeout)
    found = [(workdir / d).resolve() for d in re.findall(r"trace in (\S+)", proc.stderr)]
    work = [d for d in found if not launched_nothing(d)]  # not the nvidia-smi calls' folders
    if proc.returncode != 0 or not work:
        raise RuntimeError(f"neutrino {' '.join(cli_args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return work[-1], proc
