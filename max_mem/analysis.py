"""Fig. 11's computations: per model x probe measurements in, the table and peaks out (no I/O, no plots; numpy
only, pandas imported by :func:`table` alone)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pandas is imported where a table is built, after the command's line
    import pandas as pd

PAPER_REF = "Fig. 11"

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

def _order(names: Sequence[str], preferred: Sequence[str]) -> list[str]:
    rank = {n: i for i, n in enumerate(preferred)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))

def table(entries: Sequence[Entry]) -> pd.DataFrame:
    """The results table (``max_mem.csv``), one row per model x probe."""
    import pandas as pd

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
