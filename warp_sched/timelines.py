"""Fig. 13a/13b: per-SM warp timelines, one row per warp slot, bars coloured by block.

The slot is not stored by the probe; it is reconstructed per SM as the *lowest free slot* at each
warp start (warps taken in start-time order, ties by block then warp index; a slot freed at cycle t
can be reused by a warp starting at t).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from neutrino_ae.bundle.context import Bundle, bundle_of
from neutrino_ae.errors import InputError
from neutrino_ae.report.results import SectionResult, write_results
from neutrino_ae.report.style import save_figure_files
from neutrino_ae.report.summary import summary_row

from .analysis import WarpRecords, last_wave_tail, peak_resident_blocks, pick_timeline_sms, timeline_table
from .figures import _timeline_figure
from .inputs import PAPER_REF, SECTION, load_warp_records, read_from, tail_truth


def _timeline_sms(path: str | os.PathLike[str], rec: WarpRecords, sms: Sequence[int] | None,
                  n_sms: int) -> list[int]:
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


def warp_timeline(path: str | os.PathLike[str], out_dir: str | os.PathLike[str], stem: str, title: str,
                  sms: Sequence[int] | None = None, n_sms: int = 2, section: int = 0,
                  x_max: int | None = None, rec: WarpRecords | None = None,
                  bundle: Bundle | None = None) -> SectionResult:
    """Fig. 13a/13b: per-SM warp timelines of one trace, written as ``<stem>.png`` (raster content: no SVG)
    and ``<stem>.json``; ``x_max`` fixes the x range in cycles (default: this trace's); ``rec``: the
    trace's records when the caller has read them already; ``bundle``: the run's bundle (default: the
    one holding ``path``, found from it)."""
    rec = load_warp_records(path, section) if rec is None else rec
    chosen = _timeline_sms(path, rec, sms, n_sms)
    tab = timeline_table(rec, chosen)
    bundle = bundle or bundle_of(path)
    synthetic = bundle.synthetic
    fig = _timeline_figure(tab, chosen, title, synthetic, x_max)
    out = Path(out_dir)
    files = save_figure_files(fig, out, stem)
    per_sm = (tab.groupby("smid").agg(warps=("warp", "size"), blocks=("block", "nunique"),
                                      slots=("slot", lambda s: int(s.max()) + 1), span_cycles=("end", "max"))
              .reset_index())
    wave = last_wave_tail(rec.smid, rec.lstart, rec.end)
    makespan = int(rec.end.max() - rec.lstart.min())
    resident = peak_resident_blocks(rec.smid, rec.block, rec.lstart, rec.end)
    truth = tail_truth(path, rec.path, bundle) or {}
    data = {"figure": stem, "paper_ref": f"{PAPER_REF}{stem[-1]}", "input": str(path), **read_from(path, rec, bundle),
            "sms": chosen,
            "n_warps": int(rec.lstart.size), "n_sms_in_trace": rec.n_sms, "makespan_cycles": makespan,
            "max_resident_blocks_per_sm": resident, "last_wave_tail_fraction": wave.fraction,
            "ground_truth": truth or None,
            "slot_rule": "lowest free slot at each warp start, per SM, in start order",
            "per_sm": per_sm.to_dict(orient="records")}
    files.update(write_results(out, stem, data, input_path=path, tables={f"{stem}_warps": tab}, bundle=bundle))
    ref = f"{PAPER_REF}{stem[-1]}"
    summary = [
        summary_row(SECTION, f"{stem}.max_warp_slots", int(per_sm["slots"].max()), "warps", ref, bundle.kind),
        summary_row(SECTION, f"{stem}.makespan_cycles", makespan, "cycles", ref, bundle.kind,
                    truth.get("makespan_cycles")),
        summary_row(SECTION, f"{stem}.max_resident_blocks_per_sm", resident, "blocks", ref, bundle.kind,
                    truth.get("max_resident_blocks_per_sm")),
        summary_row(SECTION, f"{stem}.last_wave_tail_fraction", wave.fraction, "fraction", ref, bundle.kind,
                    truth.get("tail_fraction")),
    ]
    gt_text = (f" (ground truth {truth['makespan_cycles']:,.0f} cycles, {truth['max_resident_blocks_per_sm']})"
               if "makespan_cycles" in truth and "max_resident_blocks_per_sm" in truth else "")
    text = (f"{title}: SMs {chosen}, {int(per_sm['slots'].max())} warp slots at most; makespan {makespan:,} cycles, "
            f"up to {resident} resident blocks per SM{gt_text}\n{files[f'{stem}.png']}")
    return SectionResult(SECTION, data, files, {f"{stem}_warps": tab}, summary, text)


def fig13a(path: str | os.PathLike[str], out_dir: str | os.PathLike[str], **kw) -> SectionResult:
    return warp_timeline(path, out_dir, "fig13a", "Fig. 13a: exclusive scheduling, warp timeline", **kw)


def fig13b(path: str | os.PathLike[str], out_dir: str | os.PathLike[str], **kw) -> SectionResult:
    return warp_timeline(path, out_dir, "fig13b", "Fig. 13b: shared scheduling, warp timeline", **kw)
