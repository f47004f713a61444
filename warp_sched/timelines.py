"""Fig. 13a/13b: per-SM warp timelines, one row per warp slot, bars coloured by block.

The slot is not stored by the probe; it is reconstructed per SM as the *lowest free slot* at each
warp start (warps taken in start-time order, ties by block then warp index; a slot freed at cycle t
can be reused by a warp starting at t). The numbers and the line need numpy alone; the table is built
(pandas) after the line is printed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from neutrino_ae.bundle.context import Bundle
from neutrino_ae.errors import InputError
from neutrino_ae.report.section.driver import Figure, Number, Result

from .analysis import (
    LastWaveTail,
    WarpRecords,
    last_wave_tail,
    peak_resident_blocks,
    per_sm_stats,
    pick_timeline_sms,
    timeline_columns,
)
from .inputs import PAPER_REF, read_from, tail_truth

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


def timeline_numbers(path: str | os.PathLike[str], stem: str, rec: WarpRecords, bundle: Bundle,
                     sms: Sequence[int] | None = None, n_sms: int = 2, x_max: int | None = None) -> TimelineNumbers:
    """Fig. 13a (``stem="fig13a"``) or 13b of one trace's records; ``x_max`` fixes the x range in cycles
    (default: this trace's)."""
    chosen = timeline_sms(path, rec, sms, n_sms)
    cols = timeline_columns(rec, chosen)
    return TimelineNumbers(
        path, stem, TITLES[stem], rec, bundle, chosen, cols, per_sm_stats(cols),
        int(rec.end.max() - rec.lstart.min()), peak_resident_blocks(rec.smid, rec.block, rec.lstart, rec.end),
        last_wave_tail(rec.smid, rec.lstart, rec.end), tail_truth(path, rec.path, bundle) or {}, x_max)


def _table(cols: dict[str, np.ndarray]):  # noqa: ANN202 - a DataFrame, pandas imported after the line
    import pandas as pd

    return pd.DataFrame(cols)


def timeline_result(n: TimelineNumbers) -> Result:
    """Fig. 13a/13b's numbers, table and results document ``<stem>.json`` (no summary in it); the figure is
    ``<stem>.png`` (raster content: no SVG)."""
    stem, rec, truth, ref = n.stem, n.rec, n.truth, f"{PAPER_REF}{n.stem[-1]}"
    data = {"figure": stem, "paper_ref": ref, "input": str(n.path),
            **read_from(n.path, rec, n.bundle), "sms": n.sms,
            "n_warps": int(rec.lstart.size), "n_sms_in_trace": rec.n_sms, "makespan_cycles": n.makespan,
            "max_resident_blocks_per_sm": n.resident, "last_wave_tail_fraction": n.wave.fraction,
            "ground_truth": truth or None,
            "slot_rule": "lowest free slot at each warp start, per SM, in start order",
            "per_sm": n.per_sm}
    numbers = {f"{stem}.max_warp_slots": n.max_slots, f"{stem}.makespan_cycles": n.makespan,
               f"{stem}.max_resident_blocks_per_sm": n.resident, f"{stem}.last_wave_tail_fraction": n.wave.fraction}
    gt = {f"{stem}.makespan_cycles": truth.get("makespan_cycles"),
          f"{stem}.max_resident_blocks_per_sm": truth.get("max_resident_blocks_per_sm"),
          f"{stem}.last_wave_tail_fraction": truth.get("tail_fraction")}
    return Result(
        files={f"{stem}_warps": lambda: _table(n.cols)}, numbers={k: Number(v, ref=ref) for k, v in numbers.items()},
        truth=gt, units=UNITS, data=data, lines=[n.line], done=f"{{{stem}.png}}", input=n.path,
        plots={"timelines": [n]})


#: The summary rows' units by the key's last part.
UNITS = {"max_warp_slots": "warps", "makespan_cycles": "cycles", "max_resident_blocks_per_sm": "blocks",
         "last_wave_tail_fraction": "fraction"}


def timeline_figure(n: TimelineNumbers) -> Figure:
    """Fig. 13a/13b: the drawn warps of the chosen SMs."""
    return Figure(n.stem, "figures:timeline_figure", n.cols,
                  {"sms": n.sms, "title": n.title, "synthetic": n.bundle.synthetic, "x_max": n.x_max}, key="")
