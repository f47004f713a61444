"""The workload kernels' PTX, built once per test run (nvcc takes ~5 s for the four .cu files)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from shared_build import build_once
from workload_kernels import KERNELS, REPO


@pytest.fixture(scope="session")
def workload_ptx(tmp_path_factory) -> dict[str, str]:
    """.cu path (as in ``KERNELS``) -> its PTX text (``cuda_ptx``, compute_80); skips without nvcc."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH (the CUDA toolkit builds the workload kernels' PTX)")
    from neutrino_ae.workloads.ptx_build import cuda_ptx

    def build(folder: Path) -> None:
        for rel in KERNELS:
            cuda_ptx(REPO / rel, cache=folder)

    cache = build_once(tmp_path_factory, "workload-ptx", build)
    # Built already: these calls find the cache files (no nvcc run, only nvcc --version once).
    return {rel: cuda_ptx(REPO / rel, cache=cache).read_text() for rel in KERNELS}
