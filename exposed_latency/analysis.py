"""Fig. 12's computations: per-workload times in, ratios to the original out (no I/O, no plots): the
section's ``compute`` (:func:`compute`) and what its figures show (:func:`figures`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from neutrino_ae.report.results.text_table import text_table
from neutrino_ae.report.section.driver import Figure, Result

if TYPE_CHECKING:
    from pathlib import Path

    from neutrino_ae.bundle.context import Bundle

SECTION = "exposed_latency"
PAPER_REF = "Fig. 12"

WORKLOADS = ("attn", "gmm", "conv", "gemm")

COLUMNS = ("probe", "original", "ncu", "neutrino", "prologue", "kernel", "epilogue")

#: Columns that may be left empty: the dynamic collector leaves ``ncu`` blank when Nsight Compute is absent.
OPTIONAL_COLUMNS = ("ncu",)

TIME_COLUMNS = COLUMNS[1:]

UNATTRIBUTED_MIN = 0.005

# Parts may exceed the total by rounding of the logged milliseconds; beyond this it is flagged.
SUM_TOLERANCE = 0.02

def ratio_columns(times: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per probe: ncu and Neutrino ratios to the original, part shares and stacked segment heights."""
    r = {"ncu_ratio": times["ncu"] / times["original"], "neutrino_ratio": times["neutrino"] / times["original"]}
    for part in PARTS:
        r[f"{part}_share"] = times[part] / times["neutrino"]
    share_sum = sum(r[f"{p}_share"] for p in PARTS)
    r["unattributed_share"] = np.clip(1.0 - share_sum, 0.0, None)
    for part in (*PARTS, "unattributed"):
        r[f"{part}_height"] = r[f"{part}_share"] * r["neutrino_ratio"]
    r["ncu_over_neutrino"] = times["ncu"] / times["neutrino"]
    r["parts_over_total"] = share_sum
    return r


