"""Fig. 13c/13d: the tailing effect.

Active warps and busy SMs (SMs with at least one running warp) over time, from a sweep over sorted
start/end events. The **tail** starts at the end of the last interval in which at least
``threshold`` (default 90 %) of the trace's SMs are busy: from then to the kernel end, fewer than
that share of SMs have work. 13d-sub zooms on that tail.

Besides the threshold tail, the *last-wave tail* is reported: from the moment the first SM has
finished all of its work (min over SMs of its last warp end) to the kernel end, with the share of
SM capacity left idle in it (1 - sum over SMs of their remaining busy time / (SMs x tail)). The
numbers and the lines need numpy alone; the table is built (pandas) after the lines are printed.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import numpy as np

from neutrino_ae.bundle.context import Bundle
from neutrino_ae.report.section.driver import Figure, Number, Result

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
)
from .inputs import PAPER_REF, read_from, tail_truth

#: The figures' files, in the order the closing lines name them.
PNGS = ("fig13c.png", "fig13d.png", "fig13d-sub.png")


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


def tail_numbers(path: str | os.PathLike[str], rec: WarpRecords, bundle: Bundle,
                 threshold: float = DEFAULT_TAIL_THRESHOLD, align: str = "sm") -> TailNumbers:
    """Fig. 13c/13d of one trace's or table's records (read with clock alignment ``align``)."""
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
    return TailNumbers(path, rec, bundle, align, t_w, active, t_s, busy, n_sms, tail, wave, idle_all,
                       idle_tail, warps_in_tail, tail_truth(path, rec.path, bundle))


def _table(n: TailNumbers):  # noqa: ANN202 - a DataFrame, pandas imported after the lines
    import pandas as pd

    return pd.DataFrame({"cycle": n.t_s, "busy_sms": n.busy})


def tail_result(n: TailNumbers) -> Result:
    """Fig. 13c/13d's numbers, table and results document (``fig13cd.json``, its rows last)."""
    bundle, tail, wave, truth = n.bundle, n.tail, n.wave, n.truth
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
        "summary": None,  # the rows' place
    }
    gt = truth if isinstance(truth, dict) else {}
    numbers = {"tail_fraction": tail.tail_fraction, "last_wave_tail_fraction": wave.fraction,
               "last_wave_tail_idle_sm_fraction": wave.idle_sm_fraction, "sm_idle_fraction": n.idle_all}
    return Result(
        files={"fig13cd_busy_sms": lambda: _table(n)},
        numbers={k: Number(v, ref=f"{PAPER_REF}d") for k, v in numbers.items()},
        truth={"last_wave_tail_fraction": gt.get("tail_fraction"),
               "last_wave_tail_idle_sm_fraction": gt.get("tail_idle_sm_fraction")},
        units=dict.fromkeys(numbers, "fraction"), data=data, lines=n.lines,
        done="\n".join(f"{{{k}}}" for k in PNGS), input=n.path, plots={"tail": n})


def tail_figures(n: TailNumbers) -> list[Figure]:
    """Fig. 13c (active warps), 13d (busy SMs) and 13d-sub (zoom on the tail), in that order."""
    tail, wave = n.tail, n.wave
    xlabel = "cycles since kernel start" + (" (each SM aligned on its first warp)" if n.align == "sm" else "")
    common = {"tail": dataclasses.asdict(tail), "wave": dataclasses.asdict(wave), "n_sms": n.n_sms,
              "synthetic": n.bundle.synthetic, "xlabel": xlabel}
    # Zoom: from a little before the earlier of the two tail marks, so the drop from full occupancy shows.
    first_mark = min(tail.tail_start, wave.start)
    lo = max(tail.kernel_start, first_mark - max((tail.kernel_end - first_mark) // 4, 1))
    busy = {"t": n.t_s, "v": n.busy}
    return [
        Figure("fig13c", "figures:active_warps_figure", {"t": n.t_w, "v": n.active}, common, key=""),
        Figure("fig13d", "figures:busy_sms_figure", busy,
               {**common, "lo": tail.kernel_start, "hi": tail.kernel_end,
                "title": "Fig. 13d: busy SMs over time (tailing effect)"}, key=""),
        Figure("fig13d-sub", "figures:busy_sms_figure", busy,
               {**common, "lo": lo, "hi": tail.kernel_end, "title": "Fig. 13d-sub: zoom on the tail"}, key=""),
    ]
