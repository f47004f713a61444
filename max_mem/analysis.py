"""Fig. 11's computations: per model x probe measurements in, the table, peaks and text out (no I/O, no
plots): the section's ``compute`` (:func:`compute`) and what its figure shows (:func:`figures`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from neutrino_ae.report.results.text_table import text_table
from neutrino_ae.report.section.driver import Figure, Result, Table

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from neutrino_ae.bundle.context import Bundle

SECTION = "max_mem"
PAPER_REF = "Fig. 11"

#: Which ``max memory:`` line is the workload's memory; said in the results JSON, the text and the table note.
WORKLOAD_MEMORY_RULE = ("workload memory = the first 'max memory:' line of each stdout.log, largest over the "
                        "sub-modules (the artifact's Fig. 11 loop); a stdout.log may hold several: the first "
                        "readable one is used and the later ones are listed")

MODEL_ORDER = ("resnet-bs32", "sd-bs1", "mamba-bs32", "llama1b-bs32", "llama3b-bs32", "llama8b-bs32",
               "llama8b-bs128", "llama8b-bs256")

PROBE_ORDER = ("block_sched", "gmem_bytes", "tensorop_count", "dmat")

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")

def human_bytes(n: float | None) -> str:
    """``1536`` -> ``'1.5 KiB'`` (binary units, three significant digits)."""
    if n is None or not np.isfinite(n):
        return "-"
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    return f"{int(value)} B" if unit == 0 else f"{value:.3g} {_UNITS[unit]}"

@dataclass
class Entry:
    """One model x probe: peaks and where they came from."""

    model: str
    probe: str
    path: str
    subs: list[str] = field(default_factory=list)
    trace_dirs: int = 0
    launches: int = 0
    probe_mem_max: int | None = None
    probe_mem_source: str | None = None
    workload_max: int | None = None
    workload_source: str | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. a stdout.log with several 'max memory:' lines
    ground_truth: dict[str, Any] | None = None

    @property
    def ratio(self) -> float | None:
        if self.probe_mem_max is None or not self.workload_max:
            return None
        return self.probe_mem_max / self.workload_max

@dataclass
class Measured:
    """Fig. 11's inputs read: every model x probe of one max_mem folder (ground truth attached), and the
    models' missing or unusable inputs."""

    root: Path
    bundle: Bundle
    entries: list[Entry]
    problems_by_model: dict[str, list[str]]

    @property
    def notes(self) -> list[str]:
        return [n for e in self.entries for n in e.notes]

def _order(names: Sequence[str], preferred: Sequence[str]) -> list[str]:
    rank = {n: i for i, n in enumerate(preferred)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))

def table(entries: Sequence[Entry]) -> pd.DataFrame:
    """The results table (``max_mem.csv``), one row per model x probe."""
    import pandas as pd  # built after the command's lines (the driver calls it then)

    rows = []
    for e in entries:
        rows.append({
            "model": e.model, "probe": e.probe,
            "probe_mem_bytes": e.probe_mem_max, "probe_mem": human_bytes(e.probe_mem_max),
            "workload_bytes": e.workload_max, "workload": human_bytes(e.workload_max),
            "probe_over_workload": np.nan if e.ratio is None else e.ratio,
            "subs": len(e.subs), "trace_dirs": e.trace_dirs, "launches": e.launches, "problems": len(e.problems),
        })
    df = pd.DataFrame(rows)
    for col in ("probe_mem_bytes", "workload_bytes"):
        df[col] = df[col].astype("Int64")
    return df

def _models_probes(entries: Sequence[Entry]) -> tuple[list[str], list[str]]:
    models: list[str] = []
    for e in entries:
        if e.model not in models:
            models.append(e.model)
    return models, _order(sorted({e.probe for e in entries}), PROBE_ORDER)

def workload_peaks(entries: Sequence[Entry]) -> dict[str, int | None]:
    """Per model, the workload's peak over all its probe runs (the run under each probe re-measures it)."""
    peaks: dict[str, int | None] = {}
    for e in entries:
        cur = peaks.get(e.model)
        if e.workload_max is not None and (cur is None or e.workload_max > cur):
            peaks[e.model] = e.workload_max
        else:
            peaks.setdefault(e.model, cur)
    return peaks

def _truth(gt: dict[str, Any] | None, model: str, probe: str) -> dict[str, Any] | None:
    """The sample generator's injected peaks for one model x probe, if recorded."""
    if not isinstance(gt, dict):
        return None
    for container in (gt.get("models"), gt.get("entries"), gt):
        if isinstance(container, list):
            for row in container:
                if isinstance(row, dict) and row.get("model") == model and row.get("probe") == probe:
                    return row
        elif isinstance(container, dict):
            node = container.get(model)
            if isinstance(node, dict):
                sub = node.get(probe)
                if isinstance(sub, dict):
                    return sub
                workload = {k: v for k, v in node.items() if not isinstance(v, dict)}
                return workload or None
    return None

