"""Compile the suite's Triton kernels to sm_80 PTX ahead of time, and keep it beside its metadata.

Why: Neutrino probes PTX only, and today's Triton cannot be run under its hook. Triton >= 3.3
launches with ``cuLaunchKernelEx``, which Neutrino's hook driver does not wrap; and on a Hopper GPU
Triton emits ``sm_90a`` code (wgmma) that the probe engine's ``ptxas -arch=sm_90`` refuses. So each
kernel of ``neutrino_ae/workloads/triton_kernels.py`` is compiled here for ``GPUTarget("cuda", 80,
32)`` (A100 code: mma.sync, cp.async), no GPU and no torch needed, and the workloads load the PTX
with the CUDA driver (``cuModuleLoadData`` + ``cuLaunchKernel``; the driver JIT-compiles sm_80 PTX
on H100/H200 too).

For each config of :data:`CONFIGS` this writes ``neutrino_ae/workloads/ptx/triton/<config>.ptx``
and ``<config>.json``: the PTX ``.entry`` name, Triton version, target, warps, stages, threads per
block, dynamic shared memory (bytes, to pass to ``cuLaunchKernel``), the constexprs, every
``.param`` of the entry in order, and ``source_sha256`` (the kernel's source text, decorators
included, as :mod:`ast` finds it; the tests recompute it without Triton, so a kernel edited without
regenerating its PTX fails them).

Parameters: pointers are compiled with divisibility 16 (what Triton's JIT infers for torch
allocations; launch with 16-byte aligned buffers); attention's head-dimension strides are folded to
the constant 1 and gmm's sizes compiled as multiples of 16, as the JIT does for contiguous torch
tensors (without either, no cp.async is emitted: one 2-byte load per element); every other integer is
a runtime argument. The entry's parameters are the remaining runtime arguments in declared order,
then the two scratch pointers Triton 3.6 appends (``global_scratch``,
``profile_scratch``; pass NULL: these kernels need no scratch, which is checked here).

Run from the repository root, with Triton (3.6.0) installed::

    PYTHONPATH=. python tools/triton_ptx.py           # (re)write the committed files
    PYTHONPATH=. python tools/triton_ptx.py --check   # compile into a temp folder; exit 1 if any file differs

Each run compiles with an empty Triton cache of its own (a temp folder), so ``--check`` really
recompiles, and without line info (``TRITON_DISABLE_LINE_INFO=1``): ``.file`` lines would hold this
checkout's absolute paths and ``.loc`` lines every kernel's position in the file, so the PTX of a
config depends only on its kernel's source, the config and the Triton version. Nothing else in the
output varies between runs (no timestamps or build hashes): ``--check`` compares bytes.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
KERNELS_PY = REPO / "neutrino_ae" / "workloads" / "triton_kernels.py"
PTX_DIR = REPO / "neutrino_ae" / "workloads" / "ptx" / "triton"
ARCH = 80
TARGET = f"sm_{ARCH}"
SCRATCH_PARAMS = ("global_scratch", "profile_scratch")
# No .loc/.file lines: they would hold this checkout's absolute paths and every kernel's line numbers,
# so the PTX would change with the folder and with edits elsewhere in the file.
_ENV = {"TRITON_DISABLE_LINE_INFO": "1"}

_ATTN_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "qk_scale_log2": "fp32",
             **{f"s{t}{d}": "i32" for t in "qkvo" for d in ("zhm" if t in "qo" else "zhn")},
             "H": "i32", "N_CTX": "i32"}
#: The head dimension's strides are 1 in every caller (q, k, v, o rows are contiguous), and Triton's JIT
#: folds a stride of 1 into the code: only then does it emit cp.async and vector loads (the A100's code
#: shape the paper's DMAT figures show). The other strides stay runtime arguments.
_UNIT_STRIDES = {f"s{t}d": 1 for t in "qkvo"}
#: the other strides are multiples of the head dim (64) in every caller: aligned rows, vector loads
_ALIGNED_STRIDES = tuple(n for n in _ATTN_SIG if n.startswith("s") and n != "qk_scale_log2")


@dataclass(frozen=True)
class Config:
    """One compiled variant: the kernel (a function of triton_kernels.py), its runtime arguments'
    Triton types in declared order, its constexprs and the launch shape compiled in."""

    kernel: str
    signature: dict[str, str]
    constexprs: dict[str, int]
    num_warps: int
    num_stages: int = 2
    used_by: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    divisible_16: tuple[str, ...] = ()  # integer arguments compiled as multiples of 16


CONFIGS: dict[str, Config] = {
    "attn_fwd_m128": Config("attn_fwd", _ATTN_SIG, {**_UNIT_STRIDES, "HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64},
                            8, used_by="Fig. 1", divisible_16=_ALIGNED_STRIDES),
    "attn_fwd_m64": Config("attn_fwd", _ATTN_SIG, {**_UNIT_STRIDES, "HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 64},
                           4, used_by="Fig. 10a", divisible_16=_ALIGNED_STRIDES),
    "attn_fwd_m128w4": Config("attn_fwd", _ATTN_SIG,
                              {**_UNIT_STRIDES, "HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64}, 4,
                              used_by="Table 2 / Fig. 12 attn", divisible_16=_ALIGNED_STRIDES),
    # M, N, K multiples of 16 (every caller's sizes are): what the JIT infers, and what gives cp.async
    "gmm_kernel": Config("gmm_kernel", {"a": "*fp16", "b": "*fp16", "c": "*fp16", "M": "i32", "N": "i32", "K": "i32"},
                         {"BM": 64, "BN": 64, "BK": 32}, 4, used_by="Table 2 / Fig. 12 gmm",
                         divisible_16=("M", "N", "K")),
    "zero_fill_persistent": Config("zero_fill_persistent", {"out_ptr": "*fp16", "numel": "i32"}, {"BLOCK": 128}, 8,
                                   used_by="Sec. 4.5 block scheduling (block_sched/persist.py)"),
    "spin_kernel": Config("spin_kernel", {"out_ptr": "*fp32", "iters": "i32", "grow": "i32"}, {"BLOCK": 128}, 4,
                          used_by="Fig. 13 (warp_sched/main.py)"),
}

_PARAM = re.compile(r"\.param\s+\.(\w+)\s+(?:\.ptr\s+)?(?:\.\w+\s+)*?(?:\.align\s+\d+\s+)?([\w$]+)")


def kernel_source_sha256(name: str, path: Path = KERNELS_PY) -> str:
    """sha256 of the source text of top-level function ``name`` in ``path``, from its first decorator
    line to its last line, as :mod:`ast` locates it (no import, so no Triton needed)."""
    text = path.read_text(encoding="utf-8")
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            segment = "".join(text.splitlines(keepends=True)[first - 1:node.end_lineno])
            return hashlib.sha256(segment.encode("utf-8")).hexdigest()
    raise LookupError(f"{path}: no top-level function {name!r}")


def entry_params(ptx: str) -> tuple[str, list[tuple[str, str]]]:
    """The one ``.entry`` of ``ptx``: its name and its parameters' (PTX name, type) in order."""
    entries = re.findall(r"\.entry\s+([\w$]+)\s*\((.*?)\)", ptx, flags=re.S)
    if len(entries) != 1:
        raise ValueError(f"expected one .entry, found {len(entries)}")
    name, body = entries[0]
    return name, [(m.group(2), m.group(1)) for m in _PARAM.finditer(body)]


