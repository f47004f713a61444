"""Fig. 12's computations: per-workload times in, ratios to the original out (no I/O, no plots; numpy only,
pandas imported by :func:`ratios` alone)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pandas is imported where a table is built, after the command's line
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
    """:func:`ratio_columns` of a workload table (:func:`.pipeline.read_workload_csv`), with its probes."""
    import pandas as pd

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


PARTS = ("epilogue", "kernel", "prologue")  # stacking order, bottom first: the paper's (epilogue at the foot)
