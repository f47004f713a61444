"""The PTX cache of the workload kernels (``neutrino_ae.workloads.ptx_build``), built once per test run:
nvcc takes ~5 s of CPU for the four .cu files. Read by the workload tests (``workload_ptx``) and copied
into the emulated dynamic run's own cache, whose workloads would otherwise compile the same files again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from shared_build import build_once
from workload_kernels import KERNELS, REPO


def shared_ptx_cache(factory: pytest.TempPathFactory) -> Path:
    """The cache folder holding every ``KERNELS`` .cu's PTX (``cuda_ptx``, compute_80); skips without nvcc.
    Nobody may write into it: copy it to use it as a cache that may grow."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH (the CUDA toolkit builds the workload kernels' PTX)")
    from neutrino_ae.workloads.ptx_build import cuda_ptx

    def build(folder: Path) -> None:
        for rel in KERNELS:
            cuda_ptx(REPO / rel, cache=folder)

    return build_once(factory, "workload-ptx", build)
