"""Fig. 12's numbers and the artifact's lines with numpy alone (no pandas, no matplotlib): the workload CSVs
read (:func:`read_workload`), the ratios (:func:`.analysis.ratio_columns`) and the text the command prints first
(:meth:`Measured.lines`, its table as pandas' ``to_string`` printed it); the figures, the table files and
the results follow (:mod:`.pipeline`), pandas imported only then.

A CSV in the plain form the collectors write (a header naming the columns, one line per probe, every time a
plain decimal number, no quotes) is read here; any other (quoted fields, blank lines, an empty or odd value,
a bad row) goes to the pandas reader, :func:`.pipeline.read_workload_csv`, which reads it or names its
problem as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from neutrino_ae.bundle.context import Bundle, bundle_of
from neutrino_ae.errors import InputError
from neutrino_ae.formats.inputs import MiB, check_input
from neutrino_ae.report.paths import missing_reason
from neutrino_ae.report.summary import summary_row
from neutrino_ae.report.text_table import text_table

from .analysis import (
    COLUMNS,
    OPTIONAL_COLUMNS,
    PAPER_REF,
    PARTS,
    SUM_TOLERANCE,
    SUMMARY_KEYS,
    TIME_COLUMNS,
    WORKLOADS,
    _truth,
    ratio_columns,
)

SECTION = "exposed_latency"
MAX_CSV_BYTES = 16 * MiB

#: What no probe name holds: a NUL, an escape or another control character (the pandas reader refuses it).
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

#: A number as both Python's ``float`` and pandas' ``to_numeric`` read it, and read the same.
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def read_plain_csv(path: str | Path) -> tuple[list[str], dict[str, np.ndarray]] | None:
    """The probes and time columns (float64) of a workload CSV in the plain form, validated as the pandas
    reader validates it; None for any other CSV (the pandas reader then reads it or names its problem)."""
    path = check_input(path, "CSV", MAX_CSV_BYTES)
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if '"' in text or "\r" in text or not text.endswith("\n"):
        return None
    lines = text[:-1].split("\n")
    header = [c.strip() for c in lines[0].split(",")]
    if len(lines) < 2 or len(set(header)) != len(header) or "" in header or any(c not in header for c in COLUMNS):
        return None
    rows = [ln.split(",") for ln in lines[1:]]
    if any(len(r) != len(header) or not ln.strip() for r, ln in zip(rows, lines[1:], strict=True)):
        return None
    at = {c: header.index(c) for c in COLUMNS}
    probes = [r[at["probe"]].strip() for r in rows]
    if "" in probes or len(set(probes)) != len(probes) or any(CONTROL.search(p) for p in probes):
        return None
    times = {}
    for col in TIME_COLUMNS:
        raw = [r[at[col]].strip() for r in rows]
        if not all(_PLAIN_NUMBER.fullmatch(v) or (col in OPTIONAL_COLUMNS and v == "") for v in raw):
            return None
        values = np.array([float(v) if v else np.nan for v in raw], dtype=np.float64)
        positive = col in ("original", "neutrino", "kernel")  # as the pandas reader: a kernel never takes no time
        if not np.all(np.isfinite(values) | np.isnan(values)) or np.any(values <= 0 if positive else values < 0):
            return None
        times[col] = values
    return probes, times


def read_workload(path: str | Path) -> tuple[list[str], dict[str, np.ndarray]]:
    """One workload CSV's probes and time columns: :func:`read_plain_csv`, else the pandas reader."""
    plain = read_plain_csv(path)
    if plain is not None:
        return plain
    from .pipeline import read_workload_csv  # pandas: for a CSV out of the plain form

    df = read_workload_csv(path)
    return df["probe"].tolist(), {c: df[c].to_numpy(dtype=np.float64) for c in TIME_COLUMNS}


def resolve_inputs(paths: Sequence[str | Path]) -> tuple[list[tuple[str, Path]], list[str]]:
    """``(workload, csv)`` to plot and the expected workload files that are missing.

    A folder contributes the four paper workloads (missing ones are listed); files are taken as given
    and named by their stem.
    """
    found: list[tuple[str, Path]] = []
    missing: list[str] = []
    for p in map(Path, paths):
        if p.is_dir():
            for w in WORKLOADS:
                if (p / f"{w}.csv").is_file():
                    found.append((w, p / f"{w}.csv"))
                else:
                    missing.append(f"{p / f'{w}.csv'}: missing, no {w} panel")
        elif p.exists() or p.suffix == ".csv":
            found.append((p.stem, p))
        else:
            raise InputError(p, missing_reason(p, "no such folder or CSV file"))
    return found, missing