def _truth_value(t: dict[str, Any] | None, *names: str) -> Any:
    if not t:
        return None
    for n in names:
        if n in t:
            return t[n]
    return None

_PROBE_TRUTH = ("probe_mem_max", "probe_mem", "max_probe_mem", "probe_mem_bytes", "probe_bytes")

_WORKLOAD_TRUTH = ("workload_max", "workload_bytes", "max_memory", "workload_mem", "workload")


def _rule_lines(notes: Sequence[str], markdown: bool = False) -> str:
    """The workload-memory rule, and the stdout.log files it left lines of (the text's and the table's note)."""
    lines = [f"_{WORKLOAD_MEMORY_RULE}._" if markdown else f"{WORKLOAD_MEMORY_RULE}."]
    if notes:
        lines.append(f"{len(notes)} stdout.log file(s) with several 'max memory:' lines:")
        if markdown:
            lines.append("")
        lines += [("- " if markdown else "  ") + n for n in notes]
    return "\n".join(lines)


#: The table the command prints (a subset of the results table's columns).
TEXT_COLUMNS = ("model", "probe", "probe_mem", "workload", "probe_over_workload")


def _lines(m: Measured) -> list[str]:
    """The command's text up to the figure's name: the table, the rule, the ground-truth checks, the missing
    inputs (the artifact's result, printed first)."""
    mark = " [SYNTHETIC sample data]" if m.bundle.synthetic else ""
    lines = [f"{PAPER_REF}: maximum probe memory vs. workload peak{mark}"]
    rows = [(e.model, e.probe, human_bytes(e.probe_mem_max), human_bytes(e.workload_max),
             "-" if e.ratio is None or np.isnan(e.ratio) else f"{e.ratio:.3g}") for e in m.entries]
    lines.append(text_table(TEXT_COLUMNS, rows))
    lines.append(_rule_lines(m.notes))
    for what, names, attr in (("probe-memory", _PROBE_TRUTH, "probe_mem_max"),
                              ("workload", _WORKLOAD_TRUTH, "workload_max")):
        checked = []
        for e in m.entries:
            t = _truth_value(e.ground_truth, *names)
            if t is not None and getattr(e, attr) is not None:
                checked.append(getattr(e, attr) == int(t))
        if checked:
            lines.append(f"ground truth: {sum(checked)}/{len(checked)} {what} peaks equal the injected value")
    if m.problems_by_model:
        lines.append("missing or unusable inputs (the rest is reported):")
        for model, items in m.problems_by_model.items():
            lines.append(f"  {model}: {len(items)}")
            lines += [f"    {p}" for p in items]
    return lines


def compute(m: Measured) -> Result:
    """The section's ``compute``: per model x probe, the probe's and the workload's peaks and their ratio."""
    numbers: dict[str, Any] = {}
    truth: dict[str, Any] = {}
    for e in m.entries:
        key = f"{e.model}.{e.probe}"
        gt_probe = _truth_value(e.ground_truth, *_PROBE_TRUTH)
        gt_work = _truth_value(e.ground_truth, *_WORKLOAD_TRUTH)
        numbers.update({f"{key}.probe_mem_max": e.probe_mem_max, f"{key}.workload_max": e.workload_max,
                        f"{key}.probe_over_workload": e.ratio})
        truth.update({f"{key}.probe_mem_max": gt_probe, f"{key}.workload_max": gt_work,
                      f"{key}.probe_over_workload": gt_probe / gt_work if gt_probe is not None and gt_work else None})
    notes = m.notes
    data = {"paper_ref": PAPER_REF, "bundle_kind": m.bundle.kind, "synthetic": m.bundle.synthetic, "root": str(m.root),
            "entries": [{**asdict(e), "ratio": e.ratio} for e in m.entries],
            "workload_peaks": workload_peaks(m.entries), "problems_by_model": m.problems_by_model,
            "workload_memory_rule": WORKLOAD_MEMORY_RULE, "workload_memory_notes": notes, "summary": None}
    return Result(files={SECTION: Table(partial(table, m.entries), "\n" + _rule_lines(notes, markdown=True) + "\n")},
                  numbers=numbers, truth=truth,
                  units={"probe_mem_max": "bytes", "workload_max": "bytes", "probe_over_workload": "ratio"},
                  data=data, lines=_lines(m), done="wrote {figure}", input=m.root,
                  plots={"synthetic": m.bundle.synthetic, "entries": m.entries})


def figures(result: Result) -> list[Figure]:
    """The section's ``figures``: each model x probe's peaks, in the table's order."""
    return [Figure(SECTION, "figures:figure", {}, {
        "synthetic": result.plots["synthetic"],
        "entries": [{"model": e.model, "probe": e.probe, "probe_mem_max": e.probe_mem_max,
                     "workload_max": e.workload_max} for e in result.plots["entries"]],
    })]
