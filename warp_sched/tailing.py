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

import numpy as np
import pandas as pd

from neutrino_ae.bundle.context import Bundle, bundle_of
from neutrino_ae.report.results import SectionResult, write_results
from neutrino_ae.report.style import (
    FIXED_TITLES,
    MAX_WIDTH_IN,
    PALETTE,
    mark_synthetic,
    save_figure_files,
    style_context,
)
from neutrino_ae.report.summary import summary_row

from .analysis import (
    DEFAULT_TAIL_THRESHOLD,
    active_sweep,
    busy_sm_sweep,
    find_tail,
    integrate_step,
    last_wave_tail,
)
from .figures import _figure, _shade_tail, draw_step
from .inputs import PAPER_REF, SECTION, load_warp_records, read_from, tail_truth


def fig13cd(path: str | os.PathLike[str], out_dir: str | os.PathLike[str],
            threshold: float = DEFAULT_TAIL_THRESHOLD, section: int = 0, align: str = "sm",
            bundle: Bundle | None = None) -> SectionResult:
    """Fig. 13c (active warps), 13d (busy SMs) and 13d-sub (zoom on the tail) of one trace or table;
    ``bundle``: the run's bundle (default: the one holding ``path``, found from it)."""
    rec = load_warp_records(path, section, align)
    t_w, active = active_sweep(rec.lstart, rec.end)
    t_s, busy = busy_sm_sweep(rec.smid, rec.lstart, rec.end)
    n_sms = rec.n_sms
    tail = find_tail(t_s, busy, n_sms, threshold)
    wave = last_wave_tail(rec.smid, rec.lstart, rec.end)
    span = tail.kernel_end - tail.kernel_start
    idle_all = 1 - integrate_step(t_s, busy, tail.kernel_start, tail.kernel_end) / (n_sms * span) if span else 0.0
    idle_tail = (1 - integrate_step(t_s, busy, tail.tail_start, tail.kernel_end) / (n_sms * tail.tail_cycles)
                 if tail.tail_cycles else 0.0)
    warps_in_tail = int(np.count_nonzero(rec.end > tail.tail_start))
    bundle = bundle or bundle_of(path)
    synthetic = bundle.synthetic
    out = Path(out_dir)
    files: dict[str, Path] = {}
    xlabel = "cycles since kernel start" + (" (each SM aligned on its first warp)" if align == "sm" else "")

    # Warp and SM counts stay far below 1e6: no y offset text for a title to avoid, so titles stay fixed.
    with style_context(FIXED_TITLES):
        fig = _figure(MAX_WIDTH_IN, 3.6)
        ax = fig.subplots()
        draw_step(ax, t_w, active, tail.kernel_start, tail.kernel_end, PALETTE[0], 1, "active warps",
                  fill_alpha=0.25)
        _shade_tail(ax, tail, wave)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("active warps (all SMs)")
        ax.set_ylim(0, max(int(active.max()), 1) * 1.3)
        ax.set_xlim(tail.kernel_start, tail.kernel_end)
        ax.legend(loc="upper right", ncols=3)
        ax.set_title(f"Fig. 13c: active warps over time ({n_sms} SMs)")
        mark_synthetic(fig, synthetic)
    files.update(save_figure_files(fig, out, "fig13c"))

    def busy_axes(ax, lo: int, hi: int, title: str) -> None:
        draw_step(ax, t_s, busy, lo, hi, PALETTE[2], 1.2, "busy SMs")
        ax.axhline(threshold * n_sms, color="grey", lw=1, ls="-.", label=f"{threshold:.0%} of {n_sms} SMs")
        _shade_tail(ax, tail, wave)
        ax.set_xlim(lo, hi)
        ax.set_ylim(0, n_sms * 1.35)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("SMs with running warps")
        ax.legend(loc="upper right", ncols=2)
        ax.set_title(title)

    with style_context(FIXED_TITLES):
        fig = _figure(MAX_WIDTH_IN, 3.6)
        busy_axes(fig.subplots(), tail.kernel_start, tail.kernel_end, "Fig. 13d: busy SMs over time (tailing effect)")
        mark_synthetic(fig, synthetic)
    files.update(save_figure_files(fig, out, "fig13d"))

    # Zoom: from a little before the earlier of the two tail marks, so the drop from full occupancy shows.
    first_mark = min(tail.tail_start, wave.start)
    lo = max(tail.kernel_start, first_mark - max((tail.kernel_end - first_mark) // 4, 1))
    with style_context(FIXED_TITLES):
        fig = _figure(MAX_WIDTH_IN, 3.6)
        busy_axes(fig.subplots(), lo, tail.kernel_end, "Fig. 13d-sub: zoom on the tail")
        mark_synthetic(fig, synthetic)
    files.update(save_figure_files(fig, out, "fig13d-sub"))

    truth = tail_truth(path, rec.path, bundle)
    data = {
        "figure": "fig13cd", "paper_ref": f"{PAPER_REF}c/d", "input": str(path), **read_from(path, rec, bundle),
        "n_warps": int(rec.lstart.size),
        "n_sms": n_sms, "threshold": threshold, "clock_align": align,
        "tail_rule": "tail starts at the end of the last interval with busy SMs >= threshold x SMs in the trace",
        "kernel_cycles": span, "tail_start_cycle": tail.tail_start, "tail_cycles": tail.tail_cycles,
        "tail_fraction": tail.tail_fraction, "threshold_reached": tail.reached,
        "last_wave_tail_start_cycle": wave.start, "last_wave_tail_fraction": wave.fraction,
        "last_wave_tail_idle_sm_fraction": wave.idle_sm_fraction,
        "peak_active_warps": int(active.max()), "warps_running_in_tail": warps_in_tail,
        "sm_idle_fraction": idle_all, "sm_idle_fraction_in_tail": idle_tail, "ground_truth": truth,
    }
    gt = truth if isinstance(truth, dict) else {}
    ref = f"{PAPER_REF}d"
    summary = [
        summary_row(SECTION, "tail_fraction", tail.tail_fraction, "fraction", ref, bundle.kind),
        summary_row(SECTION, "last_wave_tail_fraction", wave.fraction, "fraction", ref, bundle.kind,
                    gt.get("tail_fraction")),
        summary_row(SECTION, "last_wave_tail_idle_sm_fraction", wave.idle_sm_fraction, "fraction", ref, bundle.kind,
                    gt.get("tail_idle_sm_fraction")),
        summary_row(SECTION, "sm_idle_fraction", idle_all, "fraction", ref, bundle.kind),
    ]
    data["summary"] = summary
    sweep = pd.DataFrame({"cycle": t_s, "busy_sms": busy})
    files.update(write_results(out, "fig13cd", data, input_path=path, tables={"fig13cd_busy_sms": sweep},
                               bundle=bundle))
    text = (f"tail: last {tail.tail_cycles:,} of {span:,} cycles ({tail.tail_fraction:.1%}) run with fewer than "
            f"{threshold:.0%} of {n_sms} SMs busy; SM idle share {idle_all:.1%} overall, {idle_tail:.1%} in the tail\n"
            f"last-wave tail (first SM done -> end): {wave.fraction:.1%} of the kernel, "
            f"{wave.idle_sm_fraction:.1%} of SM capacity idle in it"
            + (f" (ground truth {gt['tail_fraction']:.1%}, {gt['tail_idle_sm_fraction']:.1%})"
               if "tail_fraction" in gt and "tail_idle_sm_fraction" in gt else "") + "\n"
            + "\n".join(str(files[k]) for k in ("fig13c.png", "fig13d.png", "fig13d-sub.png")))
    return SectionResult(SECTION, data, files, {"fig13cd_busy_sms": sweep}, summary, text)
