"""Workloads on machines without a usable GPU: one error line and a documented exit code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKLOADS = ["block_sched/raw.py", "block_sched/memset.py", "dmat/fig10b.py"]


@pytest.fixture()
def torch_without_cuda(tmp_path: Path) -> dict[str, str]:
    """An importable stub ``torch`` whose CUDA is unavailable, as on a CPU-only PyTorch build."""
    pkg = tmp_path / "stubs" / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("class cuda:\n    @staticmethod\n    def is_available():\n        return False\n")
    return {**os.environ, "PYTHONPATH": str(tmp_path / "stubs")}


@pytest.mark.parametrize("script", WORKLOADS)
def test_cpu_only_torch_exits_3_with_one_line(script, torch_without_cuda):
    proc = subprocess.run([sys.executable, str(REPO / script)], capture_output=True, text=True, timeout=60,
                          env=torch_without_cuda, cwd=str(REPO.parent), check=False)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip() == "error: no CUDA device visible to PyTorch"


def test_missing_triton_is_named(torch_without_cuda, monkeypatch):
    from neutrino_ae.errors import EnvironmentProblem
    from neutrino_ae.workloads.gpu import cuda_torch

    monkeypatch.setitem(sys.modules, "triton", None)  # makes `import triton` raise ImportError
    with pytest.raises(EnvironmentProblem, match=r"^(torch|triton) is not installed \(persist\.py needs"):
        cuda_torch(triton=True, needed_by="persist.py")
