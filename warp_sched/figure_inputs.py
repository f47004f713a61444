"""What each Fig. 13 figure shows, as arrays and JSON parameters (numpy only, no matplotlib).

The command lines send these to a figure process started before the trace was read
(:mod:`neutrino_ae.report.figure_process`), which draws them side by side (:mod:`.figures` holds the
builders); the section's notebook path draws them in its own process. Either way a figure is made from
exactly what is listed here.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from neutrino_ae.report.figure_process import FigureJob

from .fast import TailNumbers, TimelineNumbers

FIGURES = f"{__package__}.figures"  # the folder is imported as its package by path


def timeline_job(n: TimelineNumbers, out: str | os.PathLike[str]) -> FigureJob:
    """Fig. 13a/13b: the drawn warps of the chosen SMs."""
    return FigureJob(n.stem, f"{FIGURES}:timeline_figure", Path(out), n.cols,
                     {"sms": n.sms, "title": n.title, "synthetic": n.bundle.synthetic, "x_max": n.x_max})


def tail_jobs(n: TailNumbers, out: str | os.PathLike[str]) -> list[FigureJob]:
    """Fig. 13c (active warps), 13d (busy SMs) and 13d-sub (zoom on the tail), in that order."""
    tail, wave, out = n.tail, n.wave, Path(out)
    xlabel = "cycles since kernel start" + (" (each SM aligned on its first warp)" if n.align == "sm" else "")
    common = {"tail": dataclasses.asdict(tail), "wave": dataclasses.asdict(wave), "n_sms": n.n_sms,
              "synthetic": n.bundle.synthetic, "xlabel": xlabel}
    # Zoom: from a little before the earlier of the two tail marks, so the drop from full occupancy shows.
    first_mark = min(tail.tail_start, wave.start)
    lo = max(tail.kernel_start, first_mark - max((tail.kernel_end - first_mark) // 4, 1))
    busy = {"t": n.t_s, "v": n.busy}
    return [
        FigureJob("fig13c", f"{FIGURES}:active_warps_figure", out, {"t": n.t_w, "v": n.active}, common),
        FigureJob("fig13d", f"{FIGURES}:busy_sms_figure", out, busy,
                  {**common, "lo": tail.kernel_start, "hi": tail.kernel_end,
                   "title": "Fig. 13d: busy SMs over time (tailing effect)"}),
        FigureJob("fig13d-sub", f"{FIGURES}:busy_sms_figure", out, busy,
                  {**common, "lo": lo, "hi": tail.kernel_end, "title": "Fig. 13d-sub: zoom on the tail"}),
    ]
