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

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from neutrino_ae.bundle.context import Bundle
from neutrino_ae.errors import InputError
from neutrino_ae.formats.bintrace import open_trace  # noqa: F401  (re-exported for callers)
from neutrino_ae.report.figures.process import FigureProcess, draw
from neutrino_ae.report.results import SectionResult, write_results
from neutrino_ae.report.results.columns import Columns, FrameMap
from neutrino_ae.report.results.summary import summary_row

from .analysis import (  # noqa: F401  (re-exported for callers)
    BlockRecords,
    TraceSched,
    _gt,  # noqa: F401  (re-exported for callers)
    analyze_records,
    artifact_line,
    artifact_metric,
    artifact_metric_numpy,
    slot_reuse_metric,
    slot_reuse_metric_numpy,
)
from .estimates import TraceEstimates, estimate, trace_label, trace_truth  # noqa: F401  (re-exported for callers)
from .fast import FirstLine, first_lines, first_warp_records, resolve_traces  # noqa: F401  (re-exported)
from .figure_inputs import figure_jobs, in_figure_order

SECTION = "block_sched"
PAPER_REF = "Sec. 4.5"
#: The kick-the-tires run on the authors' A100 (the paper's own traces were lost; see paper-map).
PAPER_LINE = {"grid_size": 32768, "mean_running_cycles": 602241, "mean_scheduling_cycles": 87713}


# --------------------------------------------------------------------------------------------------
# Figures


# --------------------------------------------------------------------------------------------------
# Section entry point


def artifact_deviation(t: TraceSched) -> str | None:
    """Why the artifact's script would not print this trace's line, where ours does (docs/DESIGN.md,
    "Deviations from the artifact's scripts"): it indexes its per-SM lists by raw SM id."""
    ids = np.asarray(t.per_sm["smid"])
    if ids.size == 0 or (int(ids.min()) == 0 and int(ids.max()) == ids.size - 1):
        return None
    return (f"SM ids {int(ids.min())}..{int(ids.max())} are not 0..{ids.size - 1}: the artifact's block_sched.py "
            "stops with an IndexError on this trace; ours keys SMs by id (the line is the one it prints for "
            "the same blocks with ids 0..n-1)")


def block_sched(paths: Sequence[str | os.PathLike[str]], out_dir: str | os.PathLike[str],
                section: int = 0, bundle: Bundle | None = None, estimates: Sequence[TraceEstimates] | None = None,
                figures: FigureProcess | None = None, timing: Path | None = None) -> SectionResult:
    """Analyse one or more block_sched traces (``.bin`` or trace dirs); write figures and results.
    ``bundle``: the run's bundle; without it (a command line) each trace's own, found from its path.
    ``estimates``: :func:`.estimates.estimate` of the same ``paths``, where the command line computed them
    already; ``figures``: the command line's figure process, sent :func:`.figure_inputs.figure_jobs` of
    them (:mod:`neutrino_ae.report.figures.process`): its files are collected here. Without it the figures
    are drawn in this process. ``timing``: the bundle's ``timing/events.json`` (the fill and its fixes timed
    without a probe), whose speed-ups join the results."""
    out = Path(out_dir)
    est = list(estimates) if estimates is not None else estimate(paths, section, bundle)
    if figures is None:
        drawn = {k: v for job in figure_jobs(est, out) for k, v in draw(job).items()}
    traces = [analyze_records(e.label, e.path, e.records, e.fifo, compiled=False, slot_reuse=e.slot_reuse,
                              frame=False) for e in est]
    owners = [e.bundle for e in est]
    truths = [e.truth for e in est]
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
    per_sm = Columns.concat([t.per_sm for t in traces])
    summary = []
    for t, g, b in zip(traces, truths, owners, strict=True):
        gt_run, gt_sched = _gt(g, "running_cycles_per_sm"), _gt(g, "scheduling_cycles_per_sm")
        for key, value, unit, gt in [
            ("mean_running_cycles", t.mean_running, "cycles", gt_run),
            ("mean_scheduling_cycles", t.mean_scheduling, "cycles", gt_sched),
            ("scheduling_ratio", t.mean_scheduling / t.mean_running if t.mean_running else None, "fraction",
             gt_sched / gt_run if gt_run and gt_sched is not None else None),
            ("mean_slot_reuse_cycles", t.mean_slot_reuse, "cycles", gt_sched),
            # The line per block and per block dispatched into a freed slot (the published-number claims).
            ("running_cycles_per_block", t.running_per_block, "cycles", _gt(g, "mean_block_running_cycles")),
            ("scheduling_cycles_per_dispatch", t.scheduling_per_dispatch, "cycles",
             _gt(g, "realised_mean_dispatch_gap_cycles") if g and g.get("dispatch_gaps") else None),
        ]:
            summary.append(summary_row(SECTION, f"{t.label}.{key}", value, unit, PAPER_REF, b.kind, gt))
    summary += _reductions(traces, truths, owners)
    timed = _timing(timing, owners[0], truths) if timing is not None else None
    if timed:
        summary += timed["rows"]
    data = {
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
        "summary": summary,
    }
    tables = {"block_sched_compare": compare, "block_sched_per_sm": per_sm}
    if timed:
        data["timing"] = timed["doc"]
        tables["block_sched_timing"] = timed["table"]
    written = write_results(out, SECTION, data, input_path=traces[0].path, bundle=owners[0], tables=tables)
    if figures is not None:
        drawn = in_figure_order(figures.join())
    files = {**drawn, **written}  # the figures in their jobs' order, each figure's PNG first
    lines = [t.line for t in traces]
    extra = [f"  {t.label}: scheduling/running {t.mean_scheduling / t.mean_running:.1%} (artifact), "
             f"slot-reuse estimator {t.mean_slot_reuse:,.0f} cycles/SM over {len(t.per_sm)} SMs"
             + (f"; ground truth running {g['running_cycles_per_sm']:,.0f}, scheduling "
                f"{g['scheduling_cycles_per_sm']:,.0f} cycles/SM" if g and "scheduling_cycles_per_sm" in g else "")
             for t, g in zip(traces, truths, strict=True) if t.mean_running]
    notes = [f"  {t.label}: {note}" for t in traces if (note := artifact_deviation(t))]
    read = "trace dirs read: " + ", ".join(f"{t.label} {dirs[t.label]}" for t in traces)
    timing_line = [timed["line"]] if timed else []
    text = "\n".join([*lines, *extra, *notes, *timing_line, read, f"results: {files['json']}"])
    return SectionResult(SECTION, data, files, FrameMap(tables), summary, text)


