"""The workload kernels' PTX, built once per test run (nvcc takes ~5 s for the four .cu files)."""

from __future__ import annotations

import pytest
from workload_kernels import KERNELS, REPO
from workload_ptx_cache import shared_ptx_cache


@pytest.fixture(scope="session")
def workload_ptx(tmp_path_factory) -> dict[str, str]:
    """.cu path (as in ``KERNELS``) -> its PTX text (``cuda_ptx``, compute_80); skips without nvcc."""
    from neutrino_ae.workloads.ptx_build import cuda_ptx

    cache = shared_ptx_cache(tmp_path_factory)
    # Built already: these calls find the cache files (no nvcc run, only nvcc --version once).
    return {rel: cuda_ptx(REPO / rel, cache=cache).read_text() for rel in KERNELS}
