"""What each block_sched figure shows, as arrays and JSON parameters (numpy only, no matplotlib).

The command line sends these to a figure process started before the trace was read
(:mod:`neutrino_ae.report.figures.process`), which has matplotlib loaded by then and draws the figures
side by side (:mod:`.figures` holds the builders); a notebook draws them in its own process. Either
way a figure is made from exactly what is listed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from neutrino_ae.report.figures.process import FigureJob

from .estimates import TraceEstimates, _gt

#: Blocks drawn per SM in the timeline: beyond a few thousand the bars are below a pixel wide, and the
#: figure's cost would grow with the trace. The first blocks by start time are drawn (greedy slots are
#: assigned in start order, so their slots are the same as in the whole trace) and the title says so.
TIMELINE_MAX_BLOCKS = 2000

FIGURES = f"{__package__}.figures"  # the folder is imported as its package by path


def pick_sms(smid: np.ndarray, ratio: np.ndarray, n: int = 3) -> list[int]:
    """SMs with the lowest, median and highest artifact ratio (distinct, in that order; ties by SM id)."""
    ok = np.isfinite(ratio)
    if not ok.any():
        return [int(s) for s in smid[:n]]
    ids, vals = smid[ok], ratio[ok]
    order = np.lexsort((ids, vals))
    idx = np.unique(np.linspace(0, order.size - 1, n).round().astype(int))
    return [int(s) for s in ids[order][idx]]


def per_sm_job(traces: Sequence[TraceEstimates], synthetic: bool, out: Path) -> FigureJob:
    """Scheduling / running per SM, one panel per trace: both estimators and the mean ratio."""
    arrays, panels = {}, []
    for i, t in enumerate(traces):
        arrays[f"{i}.smid"] = t.fifo.smid
        arrays[f"{i}.ratio"], arrays[f"{i}.slot_reuse_ratio"] = t.per_sm_ratios()
        f = t.first
        panels.append({"label": t.label, "line": f.line,
                       "mean_ratio": f.mean_scheduling / f.mean_running if f.mean_running else None})
    return FigureJob("block_sched_per_sm", f"{FIGURES}:per_sm_figure", out, arrays,
                     {"synthetic": synthetic, "panels": panels})


def timeline_job(t: TraceEstimates, synthetic: bool, out: Path, zoom_blocks: int = 24,
                 max_blocks: int = TIMELINE_MAX_BLOCKS) -> FigureJob:
    """Block timeline of the SMs with the lowest, median and highest ratio: each SM's blocks in index order
    (its first ``max_blocks`` by start time where it ran more)."""
    rec = t.records
    smid, ratio = t.fifo.smid, t.artifact_ratio()
    arrays, sms = {}, []
    for sm in pick_sms(smid, ratio):
        sel = np.flatnonzero(rec.smid == sm)  # block indices, ascending
        total = int(sel.size)
        if total > max_blocks:
            first = np.sort(np.argsort(rec.lstart[sel], kind="stable")[:max_blocks])
            sel = sel[first]  # still in index order, so colours keep alternating along the SM's blocks
        arrays[f"{sm}.start"] = rec.lstart[sel]
        arrays[f"{sm}.elapse"] = rec.elapse[sel]
        sm_ratio = ratio[np.flatnonzero(smid == sm)[0]]
        sms.append({"sm": sm, "total": total, "ratio": float(sm_ratio) if np.isfinite(sm_ratio) else None})
    return FigureJob("block_sched_timeline", f"{FIGURES}:timeline_figure", out, arrays,
                     {"synthetic": synthetic, "label": t.label, "sms": sms, "zoom_blocks": zoom_blocks})


def compare_job(traces: Sequence[TraceEstimates], synthetic: bool, out: Path) -> FigureJob:
    """Running and scheduling cycles per SM of each trace, both estimators and the sample's ground truth."""
    return FigureJob("block_sched_compare", f"{FIGURES}:compare_figure", out, {}, {
        "synthetic": synthetic,
        "labels": [f"{t.label}\n{t.records.grid_size} blocks" for t in traces],
        "running": [t.first.mean_running for t in traces],
        "scheduling": [t.first.mean_scheduling for t in traces],
        # The mean over SMs as the results' table takes it (a float64 sum of the int64 totals).
        "slot_reuse": [float(t.slot_reuse.slot_reuse_cycles.mean()) if t.slot_reuse.smid.size else 0.0
                       for t in traces],
        "ground_truth": [_gt(t.truth, "scheduling_cycles_per_sm") for t in traces],
    })


def figure_jobs(traces: Sequence[TraceEstimates], out: Path) -> list[FigureJob]:
    """Every figure of the section, in the order its files are listed."""
    late = late_figure_jobs(traces, out)
    return [late[0], *early_figure_jobs(traces, out), *late[1:]]


#: The figures' stems in the order :func:`figure_jobs` lists them (the order of a result's files).
FIGURE_ORDER = ("block_sched_per_sm", "block_sched_timeline", "block_sched_compare")


def in_figure_order(files: dict[str, Path]) -> dict[str, Path]:
    """Figure files (by name) in :data:`FIGURE_ORDER`, each figure's formats as they came: the command line
    sends the early figures first, and their files come back first."""
    rank = {stem: i for i, stem in enumerate(FIGURE_ORDER)}
    return dict(sorted(files.items(), key=lambda kv: rank.get(Path(kv[0]).stem, len(rank))))


def early_figure_jobs(traces: Sequence[TraceEstimates], out: Path) -> list[FigureJob]:
    """The figures made from the artifact's metric alone (the timeline): they can be sent with the line."""
    return [timeline_job(traces[0], _synthetic(traces), out)]


def late_figure_jobs(traces: Sequence[TraceEstimates], out: Path) -> list[FigureJob]:
    """The figures that need the slot-reuse estimator too (per SM; and the comparison of several traces)."""
    synthetic = _synthetic(traces)
    jobs = [per_sm_job(traces, synthetic, out)]
    if len(traces) > 1:
        jobs.append(compare_job(traces, synthetic, out))
    return jobs


def _synthetic(traces: Sequence[TraceEstimates]) -> bool:
    return any(t.bundle.synthetic for t in traces)
