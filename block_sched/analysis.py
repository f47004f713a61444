"""Sec. 4.5's computations: the traces' records in, both estimators per SM, the tables, the numbers and the
text out (no I/O, no plots): the section's ``compute`` (:func:`compute`) and what its figures show
(:func:`figures`). The estimators' rules are in :mod:`.estimates`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from neutrino_ae.report.results.columns import Columns
from neutrino_ae.report.section.driver import Figure, Number, Result
from neutrino_ae.sched import intervals as accel

from .estimates import FifoPerSM, SlotReuse, _gt, fifo_per_sm, line_of, share_of_running, slot_reuse_per_sm

if TYPE_CHECKING:  # the tables are numpy columns; pandas only for the DataFrame forms, imported there
    import pandas as pd

    from neutrino_ae.bundle.context import Bundle

    from .inputs import BlockRecords, Traces

SECTION = "block_sched"
PAPER_REF = "Sec. 4.5"
#: The kick-the-tires run on the authors' A100 (the paper's own traces were lost; see paper-map).
PAPER_LINE = {"grid_size": 32768, "mean_running_cycles": 602241, "mean_scheduling_cycles": 87713}

#: Blocks drawn per SM in the timeline: beyond a few thousand the bars are below a pixel wide, and the
#: figure's cost would grow with the trace. The first blocks by start time are drawn (greedy slots are
#: assigned in start order, so their slots are the same as in the whole trace) and the title says so.
TIMELINE_MAX_BLOCKS = 2000

#: Each summary number's unit, by the key's last dotted part (the driver's ``Result.units``).
UNITS = {"mean_running_cycles": "cycles", "mean_scheduling_cycles": "cycles", "scheduling_ratio": "fraction",
         "mean_slot_reuse_cycles": "cycles", "running_cycles_per_block": "cycles",
         "scheduling_cycles_per_dispatch": "cycles", "scheduling_reduction": "fraction", "fill_ms": "ms",
         "speedup": "x"}


@dataclass
class TraceSched:
    label: str
    path: Path
    records: BlockRecords
    per_sm: pd.DataFrame | Columns  # Columns where analyze_records was asked for no DataFrame
    line: str
    mean_running: float
    mean_scheduling: float
    mean_slot_reuse: float
    fifo: FifoPerSM
    slot_reuse: SlotReuse

    def _column(self, name: str) -> np.ndarray:
        return np.asarray(self.per_sm[name], dtype=float)

    @property
    def blocks_per_sm(self) -> float:
        """Blocks per SM, mean over the SMs that ran one (the divisor of 'Running' per block)."""
        return _mean(self._column("blocks")) if len(self.per_sm) else 0.0

    @property
    def dispatches_per_sm(self) -> float:
        """Blocks per SM that waited for a freed slot: all but the SM's peak number of resident blocks."""
        if not len(self.per_sm):
            return 0.0
        return _mean(np.clip(self._column("blocks") - self._column("peak_resident"), 0, None))

    @property
    def running_per_block(self) -> float | None:
        """The artifact's 'Running' (cycles per SM) per block: the mean block duration."""
        return self.mean_running / self.blocks_per_sm if self.blocks_per_sm else None

    @property
    def scheduling_per_dispatch(self) -> float | None:
        """The artifact's 'Scheduling' (cycles per SM) per block dispatched into a freed slot."""
        return self.mean_scheduling / self.dispatches_per_sm if self.dispatches_per_sm else None


def _mean(values: np.ndarray) -> float:
    """The mean over the values that are not NaN (NaN when none is), as pandas' ``Series.mean`` takes it."""
    ok = values[~np.isnan(values)]
    return float(ok.mean()) if ok.size else float("nan")


