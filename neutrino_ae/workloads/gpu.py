"""What the GPU workloads share: PyTorch (and Triton) on a CUDA device, or one clear error line.

The workloads import these lazily so their ``--help`` works on machines without PyTorch.
"""

from __future__ import annotations

from types import ModuleType

from neutrino_ae.errors import EnvironmentProblem, NoGPUError


def cuda_torch(triton: bool = False, needed_by: str = "this workload") -> ModuleType:
    """Import PyTorch (and Triton when asked) and check that a CUDA device is visible.

    Raises :class:`EnvironmentProblem` (exit code 2) for a missing package and
    :class:`NoGPUError` (exit code 3) when PyTorch sees no CUDA device.
    """
    try:
        import torch

        if triton:
            import triton as _triton  # noqa: F401
    except ImportError as exc:
        raise EnvironmentProblem(f"{exc.name} is not installed ({needed_by} needs PyTorch with CUDA"
                                 f"{' and Triton' if triton else ''})") from None
    if not torch.cuda.is_available():
        raise NoGPUError("no CUDA device visible to PyTorch")
    return torch
