"""Fig. 12's computations: per-workload times in, ratios to the original out (no I/O, no plots)."""

from __future__ import annotations

from typing import Any

import pandas as pd

PAPER_REF = "Fig. 12"

WORKLOADS = ("attn", "gmm", "conv", "gemm")

COLUMNS = ("probe", "original", "ncu", "neutrino", "prologue", "kernel", "epilogue")

#: Columns that may be left empty: the dynamic collector leaves ``ncu`` blank when Nsight Compute is absent.
OPTIONAL_COLUMNS = ("ncu",)

TIME_COLUMNS = COLUMNS[1:]

UNATTRIBUTED_MIN = 0.005

# Parts may exceed the total by rounding of the logged milliseconds; beyond this it is flagged.
SUM_TOLERANCE = 0.02

def ratios(df: pd.DataFrame) -> pd.DataFrame:
    """Per probe: ncu and Neutrino ratios to the original, part shares and stacked segment heights."""
    r = pd.DataFrame({"probe": df["probe"]})
    r["ncu_ratio"] = df["ncu"] / df["original"]
    r["neutrino_ratio"] = df["neutrino"] / df["original"]
    for part in PARTS:
        r[f"{part}_share"] = df[part] / df["neutrino"]
    share_sum = sum(r[f"{p}_share"] for p in PARTS)
    r["unattributed_share"] = (1.0 - share_sum).clip(lower=0.0)
    for part in (*PARTS, "unattributed"):
        r[f"{part}_height"] = r[f"{part}_share"] * r["neutrino_ratio"]
    r["ncu_over_neutrino"] = df["ncu"] / df["neutrino"]
    r["parts_over_total"] = share_sum
    return r

def _has_unattributed(r: pd.DataFrame) -> bool:
    # Below half a percent it is rounding of the logged milliseconds, not a visible segment.
    return bool((r["unattributed_share"] > UNATTRIBUTED_MIN).any())

# Ground-truth field names: the sample generator's first, then the plain ratio names.
_TRUTH_KEYS = {"ncu_ratio": ("ncu_over_original", "ncu_ratio"),
               "neutrino_ratio": ("neutrino_over_original", "neutrino_ratio")}

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


PARTS = ("epilogue", "kernel", "prologue")  # stacking order, bottom first: the paper's (epilogue at the foot)
