"""Table 2's computations: per-cell measurements in; tables, summary rows, truth checks out (no I/O, no plots;
numpy only, pandas imported by the table builders alone)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from neutrino_ae.formats.kernelinfo import FEWER_REGISTERS

if TYPE_CHECKING:  # pandas is imported where a table is built, after the command's line
    import pandas as pd

GROUPS = ("cutlass_op", "triton_op", "pytorch_op")

GROUP_LABELS = {"cutlass_op": "CUTLASS", "triton_op": "Triton", "pytorch_op": "PyTorch"}

PROBE_ORDER = ("block_sched", "gmem_bytes", "tensorop_count", "dmat")

# Paper row order; kernels not listed follow alphabetically.
KERNEL_ORDER = {
    "cutlass_op": ("gemm", "streamk", "gemm-streamk", "gemm_streamk", "conv"),
    "triton_op": ("gmm", "attn"),
    "pytorch_op": ("norm", "batchnorm", "layernorm", "softmax", "sum", "pool", "maxpool", "avgpool",
                   "embedding", "gather"),
}

KERNEL_LABELS = {
    "gemm": "GEMM", "streamk": "Stream-K GEMM", "gemm-streamk": "Stream-K GEMM", "gemm_streamk": "Stream-K GEMM",
    "conv": "Conv2D", "gmm": "Group GEMM", "attn": "FlashAttn-2", "norm": "Batch/LayerNorm",
    "batchnorm": "BatchNorm", "layernorm": "LayerNorm", "softmax": "Softmax", "sum": "Sum", "pool": "Max/AvgPool",
    "maxpool": "MaxPool", "avgpool": "AvgPool", "embedding": "Embedding", "gather": "Gather",
}

#: The mark on a negative ``+regs`` value wherever Table 2 is shown (text, HTML, figure), and its legend.
FEWER_MARK = "\u2020"
FEWER_LEGEND = f"{FEWER_MARK} {FEWER_REGISTERS} than the pruned one (ptxas allocates each build on its own)"


def regs_label(extra: int) -> str:
    """A ``+regs`` value as Table 2 shows it: signed, with :data:`FEWER_MARK` when negative."""
    return f"{extra:+d}" + (FEWER_MARK if extra < 0 else "")


#: A cell whose probe the engine could not build (the kernel then runs unprobed: nothing to measure).
NOT_BUILT = "probe not built"


@dataclass
class Cell:
    """One kernel x probe measurement (one row of the long table)."""

    group: str
    kernel: str
    probe: str
    path: str
    trace_dirs: list[str] = field(default_factory=list)
    launches: int = 0
    used: int = 0
    slowdown: float | None = None
    impact_min: float | None = None
    impact_max: float | None = None
    failed: list[dict[str, Any]] = field(default_factory=list)
    no_benchmark: int = 0
    registers: list[dict[str, Any]] = field(default_factory=list)
    extra_regs: int | None = None  # signed probed - pruned (the largest over the cell's kernels)
    registers_note: str | None = None  # FEWER_REGISTERS when extra_regs < 0
    problems: list[str] = field(default_factory=list)
    ground_truth: dict[str, Any] | None = None
    not_built: str | None = None  # the probe engine could not build this probe: the kernel ran unprobed (why)

def _order(names: Sequence[str], preferred: Sequence[str]) -> list[str]:
    rank = {n: i for i, n in enumerate(preferred)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))

def _ordered_probes(cells: Sequence[Cell]) -> list[str]:
    return _order(sorted({c.probe for c in cells}), PROBE_ORDER)

def long_table(cells: Sequence[Cell]) -> pd.DataFrame:
    """One row per kernel x probe (the ``_long`` table)."""
    import pandas as pd

    rows = []
    for c in cells:
        regs = c.registers
        rows.append({
            "group": GROUP_LABELS.get(c.group, c.group), "kernel": c.kernel, "probe": c.probe,
            "launches": c.launches, "used": c.used, "failed": len(c.failed), "no_benchmark": c.no_benchmark,
            "slowdown": np.nan if c.slowdown is None else c.slowdown,
            "impact_min": np.nan if c.impact_min is None else c.impact_min,
            "impact_max": np.nan if c.impact_max is None else c.impact_max,
            "pruned_regs": regs[0]["pruned"] if len(regs) == 1 else np.nan,
            "probed_regs": regs[0]["probed"] if len(regs) == 1 else np.nan,
            "extra_regs": np.nan if c.extra_regs is None else c.extra_regs,
            "registers_note": c.registers_note or "",
            "kernels_with_regs": len(regs),
            "not_built": c.not_built or "",
            "problems": "; ".join(c.problems),
        })
    return pd.DataFrame(rows)

def wide_rows(cells: Sequence[Cell]) -> tuple[list[str], list[dict[str, Any]]]:
    """Table 2 layout: one row per kernel, ``<probe> slowdown`` and ``<probe> +regs`` (signed) per
    probe, and ``notes``: ``"<probe> <+regs>: probed build allocated fewer registers"`` for each
    negative ``+regs`` of the row; the columns, and the rows (a probe not measured for a kernel is absent
    from its row)."""
    probes = _ordered_probes(cells)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    notes: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for c in cells:
        row = rows.setdefault((c.group, c.kernel), {"group": GROUP_LABELS.get(c.group, c.group),
                                                    "kernel": KERNEL_LABELS.get(c.kernel, c.kernel)})
        row[f"{c.probe} slowdown"] = np.nan if c.slowdown is None else c.slowdown
        row[f"{c.probe} +regs"] = np.nan if c.extra_regs is None else c.extra_regs
        if c.registers_note and c.extra_regs is not None:
            notes.setdefault((c.group, c.kernel), []).append(
                (probes.index(c.probe), f"{c.probe} {c.extra_regs:+d}: {c.registers_note}"))
        if c.not_built:
            notes.setdefault((c.group, c.kernel), []).append(
                (probes.index(c.probe), f"{c.probe}: {NOT_BUILT}, {c.not_built}"))
    for key, row in rows.items():
        row["notes"] = "; ".join(text for _, text in sorted(notes.get(key, [])))
    cols = ["group", "kernel"] + [f"{p} {k}" for p in probes for k in ("slowdown", "+regs")] + ["notes"]
    return cols, list(rows.values())


def wide_table(cells: Sequence[Cell]) -> pd.DataFrame:
    """:func:`wide_rows` as Table 2's DataFrame (missing cells NaN)."""
    import pandas as pd

    cols, rows = wide_rows(cells)
    return pd.DataFrame(rows).reindex(columns=cols)


