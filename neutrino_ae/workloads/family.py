"""Which workload family dynamic.ipynb runs: the artifact's PyTorch/Triton scripts, or the same kernels
as PTX through the driver API.

Neutrino probes PTX only (no SASS mode on either branch), and its hook driver exports no
``cuLaunchKernelEx``. So the ``paper`` family works only with a PyTorch that embeds PTX and a Triton
that launches with ``cuLaunchKernel`` (before 3.3; the artifact pinned 3.1). Anything newer --
PyTorch 2.11 ships SASS only, Triton 3.6 segfaults under the hook at its first launch -- gets the
``ptx`` family: CUDA C compiled by nvcc and the suite's Triton kernels compiled ahead of time for
sm_80, loaded with ``cuModuleLoadData`` and launched with ``cuLaunchKernel``.
"""

from __future__ import annotations

import re

PAPER, PTX, AUTO = "paper", "ptx", "auto"
FAMILIES = (PAPER, PTX)
#: the first Triton whose launcher calls cuLaunchKernelEx for every launch
TRITON_LAUNCH_EX = (3, 3)


def _version(text: str | None) -> tuple[int, ...] | None:
    m = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def paper_blockers(torch: str | None, torch_ptx: bool | None, triton: str | None) -> list[str]:
    """Why the artifact's own workloads cannot be probed here (empty: they can).

    ``torch``/``triton``: installed versions or None; ``torch_ptx``: whether PyTorch's arch list has a
    ``compute_XX`` entry (None: unknown, e.g. no GPU visible to it)."""
    why = []
    if torch is None:
        why.append("PyTorch is not installed")
    elif torch_ptx is False:
        why.append(f"PyTorch {torch} ships no PTX (SASS only), and Neutrino probes PTX only")
    tv = _version(triton)
    if triton is None:
        why.append("Triton is not installed")
    elif tv is not None and tv >= TRITON_LAUNCH_EX:
        why.append(f"Triton {triton} launches with cuLaunchKernelEx, which Neutrino's hook driver does not "
                   "export (the process crashes at its first launch)")
    return why


def choose(requested: str, torch: str | None, torch_ptx: bool | None, triton: str | None) -> tuple[str, str]:
    """(family, one line saying why) for ``workloads=requested`` ("auto", "paper" or "ptx")."""
    if requested not in (AUTO, *FAMILIES):
        raise ValueError(f"workloads must be one of auto, {', '.join(FAMILIES)}; not {requested!r}")
    blockers = paper_blockers(torch, torch_ptx, triton)
    if requested == PAPER:
        return PAPER, "asked for" + (f" (expect failures: {'; '.join(blockers)})" if blockers else "")
    if requested == PTX:
        return PTX, "asked for"
    if blockers:
        return PTX, "; ".join(blockers)
    return PAPER, f"PyTorch {torch} embeds PTX and Triton {triton} launches with cuLaunchKernel"
