"""Single-operator GPU workloads that Table 2 and Fig. 12 profile: PyTorch operators and two Triton
kernels (FlashAttention-2 and a grouped GEMM). PyTorch and Triton are imported only when an
operator runs, so importing this module works anywhere.

    python -m neutrino_ae.workloads.ops softmax
"""

from __future__ import annotations

import sys

from neutrino_ae.report.command.script import run_main
from neutrino_ae.workloads.gpu import cuda_torch

TORCH_OPS = ("norm", "softmax", "sum", "pool", "embedding", "gather")
TRITON_OPS = ("attn", "gmm")


def _gmm(torch):
    """A grouped GEMM in Triton: G independent (M x K) @ (K x N) products in one launch."""
    import triton

    from neutrino_ae.workloads.triton_kernels import gmm_kernel

    groups, m, n, k = 4, 512, 512, 512
    a = torch.randn((groups, m, k), device="cuda", dtype=torch.float16)
    b = torch.randn((groups, k, n), device="cuda", dtype=torch.float16)
    c = torch.empty((groups, m, n), device="cuda", dtype=torch.float16)
    grid = (triton.cdiv(m, 64) * triton.cdiv(n, 64), groups)
    gmm_kernel[grid](a, b, c, m, n, k, BM=64, BN=64, BK=32, num_warps=4, num_stages=2)
    return c


def run_op(op: str) -> int:
    torch = cuda_torch(needed_by=f"the {op} benchmark")
    torch.manual_seed(0)
    dev = "cuda"
    if op == "norm":
        x = torch.randn((32, 256, 56, 56), device=dev)
        torch.nn.functional.batch_norm(x, None, None, training=True)
        torch.nn.functional.layer_norm(torch.randn((8192, 1024), device=dev), (1024,))
    elif op == "softmax":
        torch.softmax(torch.randn((8192, 4096), device=dev), dim=-1)
    elif op == "sum":
        torch.randn((8192, 4096), device=dev).sum(dim=-1)
    elif op == "pool":
        x = torch.randn((32, 128, 112, 112), device=dev)
        torch.nn.functional.max_pool2d(x, 3, 2, 1)
        torch.nn.functional.avg_pool2d(x, 3, 2, 1)
    elif op == "embedding":
        w = torch.randn((50_000, 1024), device=dev)
        torch.nn.functional.embedding(torch.randint(0, 50_000, (64, 512), device=dev), w)
    elif op == "gather":
        x = torch.randn((8192, 4096), device=dev)
        torch.gather(x, 1, torch.randint(0, 4096, (8192, 1024), device=dev))
    elif op == "attn":
        from neutrino_ae.workloads import attention

        q, k, v = (torch.randn((4, 32, 4096, 64), device=dev, dtype=torch.float16) for _ in range(3))
        attention.forward(q, k, v, 0.5, 128, 64, 2, 4)
    elif op == "gmm":
        _gmm(torch)
    else:
        print(f"error: unknown op {op!r}", file=sys.stderr)
        return 2
    torch.cuda.synchronize()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in (*TORCH_OPS, *TRITON_OPS):
        names = ",".join((*TORCH_OPS, *TRITON_OPS))
        print(f"usage: python -m neutrino_ae.workloads.ops {{{names}}}", file=sys.stderr)
        return 2
    return run_op(args[0])


if __name__ == "__main__":
    sys.exit(run_main(main))