def compile_config(config_name: str) -> tuple[str, dict[str, Any]]:
    """Compile one config for sm_80; returns (PTX text, its metadata for the .json file)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from neutrino_ae.workloads import triton_kernels

    cfg = CONFIGS[config_name]
    fn = getattr(triton_kernels, cfg.kernel)
    declared = [n for n in fn.arg_names if n not in cfg.constexprs]
    if declared != list(cfg.signature):
        raise ValueError(f"{config_name}: signature {list(cfg.signature)} is not the runtime args {declared}")
    signature = {n: cfg.signature.get(n, "constexpr") for n in fn.arg_names}
    pointers = [n for n, t in cfg.signature.items() if t.startswith("*")]
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n in (*pointers, *cfg.divisible_16)}
    src = ASTSource(fn, signature, cfg.constexprs, attrs)
    compiled = triton.compile(src, target=GPUTarget("cuda", ARCH, 32),
                              options={"num_warps": cfg.num_warps, "num_stages": cfg.num_stages})
    meta = compiled.metadata
    if getattr(meta, "global_scratch_size", 0) or getattr(meta, "profile_scratch_size", 0):
        raise RuntimeError(f"{config_name}: needs scratch memory; the driver launcher passes NULL")
    ptx = compiled.asm["ptx"]
    entry, params = entry_params(ptx)
    names = [*cfg.signature, *SCRATCH_PARAMS]
    if len(params) != len(names):
        raise RuntimeError(f"{config_name}: .entry {entry} has {len(params)} params, expected {names}")
    if not re.search(rf"^\.target\s+{TARGET}\b", ptx, flags=re.M):
        raise RuntimeError(f"{config_name}: PTX is not for {TARGET}")
    info = {
        "config": config_name,
        "kernel": entry,
        "function": cfg.kernel,
        "used_by": cfg.used_by,
        "triton_version": triton.__version__,
        "target": TARGET,
        "num_warps": meta.num_warps,
        "num_stages": cfg.num_stages,
        "threads_per_block": 32 * meta.num_warps,
        "shared": meta.shared,
        "constexprs": cfg.constexprs,
        "pointer_divisibility_16": pointers,
        "int_divisibility_16": list(cfg.divisible_16),
        "params": [{"name": n, "ptx_type": t, **({"triton_type": cfg.signature[n]} if n in cfg.signature else {})}
                   for n, (_, t) in zip(names, params, strict=True)],
        "source_sha256": kernel_source_sha256(cfg.kernel),
    }
    return ptx, info


@contextlib.contextmanager
def _fresh_compiler() -> Iterator[None]:
    """Triton's environment for these builds: no line info, and an empty cache of our own."""
    saved = {k: os.environ.get(k) for k in (*_ENV, "TRITON_CACHE_DIR")}
    with tempfile.TemporaryDirectory(prefix="triton_cache_") as cache:
        os.environ.update(_ENV, TRITON_CACHE_DIR=cache)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def write_all(out_dir: Path) -> dict[str, float]:
    """Compile every config into ``out_dir`` (``<config>.ptx``, ``<config>.json``); returns seconds per config."""
    from neutrino_ae.atomic import write_json, write_text

    out_dir.mkdir(parents=True, exist_ok=True)
    seconds = {}
    with _fresh_compiler():
        for name in CONFIGS:
            t0 = time.perf_counter()
            ptx, info = compile_config(name)
            seconds[name] = time.perf_counter() - t0
            write_text(out_dir / f"{name}.ptx", ptx)
            write_json(out_dir / f"{name}.json", info)
    return seconds


def differences(a: Path, b: Path) -> list[str]:
    """File names that differ between two output folders (missing on either side included)."""
    names = sorted({p.name for p in a.glob("*")} | {p.name for p in b.glob("*")})
    return [n for n in names if not ((a / n).is_file() and (b / n).is_file()
                                     and (a / n).read_bytes() == (b / n).read_bytes())]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compile into a temp folder, compare with --out")
    ap.add_argument("--out", type=Path, default=PTX_DIR, help=f"output folder (default {PTX_DIR.relative_to(REPO)})")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="triton_ptx_") as tmp:
        out = Path(tmp) if args.check else args.out
        t0 = time.perf_counter()
        seconds = write_all(out)
        for name, s in seconds.items():
            print(f"{name}: {s:.2f} s")
        print(f"compiled {len(seconds)} configs in {time.perf_counter() - t0:.2f} s")
        if args.check:
            diff = differences(out, args.out)
            if diff:
                print(f"error: differ from {args.out}: {', '.join(diff)} (run python tools/triton_ptx.py)",
                      file=sys.stderr)
                return 1
            print(f"{args.out}: up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
