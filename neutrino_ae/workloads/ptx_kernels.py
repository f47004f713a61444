"""The suite's PTX kernels, loaded and launched through :mod:`neutrino_ae.workloads.cudadrv`.

Two kinds, both PTX for an explicit ``sm_80`` target (the A100's code shape: ``mma.sync``,
``cp.async``; the driver JIT-compiles it on sm_90):

* CUDA C (``*.cu`` beside the workload that uses it, or ``neutrino_ae/workloads/cuda/``), compiled
  with ``nvcc -ptx -arch=compute_80`` on first use and cached by source hash
  (:func:`neutrino_ae.workloads.ptx_build.cuda_ptx`), where the paper used PyTorch or SDPA kernels;
* the suite's Triton kernels, compiled ahead of time by ``tools/triton_ptx.py`` and committed as
  ``neutrino_ae/workloads/ptx/triton/<config>.ptx`` with a ``<config>.json`` beside it (kernel name,
  warps, shared bytes and every parameter in order, the two scratch pointers Triton 3.6 appends
  included).

:func:`prebuild` compiles every CUDA C file a workload family needs before ``neutrino`` runs it, so the
profiled process only reads the cache.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neutrino_ae.errors import InputError

from .cudadrv import Buffer, Driver, Kernel

REPO_ROOT = Path(__file__).resolve().parents[2]
TRITON_PTX_DIR = Path(__file__).resolve().parent / "ptx" / "triton"
CUDA_DIR = Path(__file__).resolve().parent / "cuda"


@dataclass(frozen=True)
class TritonConfig:
    """One ahead-of-time compiled Triton kernel (``<config>.json``)."""

    config: str
    kernel: str
    ptx: Path
    threads: int
    shared: int
    params: tuple[str, ...]  # parameter names, in order
    constexprs: dict[str, Any]  # what was compiled in (BLOCK_M, HEAD_DIM, ...)

    @classmethod
    def load(cls, config: str, folder: Path = TRITON_PTX_DIR) -> TritonConfig:
        meta_path = folder / f"{config}.json"
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(meta_path, f"cannot read the Triton kernel's metadata ({exc}); regenerate it with "
                                        "python tools/triton_ptx.py") from None
        return cls(config, meta["kernel"], folder / f"{config}.ptx", int(meta["threads_per_block"]),
                   int(meta["shared"]), tuple(p["name"] for p in meta["params"]), dict(meta.get("constexprs") or {}))


def cuda_ptx_path(source: Path) -> Path:
    from .ptx_build import cuda_ptx

    return cuda_ptx(source)


def prebuild(sources: Iterable[Path]) -> list[Path]:
    """Compile (or find in the cache) each CUDA C source; the PTX paths."""
    return [cuda_ptx_path(Path(s)) for s in sources]


class Kernels:
    """Kernels of one process, each module loaded once."""

    def __init__(self, drv: Driver) -> None:
        self.drv = drv

    def cuda(self, source: Path, name: str) -> Kernel:
        return self.drv.kernel(cuda_ptx_path(source), name)

    def triton(self, config: str) -> TritonLaunch:
        cfg = TritonConfig.load(config)
        return TritonLaunch(self.drv, cfg, self.drv.kernel(cfg.ptx, cfg.kernel))


@dataclass(frozen=True)
class TritonLaunch:
    drv: Driver
    cfg: TritonConfig
    kernel: Kernel

    def __call__(self, grid: Sequence[int], **args: int | float | Buffer) -> None:
        """Launch with arguments by name; the scratch pointers Triton appends get NULL. An argument the
        PTX has folded in (a stride compiled as 1) must have that value."""
        for name in set(args) & set(self.cfg.constexprs):
            value = args.pop(name)
            if value != self.cfg.constexprs[name]:
                raise InputError(self.cfg.ptx, f"{self.cfg.kernel} is compiled with {name} = "
                                               f"{self.cfg.constexprs[name]}, not {value}")
        unknown = set(args) - set(self.cfg.params)
        if unknown:
            raise InputError(self.cfg.ptx, f"{self.cfg.kernel} has no parameter(s) {', '.join(sorted(unknown))} "
                                           f"(it takes {', '.join(self.cfg.params)})")
        missing = [p for p in self.cfg.params if p not in args and "scratch" not in p]
        if missing:
            raise InputError(self.cfg.ptx, f"{self.cfg.kernel}: no value for {', '.join(missing)}")
        values: list[Any] = [args.get(p) for p in self.cfg.params]
        self.drv.launch(self.kernel, grid, self.cfg.threads, values, shared=self.cfg.shared)
