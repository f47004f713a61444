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
import sys
from pathlib import Path

from neutrino_ae.report.command.script import run_main
from neutrino_ae.workloads.cutlass import CUTLASS_OPS
from neutrino_ae.workloads.neutrino import script_collector
from neutrino_ae.workloads.ops import TORCH_OPS, TRITON_OPS, run_op

PROBES = ("block_sched", "gmem_bytes", "tensorop_count", "dmat")
# torch.randn & co. launch distribution kernels before the operator; keep them un-probed.
FILTERED_KERNEL = "distribution:copy"
def commands(python: str, family: str = "paper") -> dict[tuple[str, str], tuple[list[str], str | None]]:
    """(group, kernel) -> (command, -k keyword or None). The ``ptx`` family runs CUDA C stand-ins of the
    PyTorch operators and the Triton kernels from sm_80 PTX (``neutrino_ae/workloads/ptx_ops.py``); the
    table keeps the paper's groups."""
    from neutrino_ae.workloads.envcheck import cutlass_bin_dir

    me = str(Path(__file__).resolve())
    cmds: dict[tuple[str, str], tuple[list[str], str | None]] = {}
    if family == "ptx":
        from neutrino_ae.workloads.ptx_ops import KERNELS

        ptx_ops = [python, "-m", "neutrino_ae.workloads.ptx_ops"]
        for op in TORCH_OPS:
            cmds[("pytorch_op", op)] = ([*ptx_ops, op], KERNELS[op])
        for op in TRITON_OPS:
            cmds[("triton_op", op)] = ([*ptx_ops, op], KERNELS[op])
    else:
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
    ap.add_argument("--family", choices=("paper", "ptx"), default="paper",
                    help="paper: PyTorch operators and Triton; ptx: the same kernels as PTX (ptx_ops.py)")
    args = ap.parse_args(argv)
    if args.run:
        return run_op(args.run)
    if args.family == "ptx":
        from neutrino_ae.workloads.ptx_kernels import prebuild
        from neutrino_ae.workloads.ptx_ops import SOURCES

        prebuild(SOURCES)  # nvcc runs here, not inside the profiled processes

    from neutrino_ae.workloads.neutrino import CollectRuns

    only = {s for s in args.only.split(",") if s}
    runs = CollectRuns("kernel_overhead", args.neutrino, args.timeout)
    for (group, kernel), (cmd, kw) in commands(sys.executable, args.family).items():
        if only and kernel not in only:
            continue
        if group == "cutlass_op" and not os.access(cmd[0], os.X_OK):
            print(f"skipped {group}/{kernel}: {cmd[0]} not built (python prepare_env.py --install)")
            continue
        for probe in [p for p in args.probes.split(",") if p]:
            nargs = ["--benchmark", "-p", probe, "--filter", FILTERED_KERNEL, *(["-k", kw] if kw else []), *cmd]
            runs.run(args.out / group / kernel / Path(probe).stem, nargs, f"{group}/{kernel}/{probe}", "trace")
    return runs.close()


#: The SECTION.collect entry: this script run as a subprocess into ``<trace_root>/kernel_overhead/``.
collect = script_collector("kernel_overhead", __file__)


if __name__ == "__main__":
    sys.exit(run_main(main))
