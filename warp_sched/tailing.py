"""Fig. 13c/13d: the tailing effect.

Active warps and busy SMs (SMs with at least one running warp) over time, from a sweep over sorted
start/end events. The **tail** starts at the end of the last interval in which at least
``threshold`` (default 90 %) of the trace's SMs are busy: from then to the kernel end, fewer than
that share of SMs have work. 13d-sub zooms on that tail.

Besides the threshold tail, the *last-wave tail* is reported: from the moment the first SM has
finished all of its work (min over SMs of its last warp end) to the kernel end, with the share of
SM capacity left idle in it (1 - sum over SMs of their remaining busy time / (SMs x tail)).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from neutrino_ae.bundle.context import Bundle
from neutrino_ae.report.figure_process import FigureProcess, draw
from neutrino_ae.report.results import SectionResult, write_results
from neutrino_ae.report.summary import summary_row

from .analysis import DEFAULT_TAIL_THRESHOLD
from .fast import TailNumbers, tail_numbers
from .figure_inputs import tail_jobs
from .inputs import PAPER_REF, SECTION, read_from


def tail_result(n: TailNumbers, out_dir: str | os.PathLike[str], figures: FigureProcess | None = None) -> SectionResult:
    """Fig. 13c/13d's table and results of :func:`.fast.tail_numbers`, with the figures 13c, 13d and
    13d-sub: drawn here, or, given ``figures`` (the command line's figure process, sent
    :func:`.figure_inputs.tail_jobs`), collected from it."""
    out, bundle, tail, wave, truth = Path(out_dir), n.bundle, n.tail, n.wave, n.truth
    drawn = None
    if figures is None:
        drawn = {k: v for job in tail_jobs(n, out) for k, v in draw(job).items()}
    data = {
        "figure": "fig13cd", "paper_ref": f"{PAPER_REF}c/d", "input": str(n.path), **read_from(n.path, n.rec, bundle),
        "n_warps": int(n.rec.lstart.size),
        "n_sms": n.n_sms, "threshold": tail.threshold, "clock_align": n.align,
        "tail_rule": "tail starts at the end of the last interval with busy SMs >= threshold x SMs in the trace",
        "kernel_cycles": n.span, "tail_start_cycle": tail.tail_start, "tail_cycles": tail.tail_cycles,
        "tail_fraction": tail.tail_fraction, "threshold_reached": tail.reached,
        "last_wave_tail_start_cycle": wave.start, "last_wave_tail_fraction": wave.fraction,
        "last_wave_tail_idle_sm_fraction": wave.idle_sm_fraction,
        "peak_active_warps": int(n.active.max()), "warps_running_in_tail": n.warps_in_tail,
        "sm_idle_fraction": n.idle_all, "sm_idle_fraction_in_tail": n.idle_tail, "ground_truth": truth,
    }
    gt = truth if isinstance(truth, dict) else {}
    ref = f"{PAPER_REF}d"
    summary = [
        summary_row(SECTION, "tail_fraction", tail.tail_fraction, "fraction", ref, bundle.kind),
        summary_row(SECTION, "last_wave_tail_fraction", wave.fraction, "fraction", ref, bundle.kind,
                    gt.get("tail_fraction")),
        summary_row(SECTION, "last_wave_tail_idle_sm_fraction", wave.idle_sm_fraction, "fraction", ref, bundle.kind,
                    gt.get("tail_idle_sm_fraction")),
        summary_row(SECTION, "sm_idle_fraction", n.idle_all, "fraction", ref, bundle.kind),
    ]
    data["summary"] = summary
    sweep = pd.DataFrame({"cycle": n.t_s, "busy_sms": n.busy})
    written = write_results(out, "fig13cd", data, input_path=n.path, tables={"fig13cd_busy_sms": sweep}, bundle=bundle)
    files = {**(figures.join() if drawn is None else drawn), **written}
    text = "\n".join([*n.lines, *(str(files[k]) for k in ("fig13c.png", "fig13d.png", "fig13d-sub.png"))])
    return SectionResult(SECTION, data, files, {"fig13cd_busy_sms": sweep}, summary, text)


def fig13cd(path: str | os.PathLike[str], out_dir: str | os.PathLike[str],
            threshold: float = DEFAULT_TAIL_THRESHOLD, section: int = 0, align: str = "sm",
            bundle: Bundle | None = None) -> SectionResult:
    """Fig. 13c (active warps), 13d (busy SMs) and 13d-sub (zoom on the tail) of one trace or table;
    ``bundle``: the run's bundle (default: the one holding ``path``, found from it)."""
    return tail_result(tail_numbers(path, threshold, section, align, bundle), out_dir)