def artifact_metric(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """Per SM: blocks, running and scheduling cycles under the artifact's first-entry-only FIFO rule.

    Compiled single pass (:func:`neutrino_ae.sched.intervals.artifact_fifo_kernel`) when numba is available,
    else :func:`artifact_metric_numpy`; both give the same table.
    """
    return _fifo_table(_fifo(lstart, elapse, smid, compiled=True))


def _fifo(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray, compiled: bool) -> FifoPerSM:
    """The FIFO metric per SM: the compiled pass where ``compiled`` and numba is worth it at this size."""
    if not (compiled and accel.use_numba(np.size(lstart))):
        return fifo_per_sm(lstart, elapse, smid)
    lstart, elapse = accel.i64(lstart), accel.i64(elapse)
    sms, gidx = accel.dense_ids(smid)
    return FifoPerSM(sms, *accel.artifact_fifo_kernel(lstart, elapse, gidx, sms.size))


def artifact_metric_numpy(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """:func:`artifact_metric` in numpy (the path without numba): :func:`.estimates.fifo_per_sm` as a table."""
    return _fifo_table(fifo_per_sm(lstart, elapse, smid))


def _fifo_table(f: FifoPerSM) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({"smid": f.smid, "blocks": f.blocks, "running_cycles": f.running_cycles,
                         "scheduling_cycles": f.scheduling_cycles})


def slot_reuse_metric(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """Per SM: peak resident blocks C and the slot-reuse scheduling total ``sum start_(i) - end_(i-C)``.

    Compiled merge over the per-SM sorted starts and ends when numba is available, else
    :func:`slot_reuse_metric_numpy`; both give the same table.
    """
    return _reuse_table(_slot_reuse(lstart, elapse, smid, compiled=True))


def _slot_reuse(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray, compiled: bool) -> SlotReuse:
    """The slot-reuse estimator per SM: the compiled merge where ``compiled`` and numba is worth it here."""
    if not (compiled and accel.use_numba(np.size(lstart))) or np.size(lstart) == 0:
        return slot_reuse_per_sm(lstart, elapse, smid)
    lstart = accel.i64(lstart)
    end = lstart + accel.i64(elapse)
    sms, gidx = accel.dense_ids(smid)
    (starts, ends), first, counts = accel.group_sorted(gidx, sms.size, lstart, end)
    return SlotReuse(sms, *accel.peak_and_reuse_kernel(starts, ends, first, counts))


def slot_reuse_metric_numpy(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """:func:`slot_reuse_metric` in numpy (the path without numba): :func:`.estimates.slot_reuse_per_sm` as a table."""
    return _reuse_table(slot_reuse_per_sm(lstart, elapse, smid))


def _reuse_table(r: SlotReuse) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({"smid": r.smid, "peak_resident": r.peak_resident, "slot_reuse_cycles": r.slot_reuse_cycles})


def artifact_line(grid_size: int, per_sm: pd.DataFrame | Columns) -> tuple[str, float, float]:
    """The artifact's line and the two means it truncates, from :func:`artifact_metric`'s table."""
    return line_of(grid_size, np.asarray(per_sm["running_cycles"]), np.asarray(per_sm["scheduling_cycles"]))


def per_sm_table(label: str, fifo: FifoPerSM, reuse: SlotReuse) -> Columns:
    """The per-SM table: the FIFO metric's SMs with their slot-reuse numbers and both ratios (NaN where an
    SM ran for 0 cycles, or, for the slot-reuse columns, where the estimator has no such SM)."""
    peak, total = reuse.on(fifo.smid)
    return Columns({"trace": [label] * fifo.smid.size, "smid": fifo.smid, "blocks": fifo.blocks,
                    "running_cycles": fifo.running_cycles, "scheduling_cycles": fifo.scheduling_cycles,
                    "peak_resident": peak, "slot_reuse_cycles": total,
                    "ratio": share_of_running(fifo.scheduling_cycles, fifo.running_cycles),
                    "slot_reuse_ratio": share_of_running(total, fifo.running_cycles)})


def analyze_records(label: str, path: Path, rec: BlockRecords, compiled: bool | None = None,
                    frame: bool = True) -> TraceSched:
    """Both estimators per SM and the artifact's line. ``compiled``: whether the numba kernels may be used
    (default: the :mod:`neutrino_ae.jit` rule by size; :func:`compute` runs numpy, as importing numba costs a
    one-shot command more than numpy spends at a million blocks); ``frame``: the per-SM table as a DataFrame
    (else as :class:`Columns`, no pandas import)."""
    if compiled is None:
        compiled = accel.use_numba(np.size(rec.lstart))
    fifo = _fifo(rec.lstart, rec.elapse, rec.smid, compiled)
    slot_reuse = _slot_reuse(rec.lstart, rec.elapse, rec.smid, compiled)
    table = per_sm_table(label, fifo, slot_reuse)
    line, mean_run, mean_sched = artifact_line(rec.grid_size, table)
    mean_reuse = _mean(np.asarray(table["slot_reuse_cycles"], dtype=float)) if len(table) else 0.0
    return TraceSched(label, path, rec, table.to_frame() if frame else table, line, mean_run, mean_sched, mean_reuse,
                      fifo, slot_reuse)


def artifact_deviation(t: TraceSched) -> str | None:
    """Why the artifact's script would not print this trace's line, where ours does (docs/DESIGN.md,
    "Deviations from the artifact's scripts"): it indexes its per-SM lists by raw SM id."""
    ids = np.asarray(t.per_sm["smid"])
    if ids.size == 0 or (int(ids.min()) == 0 and int(ids.max()) == ids.size - 1):
        return None
    return (f"SM ids {int(ids.min())}..{int(ids.max())} are not 0..{ids.size - 1}: the artifact's block_sched.py "
            "stops with an IndexError on this trace; ours keys SMs by id (the line is the one it prints for "
            "the same blocks with ids 0..n-1)")


def trace_dir_of(t: TraceSched, bundle: Bundle) -> str:
    """The trace directory a trace was read from (its ``.bin`` when loose), bundle-relative where possible."""
    return bundle.relative(t.path.parent.parent if t.path.parent.name == "result" else t.path)


def compute(loaded: Traces) -> Result:
    """The section's ``compute``: both estimators per trace (numpy: a one-shot command does not pay numba's
    import), the tables, the numbers per trace with the sample's ground truth, the fixes' reductions and
    timing, the results document and the text; the artifact's lines first, one per trace."""
    traces = [analyze_records(t.label, t.path, t.records, compiled=False, frame=False) for t in loaded.traces]
    truths = [t.truth for t in loaded.traces]
    owners = [t.bundle for t in loaded.traces]
    dirs = {t.label: trace_dir_of(t, b) for t, b in zip(traces, owners, strict=True)}
    compare = Columns({
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
        # Ground truth (sample bundles): the injected dispatch gaps summed per SM, averaged over used SMs. Both
        # estimators (artifact FIFO and slot reuse) estimate that same quantity.
        "gt_running_cycles": [_gt(g, "running_cycles_per_sm") for g in truths],
        "gt_scheduling_cycles": [_gt(g, "scheduling_cycles_per_sm") for g in truths],
    })
    # Each number with its ground truth and the kind of the bundle its trace came from (a command line's
    # traces may come from several).
    numbers: dict[str, Number] = {}
    truth: dict[str, float | None] = {}
    for key, value, gt, bundle in [*_per_trace(traces, truths, owners), *_reductions(traces, truths, owners)]:
        numbers[key], truth[key] = Number(value, kind=bundle.kind), gt
    timed = _timing(loaded.timing, owners[0], truths) if loaded.timing is not None else None
    for key, value, gt in timed["numbers"] if timed else []:
        numbers[key], truth[key] = Number(value, kind=owners[0].kind), gt
    data: dict[str, Any] = {
        "section": SECTION,
        "paper_ref": PAPER_REF,
        "paper_kick_the_tires": PAPER_LINE,
        "metric": "artifact first-entry-only FIFO per SM, blocks in index order; means over SMs with >=1 block",
        "traces": [
            {"label": t.label, "path": str(t.path), "line": t.line, "grid_size": t.records.grid_size,
             "block_size": t.records.block_size, "sms": len(t.per_sm), "mean_running_cycles": t.mean_running,
             "mean_scheduling_cycles": t.mean_scheduling, "mean_slot_reuse_cycles": t.mean_slot_reuse,
             "ground_truth": g, "artifact_deviation": artifact_deviation(t), "trace_dir": dirs[t.label]}
            for t, g in zip(traces, truths, strict=True)
        ],
        "trace_dirs": list(dict.fromkeys(dirs.values())),
        "summary": None,  # the driver's rows, here
    }
    tables = {"block_sched_compare": compare, "block_sched_per_sm": Columns.concat([t.per_sm for t in traces])}
    if timed:
        data["timing"] = timed["doc"]
        tables["block_sched_timing"] = timed["table"]
    extra = [f"  {t.label}: scheduling/running {t.mean_scheduling / t.mean_running:.1%} (artifact), "
             f"slot-reuse estimator {t.mean_slot_reuse:,.0f} cycles/SM over {len(t.per_sm)} SMs"
             + (f"; ground truth running {g['running_cycles_per_sm']:,.0f}, scheduling "
                f"{g['scheduling_cycles_per_sm']:,.0f} cycles/SM" if g and "scheduling_cycles_per_sm" in g else "")
             for t, g in zip(traces, truths, strict=True) if t.mean_running]
    notes = [f"  {t.label}: {note}" for t in traces if (note := artifact_deviation(t))]
    read = "trace dirs read: " + ", ".join(f"{t.label} {dirs[t.label]}" for t in traces)
    rest = [*extra, *notes, *([timed["line"]] if timed else []), read]
    return Result(files=tables, numbers=numbers, truth=truth, units=UNITS, data=data,
                  lines=[t.line for t in traces], done="\n".join([*rest, "results: {json}"]), input=traces[0].path,
                  plots={"traces": traces, "truths": truths, "synthetic": any(b.synthetic for b in owners)})


def _per_trace(traces: Sequence[TraceSched], truths: Sequence[dict | None],
               owners: Sequence[Bundle]) -> list[tuple[str, Any, float | None, Bundle]]:
    """Each trace's numbers ``(key, value, ground truth, bundle)``: both estimators' means, the ratio, and the
    line per block and per block dispatched into a freed slot (the published-number claims)."""
    out = []
    for t, g, b in zip(traces, truths, owners, strict=True):
        gt_run, gt_sched = _gt(g, "running_cycles_per_sm"), _gt(g, "scheduling_cycles_per_sm")
        out += [(f"{t.label}.{key}", value, gt, b) for key, value, gt in [
            ("mean_running_cycles", t.mean_running, gt_run),
            ("mean_scheduling_cycles", t.mean_scheduling, gt_sched),
            ("scheduling_ratio", t.mean_scheduling / t.mean_running if t.mean_running else None,
             gt_sched / gt_run if gt_run and gt_sched is not None else None),
            ("mean_slot_reuse_cycles", t.mean_slot_reuse, gt_sched),
            ("running_cycles_per_block", t.running_per_block, _gt(g, "mean_block_running_cycles")),
            ("scheduling_cycles_per_dispatch", t.scheduling_per_dispatch,
             _gt(g, "realised_mean_dispatch_gap_cycles") if g and g.get("dispatch_gaps") else None),
        ]]
    return out


def _reductions(traces: Sequence[TraceSched], truths: Sequence[dict | None],
                owners: Sequence[Bundle]) -> list[tuple[str, Any, float | None, Bundle]]:
    """Per optimised variant, the share of the raw kernel's scheduling cost it removes (slot-reuse
    estimator, which estimates the injected gaps without the FIFO metric's bias): ``1 - variant / raw``,
    beside the same share of the injected gaps on a sample bundle."""
    raw = next((i for i, t in enumerate(traces) if t.label == "raw"), None)
    if raw is None or not traces[raw].mean_slot_reuse:
        return []
    gt_raw = _gt(truths[raw], "scheduling_cycles_per_sm")
    out = []
    for t, g, b in zip(traces, truths, owners, strict=True):
        if t is traces[raw]:
            continue
        gt_v = _gt(g, "scheduling_cycles_per_sm")
        gt = 1 - gt_v / gt_raw if gt_raw and gt_v is not None else None
        out.append((f"{t.label}.scheduling_reduction", 1 - t.mean_slot_reuse / traces[raw].mean_slot_reuse, gt, b))
    return out


def _timing(path: Path, bundle: Bundle, truths: Sequence[dict | None]) -> dict[str, Any]:
    """The fixes' speed-ups from ``timing/events.json``: numbers ``<fix>.speedup`` (raw ms / fix ms, with the
    sample model's makespan ratio as ground truth), a table, a line of text."""
    from neutrino_ae.formats.fill_timing import read_fill_timing, speedups

    doc = read_fill_timing(path)
    fast = speedups(doc)
    variants = (truths[0] or {}).get("variants") or {} if truths else {}
    numbers = [("raw.fill_ms", doc["ms"]["raw"], None)]
    numbers += [(f"{fix}.speedup", x, (variants.get(fix) or {}).get("speedup_vs_fill")) for fix, x in fast.items()]
    table = Columns({"fill": list(doc["ms"]), "ms_per_call": list(doc["ms"].values()),
                     "speedup_vs_raw": [1.0, *fast.values()]})
    source = doc.get("source", "not recorded")
    line = ("fill timing (no probe): " + ", ".join(f"{m} {v:.4g} ms" for m, v in doc["ms"].items()) + "; "
            + ", ".join(f"{fix} {x:.2f}x faster" for fix, x in fast.items())
            + f" ({source}; {doc.get('device', 'device not recorded')})")
    return {"numbers": numbers, "doc": {**doc, "speedup": fast, "file": bundle.relative(path)}, "table": table,
            "line": line}


def figures(result: Result) -> list[Figure]:
    """The section's ``figures``: per SM (every trace), the first trace's block timeline, and the traces
    compared where there are several; each saved under its own file names."""
    traces, synthetic = result.plots["traces"], result.plots["synthetic"]
    out = [per_sm_spec(traces, synthetic), timeline_spec(traces[0], synthetic)]
    if len(traces) > 1:
        out.append(compare_spec(traces, result.plots["truths"], synthetic))
    return out


def pick_sms(smid: np.ndarray, ratio: np.ndarray, n: int = 3) -> list[int]:
    """SMs with the lowest, median and highest artifact ratio (distinct, in that order; ties by SM id)."""
    ok = np.isfinite(ratio)
    if not ok.any():
        return [int(s) for s in smid[:n]]
    ids, vals = smid[ok], ratio[ok]
    order = np.lexsort((ids, vals))
    idx = np.unique(np.linspace(0, order.size - 1, n).round().astype(int))
    return [int(s) for s in ids[order][idx]]


def _artifact_ratio(t: TraceSched) -> np.ndarray:
    """Scheduling / running per SM by the artifact's metric (NaN where an SM ran for 0 cycles)."""
    return share_of_running(t.fifo.scheduling_cycles, t.fifo.running_cycles)


def per_sm_spec(traces: Sequence[TraceSched], synthetic: bool) -> Figure:
    """Scheduling / running per SM, one panel per trace: both estimators and the mean ratio."""
    arrays, panels = {}, []
    for i, t in enumerate(traces):
        arrays[f"{i}.smid"] = t.fifo.smid
        arrays[f"{i}.ratio"] = _artifact_ratio(t)
        arrays[f"{i}.slot_reuse_ratio"] = share_of_running(t.slot_reuse.on(t.fifo.smid)[1], t.fifo.running_cycles)
        panels.append({"label": t.label, "line": t.line,
                       "mean_ratio": t.mean_scheduling / t.mean_running if t.mean_running else None})
    return Figure("block_sched_per_sm", "figures:per_sm_figure", arrays, {"synthetic": synthetic, "panels": panels},
                  key="")


def timeline_spec(t: TraceSched, synthetic: bool, zoom_blocks: int = 24,
                    max_blocks: int = TIMELINE_MAX_BLOCKS) -> Figure:
    """Block timeline of the SMs with the lowest, median and highest ratio: each SM's blocks in index order
    (its first ``max_blocks`` by start time where it ran more)."""
    rec = t.records
    smid, ratio = t.fifo.smid, _artifact_ratio(t)
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
    return Figure("block_sched_timeline", "figures:timeline_figure", arrays,
                  {"synthetic": synthetic, "label": t.label, "sms": sms, "zoom_blocks": zoom_blocks}, key="")


def compare_spec(traces: Sequence[TraceSched], truths: Sequence[dict | None], synthetic: bool) -> Figure:
    """Running and scheduling cycles per SM of each trace, both estimators and the sample's ground truth."""
    return Figure("block_sched_compare", "figures:compare_figure", {}, {
        "synthetic": synthetic,
        "labels": [f"{t.label}\n{t.records.grid_size} blocks" for t in traces],
        "running": [t.mean_running for t in traces],
        "scheduling": [t.mean_scheduling for t in traces],
        # The mean over SMs as the results' table takes it (a float64 sum of the int64 totals).
        "slot_reuse": [float(t.slot_reuse.slot_reuse_cycles.mean()) if t.slot_reuse.smid.size else 0.0
                       for t in traces],
        "ground_truth": [_gt(g, "scheduling_cycles_per_sm") for g in truths],
    }, key="")