def ratios(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`ratio_columns` of a workload table (:func:`.inputs.read_workload_csv`), with its probes."""
    return pd.DataFrame({"probe": df["probe"],
                         **ratio_columns({c: df[c].to_numpy(dtype=np.float64) for c in TIME_COLUMNS})})

def _has_unattributed(r: pd.DataFrame) -> bool:
    # Below half a percent it is rounding of the logged milliseconds, not a visible segment.
    return bool((r["unattributed_share"] > UNATTRIBUTED_MIN).any())

# Ground-truth field names: the sample generator's first, then the plain ratio names.
_TRUTH_KEYS = {"ncu_ratio": ("ncu_over_original", "ncu_ratio"),
               "neutrino_ratio": ("neutrino_over_original", "neutrino_ratio"),
               # the stacked segments' heights: each part's time over the original
               **{f"{part}_height": (f"{part}_over_original", f"{part}_height")
                  for part in ("prologue", "kernel", "epilogue")}}

#: The summary keys of one workload x probe: the two bars' tops, then the Neutrino bar's segments (top first).
SUMMARY_KEYS = tuple(_TRUTH_KEYS)

def _truth(gt: dict[str, Any] | None, workload: str, probe: str) -> dict[str, float]:
    """Injected ratios for one workload x probe: ``{workload: {"ncu_over_original": {probe: r}, ...}}``
    (the generator's shape) or ``{workload: {probe: {"ncu_ratio": r, ...}}}``."""
    node = gt.get(workload) if isinstance(gt, dict) else None
    if not isinstance(node, dict):
        return {}
    out: dict[str, float] = {}
    per_probe = node.get(probe) if isinstance(node.get(probe), dict) else {}
    for key, names in _TRUTH_KEYS.items():
        for name in names:
            by_probe = node.get(name)
            if isinstance(by_probe, dict) and probe in by_probe:
                out[key] = float(by_probe[probe])
                break
            if name in per_probe:
                out[key] = float(per_probe[name])
                break
    return out


@dataclass
class Workloads:
    """Fig. 12's inputs read: each workload's times table (:func:`.inputs.read_workload_csv`) by name and CSV,
    the workload files missing from a folder, the bundle and its ground truth."""

    tables: list[tuple[str, Path, pd.DataFrame]]
    missing: list[str]
    bundle: Bundle
    ground_truth: Any


PARTS = ("epilogue", "kernel", "prologue")  # stacking order, bottom first: the paper's (epilogue at the foot)


def truth_by_key(gt: dict[str, Any] | None, workloads: list[tuple[str, list[str]]]) -> dict[str, float]:
    """The ground truth of every ``<workload>.<probe>.<key>`` summary key that has one."""
    return {f"{w}.{probe}.{k}": v for w, probes in workloads for probe in probes
            for k, v in _truth(gt, w, probe).items()}


def compute(w: Workloads) -> Result:
    """The section's ``compute``: each workload's ratios, the summary numbers (the two bars' tops and the
    Neutrino bar's segments per workload x probe), the table and the artifact's text."""
    columns = [(name, path, df["probe"].tolist(), {c: df[c].to_numpy(dtype=np.float64) for c in TIME_COLUMNS})
               for name, path, df in w.tables]
    panels = [(name, probes, ratio_columns(times)) for name, _, probes, times in columns]
    numbers: dict[str, float] = {}
    rows, warnings = [], []
    for (name, path, probes, times), (_, _, r) in zip(columns, panels, strict=True):
        for i, probe in enumerate(probes):
            numbers.update({f"{name}.{probe}.{key}": float(r[key][i]) for key in SUMMARY_KEYS})
            rows.append({"workload": name, "probe": probe, **{c: times[c][i] for c in TIME_COLUMNS},
                         **{c: v[i] for c, v in r.items() if not c.endswith("_height")}})
            if (over := r["parts_over_total"][i]) > 1 + SUM_TOLERANCE:
                warnings.append(f"{path}: probe {probe}: prologue+kernel+epilogue is {over:.3f} x the neutrino time")
    truth = truth_by_key(w.ground_truth, [(name, probes) for name, probes, _ in panels])
    df = pd.DataFrame(rows)
    synthetic = w.bundle.synthetic
    data = {"paper_ref": PAPER_REF, "bundle_kind": w.bundle.kind, "synthetic": synthetic,
            "inputs": [{"workload": n, "csv": str(p)} for n, p, _ in w.tables], "missing": w.missing,
            "warnings": warnings, "rows": df.to_dict(orient="records"), "summary": None}
    return Result(files={SECTION: df}, numbers=numbers, truth=truth, units=dict.fromkeys(SUMMARY_KEYS, "x"),
                  data=data, lines=_lines(panels, numbers, truth, warnings, w.missing, synthetic),
                  done="wrote {figure} and one figure per workload", input=w.tables[0][1],
                  plots={"panels": panels, "synthetic": synthetic})


def _lines(panels: list[tuple[str, list[str], dict[str, np.ndarray]]], numbers: dict[str, float],
           truth: dict[str, float], warnings: list[str], missing: list[str], synthetic: bool | None) -> list[str]:
    """The command's text up to the figures' names (the artifact's result, printed first)."""
    mark = " [SYNTHETIC sample data]" if synthetic else ""
    lines = [f"{PAPER_REF}: exposed latency (time / original){mark}"]
    rows = []
    for name, probes, r in panels:
        for i, probe in enumerate(probes):
            ncu = r["ncu_ratio"][i]
            rows.append([name, probe, "n/a" if np.isnan(ncu) else f"{ncu:.2f}x", f"{r['neutrino_ratio'][i]:.2f}x",
                         *(f"{r[f'{part}_share'][i]:.1%}" for part in PARTS)])
    lines.append(text_table(["workload", "probe", "ncu", "neutrino", *(f"{p} share" for p in PARTS)], rows))
    unmeasured = [k for k, v in numbers.items() if not math.isfinite(v)]
    if unmeasured:
        lines.append(f"{len(unmeasured)} ratio(s) without a value (not measured): {', '.join(unmeasured[:6])}"
                     + (f" (+{len(unmeasured) - 6} more)" if len(unmeasured) > 6 else ""))
    with_truth = [(numbers[k], float(t)) for k, t in truth.items() if t is not None and math.isfinite(numbers[k])]
    if with_truth:
        err = max(abs(v - t) / t for v, t in with_truth)
        lines.append(f"ground truth: {len(with_truth)} ratios and segments, largest relative deviation {err:.2%}")
    lines += [f"warning: {w}" for w in warnings]
    if missing:
        lines.append("missing inputs (the rest is reported):")
        lines += [f"  {m}" for m in missing]
    return lines


def figures(result: Result) -> list[Figure]:
    """The section's ``figures``: the combined figure, then one per workload (its ratio columns and probes)."""
    panels, synthetic = result.plots["panels"], result.plots["synthetic"]
    arrays = {f"{i}.{c}": v for i, (_, _, r) in enumerate(panels) for c, v in r.items()}
    jobs = [Figure(SECTION, "figures:combined_figure", arrays,
                   {"synthetic": synthetic, "panels": [{"name": n, "probes": p} for n, p, _ in panels]})]
    jobs += [Figure(f"{SECTION}_{name}", "figures:workload_figure", r,
                    {"synthetic": synthetic, "name": name, "probes": probes}) for name, probes, r in panels]
    return jobs
