"""PTX of the suite's own CUDA kernels, built with nvcc and cached, and the entry signatures read from PTX.

Neutrino probes PTX only, and today's PyTorch ships SASS only, so the GPU workloads launch kernels of
their own (``block_sched/fill.cu``, ``dmat/attention.cu``, ``neutrino_ae/workloads/cuda/*.cu``),
compiled here with ``nvcc -ptx -arch=compute_80`` and loaded through the driver API (the driver
JIT-compiles the PTX, and Neutrino's hook sees it).

The cache file is named by the sha256 of (source bytes, arch, nvcc's version line), so an edited
kernel or another CUDA release builds anew and an unchanged one is never rebuilt. The .cu files are
self-contained (they include only CUDA's own headers), so their bytes are the whole input.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from neutrino_ae.atomic import atomic_path
from neutrino_ae.errors import InputError

#: The cache folder: ``$NEUTRINO_AE_PTX_CACHE``, else ``~/.cache/neutrino-ae/ptx``.
CACHE_ENV = "NEUTRINO_AE_PTX_CACHE"


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "neutrino-ae" / "ptx"


@cache
def _nvcc_version(nvcc: str) -> str:
    """nvcc's ``Cuda compilation tools, release X, VY`` line: part of the cache key (another release
    may emit other PTX). Cached per nvcc path: one ``--version`` run per process."""
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    return next((line for line in lines if "release" in line), lines[-1] if lines else "")


def _first_error(text: str) -> str:
    """nvcc's first error line (``file.cu(3): error: ...``), else its first non-empty line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return next((line for line in lines if "error" in line.lower()), lines[0] if lines else "no output")


def cuda_ptx(source: Path, arch: str = "compute_80", *, cache: Path | None = None) -> Path:
    """The PTX of ``source`` for virtual ``arch`` (``nvcc -ptx -arch=<arch>``): a cache file under
    ``cache`` (default :func:`cache_dir`), built once.

    Raises :class:`InputError` naming ``source`` when it is unreadable, nvcc is not on PATH or the
    compile fails (the message quotes nvcc's first error line)."""
    source = Path(source)
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise InputError(source, f"cannot read the CUDA source ({exc.strerror})") from None
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise InputError(source, "cannot build PTX: nvcc is not on PATH (install the CUDA toolkit)")
    key = hashlib.sha256()
    for part in (data, arch.encode(), _nvcc_version(nvcc).encode()):
        key.update(len(part).to_bytes(8, "little"))  # length-prefixed: no two inputs hash alike
        key.update(part)
    out = (cache_dir() if cache is None else Path(cache)) / f"{source.stem}-{key.hexdigest()[:32]}.ptx"
    if out.is_file():
        return out
    with atomic_path(out) as tmp:
        proc = subprocess.run([nvcc, "-ptx", f"-arch={arch}", str(source), "-o", str(tmp)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise InputError(source, f"nvcc -ptx -arch={arch} failed (exit {proc.returncode}): "
                                     f"{_first_error(proc.stderr + proc.stdout)}")
    return out


# `.visible .entry name(` ... `)`: the parameter list of one kernel; `.entry` without `.visible` too.
_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)", re.S)
# `.param .u64 name`, `.param .u64 .ptr .global .align 16 name` (Triton), `.param .align 8 .b8 name[16]`.
_PARAM = re.compile(r"\.param\s+((?:\.align\s+\d+\s+|\.\w+\s+)*)([A-Za-z_$%][\w$]*)(\[\d+\])?")
_TYPES = re.compile(r"\.([usbf]\d+|pred)\b")


def ptx_entries(ptx_text: str) -> dict[str, list[str]]:
    """Kernel name -> its PTX parameter types in order (``u64``, ``u32``, ``s32``, ``f32``, ``b32``, ...).

    An array parameter (``.param .align 8 .b8 p[16]``, a struct passed by value) reads as ``b8[16]``."""
    entries: dict[str, list[str]] = {}
    for match in _ENTRY.finditer(ptx_text):
        types = []
        for qualifiers, _name, array in _PARAM.findall(match.group(2)):
            found = _TYPES.findall(qualifiers)
            types.append((found[0] if found else "?") + array)
        entries[match.group(1)] = types
    return entries
