"""How dynamic.ipynb collects Sec. 4.5: the zero-fill traced with block_sched, the persistent
variant too, and Nsight Systems timings of all three when ``nsys`` is on PATH."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from neutrino_ae.workloads.neutrino import CollectContext, run_command, run_neutrino, staged

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
