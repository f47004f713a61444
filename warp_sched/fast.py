"""Fig. 13's numbers and the artifact's lines, with numpy alone (no pandas, no matplotlib): the command
lines print these first, then send the figures (:mod:`.figure_inputs`) and write the tables and results
(:mod:`.timelines`, :mod:`.tailing`: pandas from there on). The notebook path goes through the same
functions, so a figure, its JSON and its line come from one computation.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from neutrino_ae.bundle.context import Bundle, bundle_of
from neutrino_ae.errors import InputError

from .analysis import (
    DEFAULT_TAIL_THRESHOLD,
    LastWaveTail,
    Tail,
    WarpRecords,
    active_sweep,
    busy_sm_sweep,
    find_tail,
    integrate_step,
    last_wave_tail,
    peak_resident_blocks,
    per_sm_stats,
    pick_timeline_sms,
    timeline_columns,
)
from .inputs import load_warp_records, tail_truth

TITLES = {"fig13a": "Fig. 13a: exclusive scheduling, warp timeline",
          "fig13b": "Fig. 13b: shared scheduling, warp timeline"}


def timeline_sms(path: str | os.PathLike[str], rec: WarpRecords, sms: Sequence[int] | None, n_sms: int) -> list[int]:
    """The SMs a timeline draws: those asked for (each must have run a warp), else picked."""
    if sms:
        missing = sorted(set(int(s) for s in sms) - set(np.unique(rec.smid).tolist()))
        if missing:
            raise InputError(path, f"no warp ran on SM(s) {missing}")
        return [int(s) for s in sms]
    return pick_timeline_sms(rec, n_sms)


def timeline_extent(rec: WarpRecords, sms: Sequence[int]) -> int:
    """The longest span (first warp start to last warp end) of SMs ``sms`` of ``rec``."""
    chosen = np.asarray(sms, dtype=np.int64)
    on = np.isin(rec.smid, chosen)
    sm, start, end = rec.smid[on], rec.lstart[on], rec.end[on]
    return max(int(end[sm == s].max() - start[sm == s].min()) for s in chosen)


@dataclass
class TimelineNumbers:
    """Fig. 13a/13b of one trace: the drawn warps (:func:`.analysis.timeline_columns`) and every number."""

    path: str | os.PathLike[str]  # as given: the results name it so
    stem: str
    title: str
    rec: WarpRecords
    bundle: Bundle
    sms: list[int]
    cols: dict[str, np.ndarray]
    per_sm: list[dict[str, int]]
    makespan: int
    resident: int
    wave: LastWaveTail
    truth: dict
    x_max: int | None

    @property
    def max_slots(self) -> int:
        return max(r["slots"] for r in self.per_sm)

    @property
    def line(self) -> str:
        """The figure's line (the artifact's result, printed first)."""
        truth = self.truth
        gt_text = (f" (ground truth {truth['makespan_cycles']:,.0f} cycles, {truth['max_resident_blocks_per_sm']})"
                   if "makespan_cycles" in truth and "max_resident_blocks_per_sm" in truth else "")
        return (f"{self.title}: SMs {self.sms}, {self.max_slots} warp slots at most; makespan {self.makespan:,} "
                f"cycles, up to {self.resident} resident blocks per SM{gt_text}")


def timeline_numbers(path: str | os.PathLike[str], stem: str, sms: Sequence[int] | None = None, n_sms: int = 2,
                     section: int = 0, x_max: int | None = None, rec: WarpRecords | None = None,
                     bundle: Bundle | None = None) -> TimelineNumbers:
    """Fig. 13a (``stem="fig13a"``) or 13b of one trace; ``x_max`` fixes the x range in cycles (default: this
    trace's); ``rec``: its records when read already; ``bundle``: the run's (default: the one holding it)."""
    rec = load_warp_records(path, section) if rec is None else rec
    chosen = timeline_sms(path, rec, sms, n_sms)
    cols = timeline_columns(rec, chosen)
    bundle = bundle or bundle_of(path)
    return TimelineNumbers(
        path, stem, TITLES[stem], rec, bundle, chosen, cols, per_sm_stats(cols),
        int(rec.end.max() - rec.lstart.min()), peak_resident_blocks(rec.smid, rec.block, rec.lstart, rec.end),
        last_wave_tail(rec.smid, rec.lstart, rec.end), tail_truth(path, rec.path, bundle) or {}, x_max)


@dataclass
class TailNumbers:
    """Fig. 13c/13d of one trace: the sweeps, the tails and the idle shares."""

    path: str | os.PathLike[str]  # as given: the results name it so
    rec: WarpRecords
    bundle: Bundle
    align: str
    t_w: np.ndarray
    active: np.ndarray
    t_s: np.ndarray
    busy: np.ndarray
    n_sms: int
    tail: Tail
    wave: LastWaveTail
    idle_all: float
    idle_tail: float
    warps_in_tail: int
    truth: dict | None

    @property
    def span(self) -> int:
        return self.tail.kernel_end - self.tail.kernel_start

    @property
    def lines(self) -> list[str]:
        """The two result lines (the artifact's, printed first)."""
        tail, wave, gt = self.tail, self.wave, self.truth if isinstance(self.truth, dict) else {}
        return [
            f"tail: last {tail.tail_cycles:,} of {self.span:,} cycles ({tail.tail_fraction:.1%}) run with fewer than "
            f"{tail.threshold:.0%} of {self.n_sms} SMs busy; SM idle share {self.idle_all:.1%} overall, "
            f"{self.idle_tail:.1%} in the tail",
            f"last-wave tail (first SM done -> end): {wave.fraction:.1%} of the kernel, "
            f"{wave.idle_sm_fraction:.1%} of SM capacity idle in it"
            + (f" (ground truth {gt['tail_fraction']:.1%}, {gt['tail_idle_sm_fraction']:.1%})"
               if "tail_fraction" in gt and "tail_idle_sm_fraction" in gt else ""),
        ]


def tail_numbers(path: str | os.PathLike[str], threshold: float = DEFAULT_TAIL_THRESHOLD, section: int = 0,
                 align: str = "sm", bundle: Bundle | None = None) -> TailNumbers:
    """Fig. 13c/13d of one trace or table; ``bundle``: the run's (default: the one holding ``path``)."""
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
    return TailNumbers(path, rec, bundle, align, t_w, active, t_s, busy, n_sms, tail, wave, idle_all,
                       idle_tail, warps_in_tail, tail_truth(path, rec.path, bundle))
