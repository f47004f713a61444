"""Block scheduling cost (paper Sec. 4.5) from ``block_sched`` traces.

``python block_sched/block_sched.py <trace.bin | tracedir> [more ...] [--out DIR] [--json]``

First stdout line(s), one per trace, exactly the artifact's::

    No.block:<gridSize> Running:<int(mean running)> Scheduling:<int(mean scheduling)>(cycle)

The artifact's metric (kept so the numbers stay comparable with the paper): take each block's
first-warp record (lstart, elapse, smid); per SM keep a FIFO list of blocks; visit blocks in
linear block-index order (not start-time order); for block b look only at the list's FIRST entry
p: if ``p.lstart + p.elapse <= b.lstart`` add the gap to the SM's scheduling total and pop p;
append b either way and add ``b.elapse`` to the SM's running total. Means are over the SMs that
ran at least one block. Unlike the original script this indexes SMs by their distinct ids (no
crash on non-contiguous smids) and takes the first warp as unit 0 whatever the block size.

Beside it, clearly named, the *slot-reuse* estimator: per SM sort starts and ends by time; with C
the SM's peak number of resident blocks, the i-th start (i >= C) refills the slot freed by the
(i-C)-th end, so its dispatch gap is ``start_(i) - end_(i-C)`` (never negative, because at most C
blocks are resident). It uses time order, so a late-listed block that finished early counts.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo root importable (and win over this folder)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import os  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from neutrino_ae.bundle import manifest as bundle  # noqa: E402
from neutrino_ae.errors import InputError, TraceFormatError, refuse_pickle  # noqa: E402
from neutrino_ae.formats.bintrace import BinTrace, Level, open_trace  # noqa: E402
from neutrino_ae.formats.records import BLOCK_SCHED  # noqa: E402
from neutrino_ae.report.results import SectionResult, write_results  # noqa: E402
from neutrino_ae.report.script import add_output_args, emit, run_main  # noqa: E402
from neutrino_ae.report.style import PALETTE, mark_synthetic, new_figure, save_figure, style_context  # noqa: E402
from neutrino_ae.sched import intervals as accel
from neutrino_ae.sched.slots import lowest_free_slots  # noqa: E402

SECTION = "block_sched"
PAPER_REF = "Sec. 4.5"
#: The kick-the-tires run on the authors' A100 (the paper's own traces were lost; see paper-map).
PAPER_LINE = {"grid_size": 32768, "mean_running_cycles": 602241, "mean_scheduling_cycles": 87713}


@dataclass
class BlockRecords:
    """First-warp record of every block, in linear block-index order."""

    lstart: np.ndarray  # int64, cycles relative to the trace's earliest start
    elapse: np.ndarray  # int64
    smid: np.ndarray  # int64
    grid_size: int
    block_size: int
    clock_origin: int  # the subtracted earliest lstart (raw clock64)


@dataclass
class TraceSched:
    label: str
    path: Path
    records: BlockRecords
    per_sm: pd.DataFrame
    line: str
    mean_running: float
    mean_scheduling: float
    mean_slot_reuse: float


def resolve_traces(path: str | os.PathLike[str]) -> list[tuple[Path, BinTrace]]:
    """A ``.bin`` trace, or every ``result/*.bin`` of a trace directory (time order, levels from probe.toml)."""
    p = Path(path)
    refuse_pickle(p, "Pass the raw trace .bin (or its trace directory) instead.")
    if not p.exists():
        raise InputError(p, "no such file or directory")
    if p.is_dir():
        from neutrino_ae.formats.tracedir import TraceDir

        td = TraceDir(p)
        results = list(td.results())
        if not results:
            raise InputError(p, "trace directory has no result/*.bin trace")
        return [(Path(r), td.open_result(r)) for r in results]
    return [(p, open_trace(p))]


def first_warp_records(trace: BinTrace, section: int = 0) -> BlockRecords:
    """Unit 0 of every block (the first warp, whatever the block size), first record of the unit."""
    sec = trace.section(section)
    if sec.level != Level.WARP or sec.size != 16:
        raise TraceFormatError(trace.path, f"section {section} saves {sec.size} B per {sec.level.name.lower()}; a "
                                           "block_sched/warp_sched trace saves 16 B per warp (wrong probe?)")
    rec = trace.records(section, BLOCK_SCHED)
    if rec.shape[0] == 0 or rec.shape[1] == 0 or rec.shape[2] == 0:
        raise TraceFormatError(trace.path, f"section {section} holds no block_sched record")
    words = accel.record_words(rec)
    if words is not None:
        lstart, elapse, smid = accel.split_records_kernel(words[:, 0, 0:2])
    else:
        first = np.asarray(rec[:, 0, 0])
        lstart, elapse, smid = first["lstart"], first["elapse"].astype(np.int64), first["smid"].astype(np.int64)
    origin = int(lstart.min())
    # Subtracting the earliest clock keeps exact integer arithmetic in int64.
    rel = (lstart - np.uint64(origin)).astype(np.int64)
    return BlockRecords(rel, elapse, smid, trace.header.grid_size, trace.header.block_size, origin)


def _group_by_sm(smid: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Order by (smid, key); return order, distinct smids, first position and count of each SM."""
    order = np.lexsort((key, smid))
    sms, first, counts = np.unique(smid[order], return_index=True, return_counts=True)
    return order, sms, first, counts


def artifact_metric(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """Per SM: blocks, running and scheduling cycles under the artifact's first-entry-only FIFO rule.

    Compiled single pass (:func:`neutrino_ae.sched.intervals.artifact_fifo_kernel`) when numba is available,
    else :func:`artifact_metric_numpy`; both give the same table.
    """
    if not accel.use_numba():
        return artifact_metric_numpy(lstart, elapse, smid)
    lstart, elapse = accel.i64(lstart), accel.i64(elapse)
    sms, gidx = accel.dense_ids(smid)
    blocks, running, sched = accel.artifact_fifo_kernel(lstart, elapse, gidx, sms.size)
    return pd.DataFrame({"smid": sms, "blocks": blocks, "running_cycles": running, "scheduling_cycles": sched})


def artifact_metric_numpy(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """:func:`artifact_metric` in numpy (the path without numba).

    Blocks of an SM enter its list in block-index order and every block is appended, so the list is
    always ``seq[head:k]`` of the SM's index-ordered sequence ``seq``; the only state is ``head``. It
    advances by at most one per visited block, which is inherently sequential within an SM, so we
    step over the position ``k`` in the sequence and update all SMs at once: the loop runs
    max(blocks per SM) times (about grid/SMs, e.g. 304 for the paper's 32768 blocks on 108 SMs),
    each step a few numpy ops over the SMs, never one Python step per block.
    """
    lstart = np.asarray(lstart, dtype=np.int64)
    elapse = np.asarray(elapse, dtype=np.int64)
    smid = np.asarray(smid, dtype=np.int64)
    n = lstart.size
    order, sms, first, counts = _group_by_sm(smid, np.arange(n))
    start = lstart[order]
    end = start + elapse[order]
    head = first.copy()  # absolute position of each SM's list head in the sorted arrays
    sched = np.zeros(sms.size, dtype=np.int64)
    for k in range(1, int(counts.max()) if n else 0):
        act = np.flatnonzero(counts > k)
        cur = first[act] + k
        h = head[act]
        # head < cur always holds for k >= 1 (one pop per step at most), so the list is never empty here.
        pop = end[h] <= start[cur]
        sched[act] += np.where(pop, start[cur] - end[h], 0)
        head[act] = h + pop
    running = np.add.reduceat(elapse[order], first) if n else np.zeros(0, np.int64)
    return pd.DataFrame({"smid": sms, "blocks": counts, "running_cycles": running, "scheduling_cycles": sched})


def slot_reuse_metric(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """Per SM: peak resident blocks C and the slot-reuse scheduling total ``sum start_(i) - end_(i-C)``.

    Compiled merge over the per-SM sorted starts and ends when numba is available, else
    :func:`slot_reuse_metric_numpy`; both give the same table.
    """
    if not accel.use_numba() or np.size(lstart) == 0:
        return slot_reuse_metric_numpy(lstart, elapse, smid)
    lstart = accel.i64(lstart)
    end = lstart + accel.i64(elapse)
    sms, gidx = accel.dense_ids(smid)
    (starts, ends), first, counts = accel.group_sorted(gidx, sms.size, lstart, end)
    peak, total = accel.peak_and_reuse_kernel(starts, ends, first, counts)
    return pd.DataFrame({"smid": sms, "peak_resident": peak, "slot_reuse_cycles": total})


def slot_reuse_metric_numpy(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """:func:`slot_reuse_metric` in numpy (the path without numba)."""
    lstart = np.asarray(lstart, dtype=np.int64)
    end = lstart + np.asarray(elapse, dtype=np.int64)
    smid = np.asarray(smid, dtype=np.int64)
    n = lstart.size
    if n == 0:
        return pd.DataFrame({"smid": [], "peak_resident": [], "slot_reuse_cycles": []})
    sms, sm_idx = _dense_sm(smid)
    lo = min(int(lstart.min()), int(end.min()))
    span_bits = max(1, (max(int(lstart.max()), int(end.max())) - lo + 1).bit_length())
    if span_bits + max(1, int(sms.size).bit_length()) > 62:
        return _slot_reuse_lexsort(lstart, end, smid)
    counts = np.bincount(sm_idx, minlength=sms.size)
    first = np.r_[0, np.cumsum(counts)[:-1]]
    # One sort of a packed (SM, time) int64 key instead of lexsorts (10x faster at 1M blocks). Starts
    # and ends share the packing, so the two sorted key arrays compare directly.
    high = sm_idx.astype(np.int64) << span_bits
    skey = np.sort(high | (lstart - lo))
    ekey = np.sort(high | (end - lo))
    mask = np.int64((1 << span_bits) - 1)
    starts = (skey & mask) + lo
    ends = (ekey & mask) + lo
    # Residency right after an SM's i-th start (ends at a tie leave first) is (starts so far) minus
    # (the SM's ends <= that start); in global positions the SM's offset cancels out.
    resident = np.arange(1, n + 1) - np.searchsorted(ekey, skey, side="right")
    peak = np.maximum.reduceat(resident, first)
    sm_of = np.repeat(np.arange(sms.size), counts)
    pos = np.arange(n) - first[sm_of]
    c = peak[sm_of]
    use = np.flatnonzero(pos >= c)
    gaps = np.zeros(n, np.int64)
    gaps[use] = starts[use] - ends[use - c[use]]
    total = np.add.reduceat(gaps, first)
    return pd.DataFrame({"smid": sms, "peak_resident": peak, "slot_reuse_cycles": total})


def _dense_sm(smid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct SM ids (ascending) and each record's index into them; O(n) for ids below 2**20."""
    if smid.min() >= 0 and smid.max() < (1 << 20):
        present = np.bincount(smid) > 0
        return np.flatnonzero(present), (np.cumsum(present) - 1)[smid]
    return np.unique(smid, return_inverse=True)


def _slot_reuse_lexsort(lstart: np.ndarray, end: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """:func:`slot_reuse_metric` with lexsorts, for clock spans too wide to pack with the SM index."""
    n = lstart.size
    s_order, sms, first, counts = _group_by_sm(smid, lstart)
    e_order = np.lexsort((end, smid))  # same SM grouping, ends in time order
    starts = lstart[s_order]
    ends = end[e_order]
    # Peak residency per SM: sweep +1/-1 events sorted by (sm, time, ends before starts at a tie).
    ev_sm = np.r_[smid, smid]
    ev_t = np.r_[lstart, end]
    ev_d = np.r_[np.ones(n, np.int64), -np.ones(n, np.int64)]
    ev = np.lexsort((ev_d, ev_t, ev_sm))
    running = np.cumsum(ev_d[ev])  # per-SM counts: every SM's events sum to zero, so no reset is needed
    ev_first = np.searchsorted(ev_sm[ev], sms)
    peak = np.maximum.reduceat(running, ev_first)
    sm_idx = np.repeat(np.arange(sms.size), counts)
    pos = np.arange(n) - first[sm_idx]
    c = peak[sm_idx]
    use = pos >= c
    gaps = np.zeros(n, np.int64)
    gaps[use] = starts[use] - ends[first[sm_idx[use]] + pos[use] - c[use]]
    total = np.add.reduceat(gaps, first)
    return pd.DataFrame({"smid": sms, "peak_resident": peak, "slot_reuse_cycles": total})


def artifact_line(grid_size: int, per_sm: pd.DataFrame) -> tuple[str, float, float]:
    """The artifact's line and the two means it truncates (over SMs that ran at least one block)."""
    n = len(per_sm)
    mean_run = int(per_sm["running_cycles"].sum()) / n if n else 0.0
    mean_sched = int(per_sm["scheduling_cycles"].sum()) / n if n else 0.0
    return f"No.block:{grid_size} Running:{int(mean_run)} Scheduling:{int(mean_sched)}(cycle)", mean_run, mean_sched


def analyze_records(label: str, path: Path, rec: BlockRecords) -> TraceSched:
    per_sm = artifact_metric(rec.lstart, rec.elapse, rec.smid)
    reuse = slot_reuse_metric(rec.lstart, rec.elapse, rec.smid)
    if np.array_equal(per_sm["smid"].to_numpy(), reuse["smid"].to_numpy()):
        # Both tables list the same SMs in ascending order: columns line up without a merge's hashing.
        per_sm["peak_resident"] = reuse["peak_resident"].to_numpy()
        per_sm["slot_reuse_cycles"] = reuse["slot_reuse_cycles"].to_numpy()
    else:
        per_sm = per_sm.merge(reuse, on="smid", how="left")
    with np.errstate(divide="ignore", invalid="ignore"):
        per_sm["ratio"] = per_sm["scheduling_cycles"] / per_sm["running_cycles"].where(per_sm["running_cycles"] > 0)
        per_sm["slot_reuse_ratio"] = per_sm["slot_reuse_cycles"] / per_sm["running_cycles"].where(
            per_sm["running_cycles"] > 0)
    line, mean_run, mean_sched = artifact_line(rec.grid_size, per_sm)
    mean_reuse = float(per_sm["slot_reuse_cycles"].mean()) if len(per_sm) else 0.0
    per_sm.insert(0, "trace", label)
    return TraceSched(label, path, rec, per_sm, line, mean_run, mean_sched, mean_reuse)


def trace_label(path: Path, used: set[str]) -> str:
    """``variants/<name>/...`` → name; a bundle's main block_sched trace → ``raw``; else the trace dir name."""
    parts = path.resolve().parts
    if "variants" in parts and parts.index("variants") + 1 < len(parts):
        label = parts[parts.index("variants") + 1]
    elif "block_sched" in parts and "variants" not in parts and bundle.find_bundle_root(path) is not None:
        label = "raw"
    else:
        label = path.parent.parent.name if path.parent.name == "result" else path.stem
    base, i = label, 2
    while label in used:
        label, i = f"{base}-{i}", i + 1
    used.add(label)
    return label


# --------------------------------------------------------------------------------------------------
# Figures


def _figure(width: float, height: float):
    """Constrained layout with a strip kept free at the bottom for the synthetic-data footer."""
    fig = new_figure(width, height, layout="constrained")
    fig.get_layout_engine().set(rect=(0, 0.3 / height, 1, 1 - 0.3 / height))
    return fig


def _per_sm_figure(traces: list[TraceSched], synthetic: bool):
    with style_context():
        fig = _figure(9.0, 2.6 * len(traces) + 0.8)
        axes = fig.subplots(len(traces), 1, squeeze=False)[:, 0]
        for ax, t in zip(axes, traces, strict=True):
            df = t.per_sm
            x = np.arange(len(df))
            ax.bar(x, 100 * df["ratio"], width=0.85, color=PALETTE[0], label="artifact metric (first-entry FIFO)")
            ax.plot(x, 100 * df["slot_reuse_ratio"], ls="none", marker=".", ms=4, color=PALETTE[1],
                    label="slot-reuse estimator")
            mean_ratio = 100 * t.mean_scheduling / t.mean_running if t.mean_running else float("nan")
            ax.axhline(mean_ratio, color="black", lw=1, ls="--", label=f"mean {mean_ratio:.1f}%")
            ax.set_ylabel("scheduling / running (%)")
            ax.set_title(f"{t.label}: {t.line}", fontsize=10)
            step = max(1, len(df) // 16)
            ax.set_xticks(x[::step], [str(s) for s in df["smid"].to_numpy()[::step]])
            ax.set_xlim(-0.8, len(df) - 0.2)
            top = np.nanmax(np.r_[100 * df["ratio"].to_numpy(float), 100 * df["slot_reuse_ratio"].to_numpy(float),
                                  1.0])
            ax.set_ylim(0, top * 1.35)  # headroom so the legend sits above the bars
            if not np.nanmax(np.r_[df["ratio"].to_numpy(float), 0.0]) > 0:
                ax.text(0.5, 0.45, "no dispatch gap measured on any SM", transform=ax.transAxes, ha="center",
                        va="center", fontsize=10, color="dimgrey")
            ax.legend(loc="upper right", ncols=3, frameon=True, framealpha=0.9)
        axes[-1].set_xlabel("SM id")
        fig.suptitle("Block scheduling cost per SM (Sec. 4.5)")
        mark_synthetic(fig, synthetic)
    return fig


def pick_sms(per_sm: pd.DataFrame, n: int = 3) -> list[int]:
    """SMs with the lowest, median and highest artifact ratio (distinct, in that order)."""
    df = per_sm.dropna(subset=["ratio"]).sort_values(["ratio", "smid"], kind="stable")
    if df.empty:
        return [int(s) for s in per_sm["smid"].head(n)]
    idx = np.unique(np.linspace(0, len(df) - 1, n).round().astype(int))
    return [int(s) for s in df["smid"].to_numpy()[idx]]


def _timeline_figure(t: TraceSched, synthetic: bool, zoom_blocks: int = 24):
    rec = t.records
    sms = pick_sms(t.per_sm)
    with style_context():
        fig = _figure(11.0, 2.2 * len(sms) + 1.2)
        axes = fig.subplots(len(sms), 2, squeeze=False, gridspec_kw={"width_ratios": [2, 1]})
        for row, sm in enumerate(sms):
            sel = np.flatnonzero(rec.smid == sm)  # block indices, ascending
            start = rec.lstart[sel]
            end = start + rec.elapse[sel]
            slots = lowest_free_slots(np.zeros(sel.size, np.int64), start, end)
            t0 = start.min()
            for col, ax in enumerate(axes[row]):
                for parity in (0, 1):
                    m = (np.arange(sel.size) % 2) == parity  # k-th block of this SM in index order
                    ax.barh(slots[m], (end - start)[m], left=(start - t0)[m], height=0.8,
                            color=PALETTE[parity * 2], edgecolor="none")
                ax.set_ylim(slots.max() + 0.7, -0.7)
                if col == 0:
                    ax.set_ylabel(f"SM {sm}\nblock slot")
                    ax.set_title(f"SM {sm}: {sel.size} blocks, ratio {t.per_sm.set_index('smid').loc[sm, 'ratio']:.1%}",
                                 fontsize=10)
                else:
                    # Zoom on the first refills: gaps between a finished block and the next are visible here.
                    order = np.sort(end - t0)
                    k = min(order.size - 1, zoom_blocks)
                    ax.set_xlim(0, order[k] * 1.02 if order[k] > 0 else 1)
                    ax.set_title(f"zoom: first {k + 1} block ends", fontsize=10)
                ax.grid(axis="y", visible=False)
        for ax in axes[-1]:
            ax.set_xlabel("cycles since the SM's first block start")
        fig.suptitle(f"{t.label}: block timeline of {len(sms)} SMs (lowest, median, highest scheduling ratio); "
                     "colours alternate along the SM's blocks in index order")
        mark_synthetic(fig, synthetic)
    return fig


def _compare_figure(traces: list[TraceSched], truths: list[dict | None], synthetic: bool):
    """Left: running cycles per SM; right: scheduling cycles per SM by both estimators (+ ground truth)."""
    labels = [f"{t.label}\n{t.records.grid_size} blocks" for t in traces]
    x = np.arange(len(traces))
    run = np.array([t.mean_running for t in traces])
    sched = np.array([t.mean_scheduling for t in traces])
    reuse = np.array([t.mean_slot_reuse for t in traces])
    gt = np.array([_gt(g, "scheduling_cycles_per_sm") if g else np.nan for g in truths], dtype=float)
    with style_context():
        fig = _figure(2.2 * len(traces) + 4.5, 4.2)
        ax_run, ax_sched = fig.subplots(1, 2)
        bars = ax_run.bar(x, run, 0.6, color=PALETTE[0])
        ax_run.bar_label(bars, labels=[f"{v:,.0f}" for v in run], fontsize=8)
        ax_run.set_xticks(x, labels)
        ax_run.set_ylabel("cycles per SM (mean over SMs)")
        ax_run.set_ylim(0, max(run.max(), 1) * 1.15)
        ax_run.set_title("running")
        has_gt = bool(np.isfinite(gt).any())
        series = [(sched, PALETTE[1], "artifact metric (first-entry FIFO)", None),
                  (reuse, PALETTE[2], "slot-reuse estimator", None)]
        if has_gt:
            series.append((np.nan_to_num(gt), "white", "ground truth (sample model)", "//"))
        w = 0.8 / len(series)
        for i, (vals, colour, name, hatch) in enumerate(series):
            bars = ax_sched.bar(x + (i - (len(series) - 1) / 2) * w, vals, w, color=colour, label=name,
                                hatch=hatch, edgecolor="black" if hatch else colour, linewidth=0.8)
            ax_sched.bar_label(bars, labels=[f"{v / r:.1%}" if r else "" for v, r in zip(vals, run, strict=True)],
                               fontsize=7)
        ax_sched.set_xticks(x, labels)
        ax_sched.set_ylim(0, max(np.nanmax(np.r_[sched, reuse, gt, 1.0]), 1) * 1.45)
        ax_sched.set_title("scheduling (labels: share of running)")
        ax_sched.legend(loc="upper right")
        fig.suptitle("Block scheduling cost: variants compared (Sec. 4.5)")
        mark_synthetic(fig, synthetic)
    return fig


# --------------------------------------------------------------------------------------------------
# Section entry point


def trace_truth(t: TraceSched) -> dict | None:
    """The sample generator's truth for this trace: top level for the main trace, ``variants/<label>`` else.

    Matched by the trace's bundle-relative path (the generator records it), so labels do not matter.
    """
    truth = bundle.ground_truth(t.path, SECTION)
    root = bundle.find_bundle_root(t.path)
    if not isinstance(truth, dict) or root is None:
        return None
    rel = t.path.resolve().relative_to(root).as_posix()
    candidates = [truth, *(v for v in (truth.get("variants") or {}).values() if isinstance(v, dict))]
    for cand in candidates:
        if cand.get("trace") == rel:
            return cand
    return None


def _gt(truth: dict | None, key: str) -> float | None:
    return None if not truth or key not in truth else float(truth[key])


def block_sched(paths: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str],
                section: int = 0) -> SectionResult:
    """Analyse one or more block_sched traces (``.bin`` or trace dirs); write figures and results."""
    if not paths:
        raise InputError(None, "no block_sched trace given")
    out = Path(out_dir)
    used: set[str] = set()
    traces: list[TraceSched] = []
    for p in paths:
        for bin_path, trace in resolve_traces(p):
            rec = first_warp_records(trace, section)
            traces.append(analyze_records(trace_label(bin_path, used), bin_path, rec))
    synthetic = any(bundle.is_synthetic(t.path) for t in traces)

    compare = pd.DataFrame({
        "trace": [t.label for t in traces],
        "grid_size": [t.records.grid_size for t in traces],
        "block_size": [t.records.block_size for t in traces],
        "sms": [len(t.per_sm) for t in traces],
        "mean_running_cycles": [t.mean_running for t in traces],
        "mean_scheduling_cycles": [t.mean_scheduling for t in traces],
        "scheduling_ratio": [t.mean_scheduling / t.mean_running if t.mean_running else float("nan")
                             for t in traces],
        "mean_slot_reuse_cycles": [t.mean_slot_reuse for t in traces],
        "line": [t.line for t in traces],
        "path": [str(t.path) for t in traces],
    })
    per_sm = pd.concat([t.per_sm for t in traces], ignore_index=True)

    truths = [trace_truth(t) for t in traces]
    files: dict[str, Path] = {}
    for stem, fig in [("block_sched_per_sm", _per_sm_figure(traces, synthetic)),
                      ("block_sched_timeline", _timeline_figure(traces[0], synthetic)),
                      *([("block_sched_compare", _compare_figure(traces, truths, synthetic))]
                        if len(traces) > 1 else [])]:
        png, svg = save_figure(fig, out, stem)
        files[f"{stem}.png"], files[f"{stem}.svg"] = png, svg

    # Ground truth (sample bundles): the injected dispatch gaps summed per SM, averaged over used SMs. Both
    # estimators (artifact FIFO and slot reuse) estimate that same quantity.
    compare["gt_running_cycles"] = [_gt(g, "running_cycles_per_sm") for g in truths]
    compare["gt_scheduling_cycles"] = [_gt(g, "scheduling_cycles_per_sm") for g in truths]
    summary = []
    for t, g in zip(traces, truths, strict=True):
        gt_run, gt_sched = _gt(g, "running_cycles_per_sm"), _gt(g, "scheduling_cycles_per_sm")
        for key, value, unit, gt in [
            ("mean_running_cycles", t.mean_running, "cycles", gt_run),
            ("mean_scheduling_cycles", t.mean_scheduling, "cycles", gt_sched),
            ("scheduling_ratio", t.mean_scheduling / t.mean_running if t.mean_running else None, "fraction",
             gt_sched / gt_run if gt_run and gt_sched is not None else None),
            ("mean_slot_reuse_cycles", t.mean_slot_reuse, "cycles", gt_sched),
        ]:
            summary.append({"key": f"{t.label}.{key}", "paper_ref": PAPER_REF, "value": value, "unit": unit,
                            "ground_truth": gt})
    data = {
        "section": SECTION,
        "paper_ref": PAPER_REF,
        "paper_kick_the_tires": PAPER_LINE,
        "metric": "artifact first-entry-only FIFO per SM, blocks in index order; means over SMs with >=1 block",
        "traces": [
            {"label": t.label, "path": str(t.path), "line": t.line, "grid_size": t.records.grid_size,
             "block_size": t.records.block_size, "sms": len(t.per_sm), "mean_running_cycles": t.mean_running,
             "mean_scheduling_cycles": t.mean_scheduling, "mean_slot_reuse_cycles": t.mean_slot_reuse,
             "ground_truth": g}
            for t, g in zip(traces, truths, strict=True)
        ],
        "summary": summary,
    }
    files.update(write_results(out, SECTION, data, input_path=traces[0].path,
                               tables={"block_sched_compare": compare, "block_sched_per_sm": per_sm}))
    lines = [t.line for t in traces]
    extra = [f"  {t.label}: scheduling/running {t.mean_scheduling / t.mean_running:.1%} (artifact), "
             f"slot-reuse estimator {t.mean_slot_reuse:,.0f} cycles/SM over {len(t.per_sm)} SMs"
             + (f"; ground truth running {g['running_cycles_per_sm']:,.0f}, scheduling "
                f"{g['scheduling_cycles_per_sm']:,.0f} cycles/SM" if g and "scheduling_cycles_per_sm" in g else "")
             for t, g in zip(traces, truths, strict=True) if t.mean_running]
    text = "\n".join([*lines, *extra, f"results: {files['json']}"])
    return SectionResult(SECTION, data, files, {"block_sched_compare": compare, "block_sched_per_sm": per_sm},
                         summary, text)


def find_bundle_traces(root: str | os.PathLike[str]) -> list[Path]:
    """In a bundle's ``block_sched/`` folder: the raw trace dir(s) first, then ``variants/<name>/<tracedir>``."""
    base = Path(root)
    if (base / "block_sched").is_dir():
        base = base / "block_sched"
    if not base.is_dir():
        raise InputError(base, "no such block_sched folder")
    raw = sorted(d for d in base.iterdir() if d.is_dir() and (d / "result").is_dir())
    variants = []
    vdir = base / "variants"
    if vdir.is_dir():
        for v in sorted(d for d in vdir.iterdir() if d.is_dir()):
            dirs = [v] if (v / "result").is_dir() else sorted(d for d in v.iterdir() if (d / "result").is_dir())
            variants.extend(dirs[-1:])  # newest trace dir of each variant
    if not raw:
        raise InputError(base, "holds no block_sched trace directory (no <tracedir>/result/)")
    return [*raw, *variants]


def analyze(root: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> SectionResult:
    """Sec. 4.5 from a bundle's ``block_sched/`` folder: the raw trace and any ``variants/``."""
    return block_sched(find_bundle_traces(root), out_dir)


def analyze_bundle(bundle_root: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> SectionResult:
    """The section entry point: Sec. 4.5 from a bundle root."""
    return analyze(Path(bundle_root) / "block_sched", out_dir)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", type=Path, help="block_sched result .bin files or trace directories")
    parser.add_argument("--section", type=int, default=0, help="section index of the block_sched probe (default 0)")
    add_output_args(parser, "results/block_sched")
    args = parser.parse_args(argv)
    emit(block_sched(args.traces, args.out, args.section), args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
