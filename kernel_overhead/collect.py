"""Table 2 collection: every kernel x probe under ``neutrino --benchmark``.

Writes ``<out>/{pytorch_op,triton_op,cutlass_op}/<kernel>/<probe>/{stdout.log,trace/}``, the layout
``kernel_overhead/kernel_overhead.py`` reads. ``--run <op>`` is the workload side: this same file
runs one PyTorch/Triton operator (PyTorch and Triton are imported only then).

    python kernel_overhead/collect.py --out traces/kernel_overhead [--probes block_sched,dmat]
    python kernel_overhead/collect.py --run softmax        # the workload alone
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from neutrino_ae.report.script import run_main  # noqa: E402
from neutrino_ae.run.collect import script_collector  # noqa: E402
from neutrino_ae.workloads.gpu import cuda_torch  # noqa: E402

PROBES = ("block_sched", "gmem_bytes", "tensorop_count", "dmat")
# torch.randn & co. launch distribution kernels before the operator; keep them un-probed.
FILTERED_KERNEL = "distribution:copy"
TORCH_OPS = ("norm", "softmax", "sum", "pool", "embedding", "gather")
TRITON_OPS = ("attn", "gmm")
# Distinct keys: the source notebook's dict used "gemm" twice and silently lost plain GEMM.
CUTLASS_OPS: dict[str, list[str]] = {
    "gemm": ["gemm", "--iterations=100"],
    "gemm-streamk": ["gemm-streamk", "--iterations=100"],
    "conv": ["conv", "--n=256", "--h=56", "--w=56", "--c=128", "--k=128", "--r=3", "--s=3"],
}


def _gmm(torch):
    """A grouped GEMM in Triton: G independent (M x K) @ (K x N) products in one launch."""
    import triton
    import triton.language as tl

    @triton.jit
    def gmm_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        g = tl.program_id(1)
        tiles_n = tl.cdiv(N, BN)
        pm, pn = tl.program_id(0) // tiles_n, tl.program_id(0) % tiles_n
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        base_a, base_b, base_c = a + g * M * K, b + g * K * N, c + g * M * N
        acc = tl.zeros([BM, BN], dtype=tl.float32)
        for k0 in range(0, K, BK):
            ka = k0 + rk
            x = tl.load(base_a + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
            y = tl.load(base_b + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc = tl.dot(x, y, acc)
        tl.store(base_c + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))

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
        sys.path.insert(0, str(ROOT / "dmat"))
        import attention

        q, k, v = (torch.randn((4, 32, 4096, 64), device=dev, dtype=torch.float16) for _ in range(3))
        attention.forward(q, k, v, 0.5, 128, 64, 2, 4)
    elif op == "gmm":
        _gmm(torch)
    else:
        print(f"error: unknown op {op!r}", file=sys.stderr)
        return 2
    torch.cuda.synchronize()
    return 0


def commands(python: str) -> dict[tuple[str, str], tuple[list[str], str | None]]:
    """(group, kernel) -> (command, -k keyword or None)."""
    from neutrino_ae.workloads.envcheck import cutlass_bin_dir

    me = str(Path(__file__).resolve())
    cmds: dict[tuple[str, str], tuple[list[str], str | None]] = {}
    for op in TORCH_OPS:
        cmds[("pytorch_op", op)] = ([python, me, "--run", op], None)
    for op in TRITON_OPS:
        cmds[("triton_op", op)] = ([python, me, "--run", op], op)
    bdir = cutlass_bin_dir()
    for name, (binary, *args) in CUTLASS_OPS.items():
        cmds[("cutlass_op", name)] = ([str(bdir / binary), *args], None)
    return cmds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", choices=TORCH_OPS + TRITON_OPS, help="run one workload (no profiling)")
    ap.add_argument("--out", type=Path, default=Path("traces/kernel_overhead"))
    ap.add_argument("--neutrino", default="neutrino")
    ap.add_argument("--probes", default=",".join(PROBES), help="comma-separated probe names or .toml files")
    ap.add_argument("--only", default="", help="comma-separated kernels to collect (default all)")
    ap.add_argument("--repeats", type=int, default=1, help="accepted for a uniform interface; unused")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per neutrino run")
    args = ap.parse_args(argv)
    if args.run:
        return run_op(args.run)

    from neutrino_ae.workloads.neutrino import CollectError, run_neutrino

    only = {s for s in args.only.split(",") if s}
    ok = failed = 0
    for (group, kernel), (cmd, kw) in commands(sys.executable).items():
        if only and kernel not in only:
            continue
        if group == "cutlass_op" and not os.access(cmd[0], os.X_OK):
            print(f"skipped {group}/{kernel}: {cmd[0]} not built (python prepare_env.py --install)")
            continue
        for probe in [p for p in args.probes.split(",") if p]:
            dest = args.out / group / kernel / Path(probe).stem
            shutil.rmtree(dest, ignore_errors=True)
            nargs = ["--benchmark", "-p", probe, "--filter", FILTERED_KERNEL, *(["-k", kw] if kw else []), *cmd]
            try:
                res = run_neutrino(nargs, None, dest, args.neutrino, timeout=args.timeout, dest_name="trace",
                                   log_name="neutrino")
            except CollectError as exc:
                print(f"failed {group}/{kernel}/{probe}: {exc}")
                failed += 1
                continue
            res.stdout_path.replace(dest / "stdout.log")
            print(f"{group}/{kernel}/{probe}: {res.seconds:.1f}s")
            ok += 1
    print(f"kernel_overhead: {ok} run(s) collected, {failed} failed")
    return 0 if ok else 1


#: The SECTION.collect entry: this script run as a subprocess into ``<trace_root>/kernel_overhead/``.
collect = script_collector("kernel_overhead", __file__)


if __name__ == "__main__":
    sys.exit(run_main(main))
