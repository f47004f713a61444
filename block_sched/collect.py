"""How dynamic.ipynb collects Sec. 4.5: the zero-fill traced with block_sched, the persistent
variant too, and timings of the fill and both fixes.

Two workload families (``ctx.workloads``): ``paper``, the artifact's PyTorch/Triton scripts (timed
with Nsight Systems when ``nsys`` is on PATH), and ``ptx``, the same kernels as PTX through the
driver API (``ptx_workload.py``; timed with CUDA events), which Neutrino can probe on today's stacks."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from neutrino_ae.workloads.neutrino import CollectContext, CollectError, run_command, run_neutrino, staged, tail

HERE = Path(__file__).resolve().parent


def _nsys_time(ctx: CollectContext, name: str, script: Sequence[str], out: Path) -> None:
    if shutil.which("nsys") is None:
        return
    rc, so, _, _ = run_command(["nsys", "profile", "--stats=true", "--force-overwrite", "true",
                                "-o", str(out / f"nsys_{name}"), ctx.python, *script],
                               HERE.parent, out, f"nsys_{name}", ctx.env, ctx.timeout)
    ctx.log(f"  nsys {name}: exit {rc}, report {so}")


def collect(root: Path, ctx: CollectContext) -> None:
    """Fill ``root/block_sched/``: the raw trace dir, ``variants/persistent/`` and ``timing/``."""
    if ctx.workloads == "ptx":
        collect_ptx(root, ctx)
        return
    with staged(root / "block_sched") as out:
        res = run_neutrino(["-p", "block_sched", ctx.python, str(HERE / "raw.py")],
                           None, out, ctx.neutrino, ctx.env, ctx.timeout, log_name="raw")
        ctx.log(f"  raw: {', '.join(p.name for p in res.trace_dirs)} ({res.seconds:.1f}s)")
        # The memset variant launches no kernel of ours (the driver fills memory), so only the
        # persistent kernel has a block_sched trace; memset is timed with nsys below.
        var = out / "variants" / "persistent"
        var.mkdir(parents=True)
        res = run_neutrino(["-p", "block_sched", ctx.python, str(HERE / "persist.py"), "--repeat", "1"],
                           None, var, ctx.neutrino, ctx.env, ctx.timeout, log_name="persist")
        ctx.log(f"  persistent: {', '.join(p.name for p in res.trace_dirs)}")
        timing = out / "timing"
        for name in ("raw", "memset", "persist"):
            _nsys_time(ctx, name, [str(HERE / f"{name}.py")], timing)


def collect_ptx(root: Path, ctx: CollectContext) -> None:
    """The ``ptx`` family: the same layout, ``timing/events.json`` from CUDA events."""
    from neutrino_ae.workloads.ptx_kernels import prebuild

    from .ptx_workload import SOURCES

    prebuild(SOURCES)  # nvcc runs here, not inside the profiled process
    script = str(HERE / "ptx_workload.py")
    with staged(root / "block_sched") as out:
        res = run_neutrino(["-p", "block_sched", ctx.python, script, "raw"], None, out, ctx.neutrino, ctx.env,
                           ctx.timeout, log_name="raw")
        ctx.log(f"  raw (CUDA C fill, PyTorch's launch shape): {res.trace_dir.name} ({res.seconds:.1f}s)")
        var = out / "variants" / "persistent"
        var.mkdir(parents=True)
        res = run_neutrino(["-p", "block_sched", ctx.python, script, "persistent"], None, var, ctx.neutrino,
                           ctx.env, ctx.timeout, log_name="persist")
        ctx.log(f"  persistent (Triton, sm_80 PTX): {res.trace_dir.name} ({res.seconds:.1f}s)")
        timing = out / "timing"
        rc, so, se, secs = run_command([ctx.python, script, "timing", "--out", str(timing / "events.json")],
                                       HERE.parent, timing, "timing", ctx.env, ctx.timeout)
        if rc != 0:
            raise CollectError(f"{script} timing exited {rc}: {tail(se.read_text(errors='replace'))} (log: {se})")
        ctx.log(f"  timing: {so.read_text(errors='replace').strip()} ({secs:.1f}s)")
