"""Fig. 13a/13b: per-SM warp timelines, one row per warp slot, bars coloured by block.

The slot is not stored by the probe; it is reconstructed per SM as the *lowest free slot* at each
warp start (warps taken in start-time order, ties by block then warp index; a slot freed at cycle t
can be reused by a warp starting at t).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from neutrino_ae.bundle.context import Bundle
from neutrino_ae.report.figure_process import FigureProcess, draw
from neutrino_ae.report.results import SectionResult, write_results
from neutrino_ae.report.summary import summary_row

from .analysis import WarpRecords
from .fast import TimelineNumbers, timeline_numbers
from .figure_inputs import timeline_job
from .inputs import PAPER_REF, SECTION, read_from


def timeline_result(n: TimelineNumbers, out_dir: str | os.PathLike[str],
                    figures: FigureProcess | None = None) -> SectionResult:
    """Fig. 13a/13b's table and results of :func:`.fast.timeline_numbers`, with its figure: drawn here, or,
    given ``figures`` (the command line's figure process, sent :func:`.figure_inputs.timeline_job`), collected
    from it. The figure is ``<stem>.png`` (raster content: no SVG), the results ``<stem>.json``."""
    out, stem, bundle, rec, truth = Path(out_dir), n.stem, n.bundle, n.rec, n.truth
    drawn = draw(timeline_job(n, out)) if figures is None else None
    tab = pd.DataFrame(n.cols)
    data = {"figure": stem, "paper_ref": f"{PAPER_REF}{stem[-1]}", "input": str(n.path),
            **read_from(n.path, rec, bundle), "sms": n.sms,
            "n_warps": int(rec.lstart.size), "n_sms_in_trace": rec.n_sms, "makespan_cycles": n.makespan,
            "max_resident_blocks_per_sm": n.resident, "last_wave_tail_fraction": n.wave.fraction,
            "ground_truth": truth or None,
            "slot_rule": "lowest free slot at each warp start, per SM, in start order",
            "per_sm": n.per_sm}
    written = write_results(out, stem, data, input_path=n.path, tables={f"{stem}_warps": tab}, bundle=bundle)
    files = {**(figures.join() if drawn is None else drawn), **written}
    ref = f"{PAPER_REF}{stem[-1]}"
    summary = [
        summary_row(SECTION, f"{stem}.max_warp_slots", n.max_slots, "warps", ref, bundle.kind),
        summary_row(SECTION, f"{stem}.makespan_cycles", n.makespan, "cycles", ref, bundle.kind,
                    truth.get("makespan_cycles")),
        summary_row(SECTION, f"{stem}.max_resident_blocks_per_sm", n.resident, "blocks", ref, bundle.kind,
                    truth.get("max_resident_blocks_per_sm")),
        summary_row(SECTION, f"{stem}.last_wave_tail_fraction", n.wave.fraction, "fraction", ref, bundle.kind,
                    truth.get("tail_fraction")),
    ]
    return SectionResult(SECTION, data, files, {f"{stem}_warps": tab}, summary, f"{n.line}\n{files[f'{stem}.png']}")


def warp_timeline(path: str | os.PathLike[str], out_dir: str | os.PathLike[str], stem: str,
                  sms: Sequence[int] | None = None, n_sms: int = 2, section: int = 0,
                  x_max: int | None = None, rec: WarpRecords | None = None,
                  bundle: Bundle | None = None) -> SectionResult:
    """Fig. 13a/13b (``stem``): per-SM warp timelines of one trace (:func:`.fast.timeline_numbers`, then
    :func:`timeline_result`, the figure drawn in this process)."""
    n = timeline_numbers(path, stem, sms, n_sms, section, x_max, rec, bundle)
    return timeline_result(n, out_dir)


def fig13a(path: str | os.PathLike[str], out_dir: str | os.PathLike[str], **kw) -> SectionResult:
    return warp_timeline(path, out_dir, "fig13a", **kw)


def fig13b(path: str | os.PathLike[str], out_dir: str | os.PathLike[str], **kw) -> SectionResult:
    return warp_timeline(path, out_dir, "fig13b", **kw)
