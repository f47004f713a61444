"""Warp scheduling and the tailing effect (paper Fig. 13a-d, Sec. 7).

Input records are the ``block_sched`` layout saved by *every* warp (``records.WARP_SCHED``:
lstart, elapse, smid). Accepted inputs: a ``result/*.bin`` trace, a trace directory (its newest
result), or a table ``.npz``/``.csv`` with columns ``lstart, elapse, smid`` and optionally
``block, warp`` (one row per warp). Pickles (the original ``tmp.pkl``) are refused: unpickling a
downloaded file executes arbitrary code.

* Fig. 13a/13b: per-SM warp timelines, one row per warp slot, bars coloured by block. The slot is
  not stored by the probe; it is reconstructed per SM as the *lowest free slot* at each warp start
  (warps taken in start-time order, ties by block then warp index; a slot freed at cycle t can be
  reused by a warp starting at t).
* Fig. 13c/13d: active warps and busy SMs (SMs with at least one running warp) over time, from a
  sweep over sorted start/end events. The **tail** starts at the end of the last interval in which
  at least ``threshold`` (default 90 %) of the trace's SMs are busy: from then to the kernel end,
  fewer than that share of SMs have work. 13d-sub zooms on that tail.

Clocks: lstart is the SM's own clock64, and SM clocks are not synchronised (each counter has its
own offset), so by default every SM's clock is aligned on its first warp start: the first wave is
dispatched to all SMs at kernel launch, so this puts all SMs on one time axis up to the first-wave
dispatch skew. ``--clock-align global`` keeps raw differences instead (for tables whose clocks are
already on one axis, e.g. %globaltimer).

Besides the threshold tail, the *last-wave tail* is reported: from the moment the first SM has
finished all of its work (min over SMs of its last warp end) to the kernel end, with the share of
SM capacity left idle in it (1 - sum over SMs of their remaining busy time / (SMs x tail)).
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from neutrino_ae.bundle.context import Bundle, bundle_of
from neutrino_ae.errors import PICKLE_REFUSAL, InputError, TraceFormatError, refuse_pickle
from neutrino_ae.formats.bintrace import BinTrace, open_trace
from neutrino_ae.formats.level import Level
from neutrino_ae.formats.records import WARP_SCHED
from neutrino_ae.formats.tracedir import TraceDir, find_trace_dirs
from neutrino_ae.report.results import SectionResult, write_results
from neutrino_ae.report.style import FIXED_TITLES, PALETTE, mark_synthetic, save_figure_files, style_context
from neutrino_ae.report.summary import summary_row
from neutrino_ae.sched import intervals as accel

from .analysis import (  # noqa: F401  (re-exported for callers)
    DEFAULT_TAIL_THRESHOLD,
    LastWaveTail,
    Tail,
    WarpRecords,
    active_sweep,
    active_sweep_numpy,
    align_clocks,
    busy_sm_sweep,
    busy_sm_sweep_numpy,
    find_tail,
    integrate_step,
    last_wave_tail,
    peak_resident_blocks,
    pick_timeline_sms,
    timeline_table,
)
from .figures import _figure, _shade_tail, _timeline_figure, draw_step  # noqa: F401  (re-exported for callers)

SECTION = "warp_sched"
PAPER_REF = "Fig. 13"
TABLE_COLUMNS = ("lstart", "elapse", "smid")
PICKLE_INSTEAD = (
    "Use the raw trace (result/*.bin or its trace directory), or convert the table once, in a trusted "
    "environment, to .npz/.csv with columns lstart, elapse, smid[, block, warp] (one row per warp), e.g. "
    "np.savez(out, lstart=..., elapse=..., smid=...) or DataFrame.to_csv(out, index=False)"
)
PICKLE_MESSAGE = f"{PICKLE_REFUSAL}. {PICKLE_INSTEAD}"


# --------------------------------------------------------------------------------------------------
# Loading


def records_from_trace(trace: BinTrace, section: int = 0, align: str = "sm") -> WarpRecords:
    sec = trace.section(section)
    if sec.level != Level.WARP or sec.size != 16:
        raise TraceFormatError(trace.path, f"section {section} saves {sec.size} B per {sec.level.name.lower()}; a "
                                           "block_sched/warp_sched trace saves 16 B per warp (wrong probe?)")
    rec = trace.records(section, WARP_SCHED)
    blocks, units, rpu = rec.shape
    if blocks * units * rpu == 0:
        raise TraceFormatError(trace.path, f"section {section} holds no warp record")
    words = accel.record_words(rec)
    if words is not None:
        lstart, elapse, smid = accel.split_records_kernel(words[:, :, 0:2].reshape(-1, 2))
    else:
        flat = np.asarray(rec[:, :, 0]).reshape(-1)
        lstart, elapse, smid = flat["lstart"], flat["elapse"].astype(np.int64), flat["smid"].astype(np.int64)
    return WarpRecords(
        trace.path, align_clocks(lstart, smid, align), elapse, smid,
        np.repeat(np.arange(blocks, dtype=np.int64), units), np.tile(np.arange(units, dtype=np.int64), blocks),
        trace.header.grid_size, trace.header.block_size,
    )


def _table_column(path: Path, cols: dict[str, np.ndarray], name: str, n: int | None) -> np.ndarray:
    arr = np.asarray(cols[name])
    if arr.ndim != 1:
        raise InputError(path, f"column {name!r} must be one-dimensional, got shape {arr.shape}")
    if n is not None and arr.size != n:
        raise InputError(path, f"column {name!r} has {arr.size} rows, expected {n}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise InputError(path, f"column {name!r} must hold integers (found non-integer or missing values)")
    elif arr.dtype.kind not in "iu":
        raise InputError(path, f"column {name!r} must be numeric, got dtype {arr.dtype}")
    if arr.size and arr.min() < 0 and name != "block" and name != "warp":
        raise InputError(path, f"column {name!r} has negative values")
    return arr


def records_from_table(path: str | os.PathLike[str], align: str = "sm") -> WarpRecords:
    """Read a ``.npz`` (no pickled objects allowed) or ``.csv`` table of warp records."""
    p = Path(path)
    refuse_pickle(p, PICKLE_INSTEAD)
    if not p.is_file():
        raise InputError(p, "no such file")
    if p.suffix.lower() == ".npz":
        try:
            with np.load(p, allow_pickle=False) as z:
                cols = {k: z[k] for k in z.files}
        except ValueError as exc:
            raise InputError(p, f"unreadable .npz ({exc}); object arrays are not accepted") from None
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise TraceFormatError(p, f"not a valid .npz archive ({exc})") from None
    elif p.suffix.lower() == ".csv":
        try:
            df = pd.read_csv(p)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise TraceFormatError(p, f"unreadable CSV ({exc.__class__.__name__}: {exc})") from None
        cols = {str(c).strip(): df[c].to_numpy() for c in df.columns}
    else:
        raise InputError(p, "expected a .bin trace, a trace directory, or a .npz/.csv table")
    missing = [c for c in TABLE_COLUMNS if c not in cols]
    if missing:
        raise InputError(p, f"missing column(s) {', '.join(missing)}; need lstart, elapse, smid[, block, warp]")
    lstart = _table_column(p, cols, "lstart", None)
    n = lstart.size
    if n == 0:
        raise InputError(p, "table has no rows")
    elapse = _table_column(p, cols, "elapse", n)
    smid = _table_column(p, cols, "smid", n)
    block = _table_column(p, cols, "block", n).astype(np.int64) if "block" in cols else np.full(n, -1, np.int64)
    warp = _table_column(p, cols, "warp", n).astype(np.int64) if "warp" in cols else np.full(n, -1, np.int64)
    return WarpRecords(p, align_clocks(lstart, smid, align), elapse.astype(np.int64), smid.astype(np.int64),
                       block, warp)


def load_warp_records(path: str | os.PathLike[str], section: int = 0, align: str = "sm") -> WarpRecords:
    """``.bin`` | trace directory (its newest ``result/*.bin``) | ``.npz``/``.csv`` table; ``.pkl`` refused."""
    p = Path(path)
    refuse_pickle(p, PICKLE_INSTEAD)
    if p.is_dir():
        td = TraceDir(p)
        return records_from_trace(td.open_result(td.newest_result()), section, align)
    if p.suffix.lower() in (".npz", ".csv"):
        return records_from_table(p, align)
    if not p.exists():
        raise InputError(p, "no such file or directory")
    return records_from_trace(open_trace(p), section, align)


def _read_from(path: str | os.PathLike[str], rec: WarpRecords, bundle: Bundle) -> dict[str, str | None]:
    """What a figure's results say it read: the trace directory (None for a table or a loose ``.bin``) and
    the file, bundle-relative where possible."""
    p = Path(path)
    tdir = p if p.is_dir() else p.parent.parent if p.suffix == ".bin" and p.parent.name == "result" else None
    return {"trace_dir": bundle.relative(tdir) if tdir is not None else None, "read": bundle.relative(rec.path)}


# --------------------------------------------------------------------------------------------------
# Algorithms


# --------------------------------------------------------------------------------------------------
# Fig. 13a/b: per-SM warp timelines


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
    truth = _tail_truth(path, rec.path, bundle) or {}
    data = {"figure": stem, "paper_ref": f"{PAPER_REF}{stem[-1]}", "input": str(path), **_read_from(path, rec, bundle),
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


# --------------------------------------------------------------------------------------------------
# Fig. 13c/d: tailing effect


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
        fig = _figure(9.0, 4.0)
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
        fig = _figure(9.0, 4.0)
        busy_axes(fig.subplots(), tail.kernel_start, tail.kernel_end, "Fig. 13d: busy SMs over time (tailing effect)")
        mark_synthetic(fig, synthetic)
    files.update(save_figure_files(fig, out, "fig13d"))

    # Zoom: from a little before the earlier of the two tail marks, so the drop from full occupancy shows.
    first_mark = min(tail.tail_start, wave.start)
    lo = max(tail.kernel_start, first_mark - max((tail.kernel_end - first_mark) // 4, 1))
    with style_context(FIXED_TITLES):
        fig = _figure(9.0, 4.0)
        busy_axes(fig.subplots(), lo, tail.kernel_end, "Fig. 13d-sub: zoom on the tail")
        mark_synthetic(fig, synthetic)
    files.update(save_figure_files(fig, out, "fig13d-sub"))

    truth = _tail_truth(path, rec.path, bundle)
    data = {
        "figure": "fig13cd", "paper_ref": f"{PAPER_REF}c/d", "input": str(path), **_read_from(path, rec, bundle),
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


def _tail_truth(path: str | os.PathLike[str], read: Path, bundle: Bundle) -> dict | None:
    """The generator's truth for the run this input belongs to (``tail``/``exclusive``/``shared``): only for
    the very file it generated (its ``trace``), not for another collection put beside it."""
    truth = bundle.ground_truth(SECTION)
    if not isinstance(truth, dict):
        return None
    parts = Path(path).resolve().parts
    for key, folder in INPUT_FOLDERS.items():
        cand = truth.get(key)
        if folder in parts and isinstance(cand, dict):
            return cand if cand.get("trace") in (None, bundle.relative(read)) else None
    return None


# --------------------------------------------------------------------------------------------------
# Whole section


#: The section's inputs and their folders in a bundle's ``warp_sched/``.
INPUT_FOLDERS = {"exclusive": "exclusive_sched", "shared": "shared_sched", "tail": "tail"}


def find_inputs(root: str | os.PathLike[str]) -> tuple[dict[str, Path], dict[str, str]]:
    """In a bundle's ``warp_sched/`` folder: the ``exclusive``, ``shared`` and ``tail`` inputs.

    Exclusive and shared traces are required. The tail input (Fig. 13c/d) is optional: when it is
    missing, or only the paper bundle's ``tmp.pkl`` is there (refused, never unpickled), the second
    dict says why, and the caller still draws Fig. 13a/b.
    """
    base = Path(root)
    if (base / "warp_sched").is_dir():
        base = base / "warp_sched"
    found: dict[str, Path] = {}
    skipped: dict[str, str] = {}
    for key, name in INPUT_FOLDERS.items():
        d = base / name
        if not d.is_dir():
            if key != "tail":
                raise InputError(base, f"has no {name}/ folder (expected the bundle's warp_sched layout)")
            pickles = sorted(base.glob("*.pkl"))
            skipped["fig13cd"] = (f"{pickles[0]}: {PICKLE_MESSAGE}" if pickles
                                  else f"{d}: missing, no tail-effect trace for Fig. 13c/d")
            continue
        dirs = find_trace_dirs(d)  # d itself (the paper's layout), or the collections in it, oldest first
        if not dirs:
            raise InputError(d, "holds no trace directory (no result/ folder found)")
        found[key] = dirs[-1]
    return found, skipped


def _chosen_line(key: str, chosen: Path, bundle: Bundle) -> str:
    """``tail trace dir: warp_sched/tail/<name> (newest of 2 in warp_sched/tail, ...)``: which folder was read."""
    folder = chosen.parent
    among = len(find_trace_dirs(folder)) if folder.name == INPUT_FOLDERS[key] else 1
    why = (f" (newest of {among} in {bundle.relative(folder)}, by the time in its name: "
           "neutrino_ae/formats/tracedir.py)" if among > 1 else "")
    return f"{key} trace dir: {bundle.relative(chosen)}{why}"


def warp_sched(root: str | os.PathLike[str], out_dir: str | os.PathLike[str],
               threshold: float = DEFAULT_TAIL_THRESHOLD, bundle: Bundle | None = None) -> SectionResult:
    """Fig. 13a, 13b, and 13c/d (when a tail input exists) from a bundle's ``warp_sched/`` folder;
    ``bundle``: the run's bundle (default: the one holding ``root``, found from it)."""
    inputs, skipped = find_inputs(root)
    bundle = bundle or bundle_of(inputs["exclusive"])
    # One x range for 13a and 13b, so exclusive and shared scheduling can be compared by eye.
    recs = {k: load_warp_records(inputs[k]) for k in ("exclusive", "shared")}
    sms = {k: pick_timeline_sms(rec) for k, rec in recs.items()}  # picked once: the figures show these
    x_max = max(timeline_extent(recs[k], sms[k]) for k in recs)
    a = fig13a(inputs["exclusive"], out_dir, x_max=x_max, rec=recs["exclusive"], sms=sms["exclusive"], bundle=bundle)
    b = fig13b(inputs["shared"], out_dir, x_max=x_max, rec=recs["shared"], sms=sms["shared"], bundle=bundle)
    cd = fig13cd(inputs["tail"], out_dir, threshold, bundle=bundle) if "tail" in inputs else None
    parts = [a, b] if cd is None else [a, b, cd]
    files = {k: v for r in parts for k, v in r.files.items()}
    data = {"section": SECTION, "paper_ref": PAPER_REF, "inputs": {k: str(v) for k, v in inputs.items()},
            "trace_dirs": [bundle.relative(v) for v in inputs.values()],
            "fig13a": a.data, "fig13b": b.data, "fig13cd": cd.data if cd else {"skipped": skipped["fig13cd"]},
            "skipped": skipped}
    ratio = b.data["makespan_cycles"] / a.data["makespan_cycles"] if a.data["makespan_cycles"] else None
    truth = bundle.ground_truth(SECTION)
    extra = summary_row(SECTION, "shared_vs_exclusive_makespan", ratio, "ratio", f"{PAPER_REF}a/b", bundle.kind,
                        truth.get("shared_vs_exclusive_makespan") if isinstance(truth, dict) else None)
    summary = [*a.summary, *b.summary, extra, *(cd.summary if cd else [])]
    data["summary"] = summary
    files.update(write_results(out_dir, SECTION, data, input_path=inputs["exclusive"], bundle=bundle))
    lines = [a.text, b.text, f"shared/exclusive makespan: {ratio:.3f}" if ratio else ""]
    lines.append(cd.text if cd else f"Fig. 13c/d skipped: {skipped['fig13cd']}")
    lines.extend(_chosen_line(k, v, bundle) for k, v in inputs.items())
    tables = {k: v for r in parts for k, v in r.tables.items()}
    return SectionResult(SECTION, data, files, tables, summary, "\n".join(lines))


def analyze(root: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> SectionResult:
    """Section entry point (sections registry): same as :func:`warp_sched` with the default threshold."""
    return warp_sched(root, out_dir)


def analyze_bundle(bundle: Bundle, out_dir: str | os.PathLike[str]) -> SectionResult:
    """The section entry point: Fig. 13a-d from the run's bundle."""
    return warp_sched(bundle.path("warp_sched"), out_dir, bundle=bundle)

