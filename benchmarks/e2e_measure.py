"""Measuring one end-to-end run (:mod:`benchmarks.e2e`): a whole process timed with its own peak RSS, our
CLI's outputs checked, its figure rendering time taken from one more run under cProfile, the
linear extrapolation that keeps a next size from exhausting a shared machine, and the growth
exponent of time against input size.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.e2e_cases import E2ECase
from benchmarks.machine import meminfo_bytes
from benchmarks.measure import child_failure, spawn_measured

#: The profiled function whose cumulative time is "figure rendering".
RENDER_FILE = os.path.join("neutrino_ae", "report", "figures", "style.py")
RENDER_FUNC = "save_figure"
#: Skip a run whose peak RSS, extrapolated linearly from the previous size, would exceed this share of
#: the memory available now (both DMAT tools hold every (clock, page) pair of a random trace; the
#: machine is shared, so half of what is free is the most one run may take).
MEM_SHARE = 0.5


def run_measured(cmd: Sequence[str], env: dict[str, str], log: Path, timeout_s: float) -> dict[str, Any]:
    """Run one whole process; wall seconds (parent clock, start-up included), its own peak RSS and output."""
    run = spawn_measured(cmd, env, log, timeout_s)
    text = log.read_text(errors="replace")
    code = run.pop("returncode")
    if code != 0:
        raise child_failure(f"{' '.join(cmd[:3])} ...", code, text, 12)
    return {**run, "stdout": text}


def our_outputs(out: Path, stdout: str) -> dict[str, Any]:
    pngs = sorted(out.rglob("*.png"))
    if not pngs:
        raise RuntimeError(f"our CLI wrote no PNG into {out}")
    last = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    return {"pngs": len(pngs), "svgs": len(list(out.rglob("*.svg"))),
            "files": sum(1 for p in out.rglob("*") if p.is_file()), "last_line": last[-200:]}


#: Run with ``python -c`` on a cProfile file (in a child: the parent's RSS stays small): the summed
#: cumulative seconds and calls of the render function, and the profile's total.
SUM_PROFILE = f"""
import json, pstats, sys
st = pstats.Stats(sys.argv[1])
render, calls = 0.0, 0
for (filename, _line, func), (_cc, ncalls, _tt, cumtime, _callers) in st.stats.items():
    if func == {RENDER_FUNC!r} and filename.endswith({RENDER_FILE!r}):
        render += cumtime
        calls += ncalls
print(json.dumps({{"render_seconds": render, "render_calls": calls, "profiled_seconds": st.total_tt}}))
"""


def profile_render(case: E2ECase, inp: Path, scratch: Path, timeout_s: float) -> dict[str, Any]:
    """Our CLI once more under ``python -m cProfile`` (figures drawn in-process); the cumulative time of
    ``save_figure``."""
    prof = scratch / "cli.prof"
    out = scratch / "out"
    cmd = [sys.executable, "-m", "cProfile", "-o", str(prof), *case.ours(inp, out)]
    # Drawn in the profiled process itself: a command line draws its figures in a forked figure process
    # (neutrino_ae/report/figures/process.py), which cProfile does not see.
    run = run_measured(cmd, {**os.environ, "NEUTRINO_AE_NO_FORK": "1"}, scratch / "profile.log", timeout_s)
    outputs = our_outputs(out, run.pop("stdout"))
    proc = subprocess.run([sys.executable, "-c", SUM_PROFILE, str(prof)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"reading {prof} failed: {proc.stderr.strip()[-300:]}")
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    doc["profiled_wall_seconds"] = run["seconds"]
    doc["run"], doc["outputs"] = run, outputs
    return doc


def skip_reason(who: str, prev: dict[str, Any], growth: float, args: argparse.Namespace) -> str | None:
    """Why a run ``growth`` times larger than ``prev`` is not started (linear extrapolation), or None:
    the machine is shared, so a run must neither exhaust its memory nor outlast ``--timeout``."""
    want = prev["peak_rss_bytes"] * growth
    avail = meminfo_bytes("MemAvailable")
    if avail is not None and want > MEM_SHARE * avail:
        return (f"{who}'s peak RSS extrapolates to {want / 2**30:.1f} GiB, more than {MEM_SHARE:.0%} of the "
                f"{avail / 2**30:.1f} GiB available")
    if prev["seconds"] * growth > args.timeout:
        return f"{who} would run past --timeout {args.timeout:g} s"
    return None


def median_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    secs = [r["seconds"] for r in runs]
    return {"seconds": statistics.median(secs), "seconds_runs": secs,
            "peak_rss_bytes": max(r["peak_rss_bytes"] for r in runs),
            "cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs)}


def growth_exponent(points: Sequence[tuple[float, float]]) -> float | None:
    """Slope of log(seconds) against log(input bytes), least squares; None with fewer than two sizes."""
    pts = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len({p[0] for p in pts}) < 2:
        return None
    mx = statistics.fmean(p[0] for p in pts)
    my = statistics.fmean(p[1] for p in pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx
