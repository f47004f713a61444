"""Shared pieces of the DMAT workloads (Fig. 1, Fig. 10 a/b/c): arguments, inputs, tensor naming.

All four use q, k, v of shape (4, 32, 4096, 64) fp16 drawn with seed 42 (normal, std 0.5), scale
0.5, non-causal, as in the paper. ``--shape`` shrinks them for quick checks; ``--check`` compares
the output with PyTorch's math attention.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable
from typing import Any

# Run as a script (also under `neutrino ... python <this file>`): make the repo root importable.
from neutrino_ae.report.command.script import run_main
from neutrino_ae.workloads.gpu import cuda_torch

PAPER_SHAPE = (4, 32, 4096, 64)
SEED = 42
SCALE = 0.5
STD = 0.5


def parse_shape(text: str) -> tuple[int, int, int, int]:
    try:
        dims = tuple(int(x) for x in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape must be B,H,N,D integers, got {text!r}") from None
    if len(dims) != 4 or min(dims) <= 0:
        raise argparse.ArgumentTypeError(f"shape must be four positive integers B,H,N,D, got {text!r}")
    return dims  # type: ignore[return-value]


def parser(description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--shape", type=parse_shape, default=PAPER_SHAPE,
                    help=f"B,H,N,D (default {','.join(map(str, PAPER_SHAPE))}, the paper's)")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--scale", type=float, default=SCALE)
    ap.add_argument("--check", action="store_true",
                    help="compare with torch's math attention and print the max abs error")
    ap.add_argument("--no-tensor-trace", action="store_true", help="do not wrap in Neutrino's TensorTrace")
    return ap


def tensor_trace(enabled: bool = True) -> contextlib.AbstractContextManager[Any]:
    """Neutrino's TensorTrace (names tensors in tensor.trace for the DMAT plot) when importable."""
    if enabled:
        try:
            from neutrino.utils.tensortrace import TensorTrace
        except ImportError:
            pass
        else:
            return TensorTrace()
    return contextlib.nullcontext()


def run(description: str, attention: Callable[[Any, Any, Any, float], Any], argv: list[str] | None = None) -> int:
    """Parse arguments, build q/k/v under TensorTrace, run ``attention(q, k, v, scale)``, check.

    Returns the exit code; a missing PyTorch/GPU is one ``error:`` line (exit 2/3), never a traceback.
    """
    return run_main(lambda args: _run(description, attention, args), argv)


def _run(description: str, attention: Callable[[Any, Any, Any, float], Any], argv: list[str] | None) -> int:
    args = parser(description).parse_args(argv)
    torch = cuda_torch(needed_by=description.split(":")[0])
    torch.manual_seed(args.seed)
    with tensor_trace(not args.no_tensor_trace):
        q, k, v = (torch.empty(args.shape, dtype=torch.float16, device="cuda").normal_(0.0, STD) for _ in range(3))
        out = attention(q, k, v, args.scale)
        torch.cuda.synchronize()
    if args.check:
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel([SDPBackend.MATH]):
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), scale=args.scale)
        err = (out.float() - ref).abs().max().item()
        ok = err < 2e-2
        print(f"check shape={args.shape}: max abs error vs math attention {err:.3e} ({'ok' if ok else 'TOO LARGE'})")
        return 0 if ok else 1
    return 0