def _timing(path: Path, bundle: Bundle, truths: Sequence[dict | None]) -> dict | None:
    """The fixes' speed-ups from ``timing/events.json``: summary rows ``<fix>.speedup`` (raw ms / fix ms,
    with the sample model's makespan ratio as ground truth), a table, a line of text."""
    from neutrino_ae.formats.fill_timing import read_fill_timing, speedups

    doc = read_fill_timing(path)
    fast = speedups(doc)
    variants = (truths[0] or {}).get("variants") or {} if truths else {}
    rows = [summary_row(SECTION, "raw.fill_ms", doc["ms"]["raw"], "ms", PAPER_REF, bundle.kind, None)]
    rows += [summary_row(SECTION, f"{fix}.speedup", x, "x", PAPER_REF, bundle.kind,
                         (variants.get(fix) or {}).get("speedup_vs_fill")) for fix, x in fast.items()]
    table = Columns({"fill": list(doc["ms"]), "ms_per_call": list(doc["ms"].values()),
                     "speedup_vs_raw": [1.0, *fast.values()]})
    source = doc.get("source", "not recorded")
    line = ("fill timing (no probe): " + ", ".join(f"{m} {v:.4g} ms" for m, v in doc["ms"].items()) + "; "
            + ", ".join(f"{fix} {x:.2f}x faster" for fix, x in fast.items())
            + f" ({source}; {doc.get('device', 'device not recorded')})")
    return {"rows": rows, "doc": {**doc, "speedup": fast, "file": bundle.relative(path)}, "table": table,
            "line": line}


def _reductions(traces: Sequence[TraceSched], truths: Sequence[dict | None], owners: Sequence[Bundle]) -> list[dict]:
    """Per optimised variant, the share of the raw kernel's scheduling cost it removes (slot-reuse
    estimator, which estimates the injected gaps without the FIFO metric's bias): ``1 - variant / raw``,
    beside the same share of the injected gaps on a sample bundle."""
    raw = next((i for i, t in enumerate(traces) if t.label == "raw"), None)
    if raw is None or not traces[raw].mean_slot_reuse:
        return []
    gt_raw = _gt(truths[raw], "scheduling_cycles_per_sm")
    rows = []
    for t, g, b in zip(traces, truths, owners, strict=True):
        if t is traces[raw]:
            continue
        gt_v = _gt(g, "scheduling_cycles_per_sm")
        gt = 1 - gt_v / gt_raw if gt_raw and gt_v is not None else None
        rows.append(summary_row(SECTION, f"{t.label}.scheduling_reduction", 1 - t.mean_slot_reuse /
                                traces[raw].mean_slot_reuse, "fraction", PAPER_REF, b.kind, gt))
    return rows


def find_bundle_traces(root: str | os.PathLike[str]) -> list[Path]:
    """In a bundle's ``block_sched/`` folder: the newest raw trace dir, then the newest of each
    ``variants/<name>/`` (newest by the time in the folder's name: neutrino_ae/formats/tracedir.py)."""
    from neutrino_ae.formats.tracedir import find_trace_dirs  # event.log and probe.toml readers: a bundle's need

    base = Path(root)
    if (base / "block_sched").is_dir():
        base = base / "block_sched"
    if not base.is_dir():
        raise InputError(base, "no such block_sched folder")
    raw = find_trace_dirs(base)
    if not raw:
        raise InputError(base, "holds no block_sched trace directory (no <tracedir>/result/)")
    variants = []
    vdir = base / "variants"
    if vdir.is_dir():
        for v in sorted(d for d in vdir.iterdir() if d.is_dir() and not d.name.startswith((".", "_"))):
            variants.extend(find_trace_dirs(v)[-1:])  # v itself when it is a trace dir
    return [raw[-1], *variants]


def trace_dir_of(t: TraceSched, bundle: Bundle) -> str:
    """The trace directory a trace was read from (its ``.bin`` when loose), bundle-relative where possible."""
    return bundle.relative(t.path.parent.parent if t.path.parent.name == "result" else t.path)


def analyze(root: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> SectionResult:
    """Sec. 4.5 from a bundle's ``block_sched/`` folder: the raw trace and any ``variants/``."""
    return block_sched(find_bundle_traces(root), out_dir)


def analyze_bundle(bundle: Bundle, out_dir: str | os.PathLike[str]) -> SectionResult:
    """The section entry point: Sec. 4.5 from the run's bundle (and the fixes' timing where it has one)."""
    timing = bundle.path("block_sched", "timing", "events.json")
    return block_sched(find_bundle_traces(bundle.path("block_sched")), out_dir, bundle=bundle,
                       timing=timing if timing.is_file() else None)