def text_rows(cells: Sequence[Cell]) -> tuple[list[str], list[list[str]]]:
    """Table 2 as the command prints it: :func:`wide_rows` without the notes (the text marks a negative
    ``+regs`` in the cell and explains it below), ``1.23x`` and ``+3`` (``-`` where not measured)."""
    cols, rows = wide_rows(cells)
    cols = [c for c in cols if c != "notes"]

    def shown(col: str, v: Any) -> str:
        missing = v is None or (isinstance(v, float) and np.isnan(v))
        if col.endswith("slowdown"):
            return "-" if missing else f"{v:.2f}x"
        if col.endswith("+regs"):
            return "-" if missing else regs_label(int(v))
        return "-" if missing else str(v)

    return cols, [[shown(c, row.get(c)) for c in cols] for row in rows]

def _truth(gt: dict[str, Any] | None, group: str, kernel: str, probe: str) -> dict[str, Any] | None:
    """The sample generator's injected values for one cell (its ``rows`` are per compiled kernel).

    A test folder can hold several kernels (``norm``: two BatchNorm kernels and LayerNorm) whose
    launches the event.log does not name, so the measured cell is over all of them: the truth is a
    single slowdown only for single-kernel tests, otherwise the range of the kernels' slowdowns; the
    extra-register truth is the largest, like the table.
    """
    rows = gt.get("rows") if isinstance(gt, dict) else None
    if not isinstance(rows, list):
        return None
    mine = [r for r in rows if isinstance(r, dict) and r.get("probe") == probe
            and r.get("suite", r.get("group")) == group and r.get("test", r.get("kernel")) == kernel]
    if not mine:
        return None
    slow = [float(r["model_slowdown"]) for r in mine if r.get("model_slowdown") is not None]
    extra = [int(r["extra_regs"]) for r in mine if r.get("extra_regs") is not None]
    # The table's slowdown is a median over the cell's launches: of several kernels, the median of their
    # noise-free slowdowns each repeated once per launch that ran (a single kernel's: its own).
    per_launch = [float(r["model_slowdown"]) for r in mine if r.get("model_slowdown") is not None
                  for _ in range(max(int(r.get("launches", 1)) - int(r.get("failed_launches", 0)), 0))]
    return {
        "kernels": len(mine),
        "slowdown": slow[0] if len(mine) == 1 and slow else None,
        "slowdown_range": [min(slow), max(slow)] if slow else None,
        "launch_median_slowdown": float(np.median(per_launch)) if per_launch else None,
        "extra_registers": max(extra) if extra else None,
        "failed_launches": sum(int(r.get("failed_launches", 0)) for r in mine),
    }

def _truth_value(t: dict[str, Any] | None, name: str) -> Any:
    return t.get(name) if t else None

def _truth_lines(cells: Sequence[Cell]) -> list[str]:
    """Measured vs injected (sample bundles): slowdown deviation, range hits, register matches."""
    single = [(c, c.ground_truth["slowdown"]) for c in cells
              if c.ground_truth and c.ground_truth["slowdown"] is not None and c.slowdown is not None]
    multi = [(c, c.ground_truth["slowdown_range"]) for c in cells
             if c.ground_truth and c.ground_truth["slowdown"] is None and c.ground_truth["slowdown_range"]
             and c.slowdown is not None]
    regs = [(c, c.ground_truth["extra_registers"]) for c in cells
            if c.ground_truth and c.ground_truth["extra_registers"] is not None and c.extra_regs is not None]
    lines = []
    if single:
        err = [abs(c.slowdown - t) / t for c, t in single]
        lines.append(f"ground truth: slowdown of {len(single)} single-kernel cells within {max(err):.1%} of the "
                     f"injected model (median deviation {float(np.median(err)):.1%})")
    if multi:
        # Launch-to-launch noise can put the median a little outside the noise-free per-kernel range.
        inside = sum(lo * 0.97 <= c.slowdown <= hi * 1.03 for c, (lo, hi) in multi)
        lines.append(f"ground truth: {inside}/{len(multi)} multi-kernel cells inside the injected per-kernel "
                     "slowdown range (+-3%)")
    if regs:
        same = sum(c.extra_regs == t for c, t in regs)
        lines.append(f"ground truth: extra registers equal the injected value in {same}/{len(regs)} cells")
    return lines


PAPER_REF = "Table 2"
SECTION = "kernel_overhead"