@dataclass
class Workload:
    name: str
    path: Path
    probes: list[str]
    times: dict[str, np.ndarray]
    ratios: dict[str, np.ndarray]


@dataclass
class Measured:
    """Fig. 12 of the inputs: each workload's times and ratios, the summary rows, warnings, what is missing."""

    found: list[tuple[str, Path]]
    missing: list[str]
    workloads: list[Workload]
    owners: list[Bundle]
    synthetic: bool | None
    summary: list[dict[str, Any]]
    warnings: list[str]

    def lines(self) -> list[str]:
        """The command's text up to the figures' names (the artifact's result, printed first)."""
        mark = " [SYNTHETIC sample data]" if self.synthetic else ""
        lines = [f"{PAPER_REF}: exposed latency (time / original){mark}"]
        rows = []
        for w in self.workloads:
            r = w.ratios
            for i, probe in enumerate(w.probes):
                ncu = r["ncu_ratio"][i]
                rows.append([w.name, probe, "n/a" if np.isnan(ncu) else f"{ncu:.2f}x", f"{r['neutrino_ratio'][i]:.2f}x",
                             *(f"{r[f'{part}_share'][i]:.1%}" for part in PARTS)])
        lines.append(text_table(["workload", "probe", "ncu", "neutrino", *(f"{p} share" for p in PARTS)], rows))
        unmeasured = [s["key"] for s in self.summary if s["value"] is None]
        if unmeasured:
            lines.append(f"{len(unmeasured)} ratio(s) without a value (not measured): {', '.join(unmeasured[:6])}"
                         + (f" (+{len(unmeasured) - 6} more)" if len(unmeasured) > 6 else ""))
        with_truth = [s for s in self.summary if s["ground_truth"] is not None and s["value"] is not None]
        if with_truth:
            err = max(abs(s["value"] - float(s["ground_truth"])) / float(s["ground_truth"]) for s in with_truth)
            lines.append(f"ground truth: {len(with_truth)} ratios and segments, largest relative deviation {err:.2%}")
        lines += [f"warning: {w}" for w in self.warnings]
        if self.missing:
            lines.append("missing inputs (the rest is reported):")
            lines += [f"  {m}" for m in self.missing]
        return lines


def measure(inputs: Sequence[str | Path], bundle: Bundle | None = None) -> Measured:
    """Fig. 12 from workload CSVs (or folders holding ``{attn,gmm,conv,gemm}.csv``). ``bundle``: the run's
    bundle; without it (a command line) each CSV's own, found from its path."""
    found, missing = resolve_inputs(inputs)
    if not found:
        raise InputError(inputs[0] if inputs else None, "no workload CSV found (" + "; ".join(missing) + ")")
    # Every input is read and checked before anything is written: a bad CSV leaves no figure behind.
    workloads = []
    for name, path in found:
        probes, times = read_workload(path)
        workloads.append(Workload(name, path, probes, times, ratio_columns(times)))
    owners = [bundle or bundle_of(p) for _, p in found]  # the bundle of each CSV
    kinds = {b.synthetic for b in owners}
    synthetic = True if True in kinds else None if None in kinds else False
    gt = owners[0].ground_truth(SECTION)
    summary, warnings = [], []
    for w in workloads:
        for i, probe in enumerate(w.probes):
            t = _truth(gt, w.name, probe)
            for key in SUMMARY_KEYS:
                summary.append(summary_row(SECTION, f"{w.name}.{probe}.{key}", float(w.ratios[key][i]), "x",
                                           PAPER_REF, owners[0].kind, t.get(key)))
            over = w.ratios["parts_over_total"][i]
            if over > 1 + SUM_TOLERANCE:
                warnings.append(f"{w.path}: probe {probe}: prologue+kernel+epilogue is {over:.3f} x the neutrino time")
    return Measured(found, missing, workloads, owners, synthetic, summary, warnings)
