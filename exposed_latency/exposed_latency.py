"""Fig. 12: exposed latency of Nsight Compute vs. Neutrino, normalised to the un-profiled kernel.

Input: one CSV per workload (``attn``, ``gmm``, ``conv``, ``gemm``) with columns
``probe, original, ncu, neutrino, prologue, kernel, epilogue`` (times of one launch, any one unit).

Per workload x probe the figure shows ``ncu / original`` and ``neutrino / original``; the Neutrino
bar is split into its kernel, epilogue and prologue parts: each part's share of the Neutrino time
(``part / neutrino``) scaled to the bar's height (``share * neutrino / original``). When the parts
do not add up to the Neutrino time the rest is drawn as a hatched "unattributed" segment, so the
bar top is always the measured ratio.

    python exposed_latency/exposed_latency.py [<dir or csv ...>] [--out DIR] [--json]
"""

# ruff: noqa: E402  (imports follow the sys.path set-up that lets this file run as a script)
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a script: the repo root (parent of this folder) holds neutrino_ae.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from neutrino_ae.bundle import manifest as bundle
from neutrino_ae.errors import InputError
from neutrino_ae.report import style
from neutrino_ae.report.results import SectionResult, write_results
from neutrino_ae.report.script import add_output_args, emit, run_main

SECTION = "exposed_latency"
PAPER_REF = "Fig. 12"
WORKLOADS = ("attn", "gmm", "conv", "gemm")
WORKLOAD_LABELS = {"attn": "FlashAttn-2 (Triton)", "gmm": "Group GEMM (Triton)", "conv": "Conv2D (CUTLASS)",
                   "gemm": "GEMM (CUTLASS)"}
COLUMNS = ("probe", "original", "ncu", "neutrino", "prologue", "kernel", "epilogue")
#: Columns that may be left empty: the dynamic collector leaves ``ncu`` blank when Nsight Compute is absent.
OPTIONAL_COLUMNS = ("ncu",)
TIME_COLUMNS = COLUMNS[1:]
PARTS = ("kernel", "epilogue", "prologue")  # stacking order, bottom first
PART_COLORS = {"kernel": style.NEUTRINO_KERNEL_COLOR, "epilogue": style.NEUTRINO_EPILOGUE_COLOR,
               "prologue": style.NEUTRINO_PROLOGUE_COLOR}
# NCU bars taller than this many times the largest Neutrino bar are drawn cut (see _draw_panel).
BREAK_FACTOR = 6.0
UNATTRIBUTED_MIN = 0.005
# Parts may exceed the total by rounding of the logged milliseconds; beyond this it is flagged.
SUM_TOLERANCE = 0.02


def read_workload_csv(path: str | Path) -> pd.DataFrame:
    """Read and validate one workload CSV; any problem is an :class:`InputError` naming file and column."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "no such CSV file")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise InputError(path, "empty CSV, expected a header " + ",".join(COLUMNS)) from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(path, f"not a readable CSV ({str(exc).splitlines()[0]})") from None
    df.columns = [str(c).strip() for c in df.columns]
    for col in COLUMNS:
        if col not in df.columns:
            raise InputError(path, f"missing column '{col}' (has: {', '.join(df.columns)})")
    if df.empty:
        raise InputError(path, "no data rows")
    out = pd.DataFrame({"probe": df["probe"].str.strip()})
    for i, probe in enumerate(out["probe"]):
        if not probe:
            raise InputError(path, f"row {i + 2}: empty value in column 'probe'")
    for col in TIME_COLUMNS:
        raw = df[col].str.strip()
        values = pd.to_numeric(raw, errors="coerce")
        invalid = values.isna().to_numpy() | ~np.isfinite(values.to_numpy(dtype=float))
        if col in OPTIONAL_COLUMNS:
            # An empty cell means "not measured" (e.g. no Nsight Compute on the collecting machine).
            invalid &= (raw != "").to_numpy()
        for i in np.flatnonzero(invalid):
            shown = raw.iloc[i]
            what = "empty value" if not shown else f"{shown!r} is not a number"
            raise InputError(path, f"column '{col}' row {i + 2} (probe {out['probe'].iloc[i]}): {what}")
        bad = values < 0 if col not in ("original", "neutrino") else values <= 0
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            need = "positive" if col in ("original", "neutrino") else "non-negative"
            raise InputError(path, f"column '{col}' row {i + 2} (probe {out['probe'].iloc[i]}): "
                                   f"{values.iloc[i]} is not {need}")
        out[col] = values.astype(float)
    return out


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
            raise InputError(p, "no such folder or CSV file")
    return found, missing


def _has_unattributed(r: pd.DataFrame) -> bool:
    # Below half a percent it is rounding of the logged milliseconds, not a visible segment.
    return bool((r["unattributed_share"] > UNATTRIBUTED_MIN).any())


def _draw_panel(ax: Axes, name: str, r: pd.DataFrame, value_fontsize: float = 9.0) -> None:
    """NCU bar and stacked Neutrino bar per probe, labelled ``1.23x``.

    When Nsight Compute is far slower than Neutrino (e.g. 200x vs 9x), a linear axis would flatten
    the Neutrino bars and hide their split, so the axis is cut at ``BREAK_FACTOR`` times the
    largest Neutrino bar: taller NCU bars are drawn clipped, with a white break mark and their
    true value written inside.
    """
    x = np.arange(len(r))
    width = 0.36
    ncu_vals = r["ncu_ratio"].to_numpy()
    stacked = sum(r[f"{p}_height"].to_numpy() for p in (*PARTS, "unattributed"))
    neutrino_top = float(np.nanmax(np.r_[stacked, r["neutrino_ratio"], 1.0]))
    measured = ~np.isnan(ncu_vals)
    ncu_top = float(ncu_vals[measured].max()) if measured.any() else 0.0
    cut = ncu_top > BREAK_FACTOR * neutrino_top
    ylim = neutrino_top * 1.6 if cut else max(ncu_top, neutrino_top) * 1.18
    clipped = cut & measured & (np.nan_to_num(ncu_vals) > ylim)
    ncu = ax.bar(x - width / 2, np.minimum(np.nan_to_num(ncu_vals), ylim), width, color=style.NCU_COLOR,
                 label="Nsight Compute")
    ax.bar_label(ncu, labels=["" if c else (f"{v:.2f}x" if m else "n/a")
                              for v, c, m in zip(ncu_vals, clipped, measured, strict=True)],
                 padding=2, fontsize=value_fontsize)
    for xi, v in zip(x[clipped], ncu_vals[clipped], strict=True):
        y = ylim * 0.9
        for dy in (-0.012, 0.012):
            ax.plot([xi - width / 2 - 0.02, xi + 0.02], [y + (dy - 0.02) * ylim, y + (dy + 0.02) * ylim],
                    color="white", linewidth=2.5, clip_on=False, zorder=3)
        ax.text(xi - width / 2, ylim * 0.8, f"{v:.2f}x", rotation=90, ha="center", va="top", color="white",
                fontsize=value_fontsize, fontweight="bold", zorder=4)
    bottom = np.zeros(len(r))
    top = None
    show_un = _has_unattributed(r)
    for part in (*PARTS, "unattributed"):
        h = r[f"{part}_height"].to_numpy()
        if part == "unattributed" and not show_un:
            continue
        kw: dict[str, Any] = ({"color": "white", "edgecolor": "#808080", "hatch": "///"} if part == "unattributed"
                              else {"color": PART_COLORS[part]})
        top = ax.bar(x + width / 2, h, width, bottom=bottom, label=f"Neutrino ({part})", **kw)
        bottom = bottom + h
    # The label shows the measured ratio (the stacked sum can differ from it by rounding).
    ax.bar_label(top, labels=[f"{v:.2f}x" for v in r["neutrino_ratio"]], padding=2, fontsize=value_fontsize)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle=":")
    ax.set_xticks(x, r["probe"], rotation=0 if len(r) <= 4 else 30, ha="center" if len(r) <= 4 else "right")
    ax.set_ylabel("time / original" + (" (axis cut)" if cut else ""))
    ax.set_title(WORKLOAD_LABELS.get(name, name))
    ax.set_ylim(0, ylim)
    ax.grid(axis="x", visible=False)


def _legend_handles(any_unattributed: bool) -> list[Patch]:
    handles = [Patch(color=style.NCU_COLOR, label="Nsight Compute")]
    handles += [Patch(color=PART_COLORS[p], label=f"Neutrino ({p})") for p in PARTS]
    if any_unattributed:
        handles.append(Patch(facecolor="white", edgecolor="#808080", hatch="///", label="Neutrino (unattributed)"))
    return handles


def _reserve_footer(fig) -> None:
    # A strip at the bottom for the synthetic-data footer, which the layout engine does not know about.
    fig.get_layout_engine().set(rect=(0, 0.035, 1, 0.965))


def draw_workload(name: str, r: pd.DataFrame, synthetic: bool):
    with style.style_context():
        fig = style.new_figure(max(7.5, 1.4 * len(r) + 3.5), 4.6, layout="constrained")
        _reserve_footer(fig)
        ax = fig.add_subplot(1, 1, 1)
        _draw_panel(ax, name, r)
        # An axes title (not suptitle) so the legend to the right cannot run into it.
        ax.set_title(f"{PAPER_REF}: exposed latency, {WORKLOAD_LABELS.get(name, name)}")
        fig.legend(handles=_legend_handles(_has_unattributed(r)), loc="outside right upper", frameon=False,
                   fontsize=8.5)
        style.mark_synthetic(fig, synthetic)
    return fig


def draw_combined(panels: Sequence[tuple[str, pd.DataFrame]], synthetic: bool):
    n = len(panels)
    ncols = 2 if n > 2 else n
    nrows = int(np.ceil(n / ncols))
    with style.style_context():
        fig = style.new_figure(5.6 * ncols, 3.9 * nrows + 0.6, layout="constrained")
        _reserve_footer(fig)
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        for ax, (name, r) in zip(axes, panels, strict=False):
            _draw_panel(ax, name, r, value_fontsize=8.5)
        for ax in axes[n:]:
            ax.set_visible(False)
        any_un = any(_has_unattributed(r) for _, r in panels)
        fig.legend(handles=_legend_handles(any_un), loc="outside right upper", frameon=False)
        fig.suptitle(f"{PAPER_REF}: exposed latency, normalised to the un-profiled kernel")
        style.mark_synthetic(fig, synthetic)
    return fig


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


def analyze(inputs: Sequence[str | Path], out_dir: str | Path) -> SectionResult:
    """Fig. 12 from workload CSVs (or folders holding ``{attn,gmm,conv,gemm}.csv``)."""
    out = Path(out_dir)
    found, missing = resolve_inputs(inputs)
    if not found:
        raise InputError(inputs[0] if inputs else None, "no workload CSV found (" + "; ".join(missing) + ")")
    synthetic = any(bundle.is_synthetic(p) for _, p in found)
    gt = bundle.ground_truth(found[0][1], SECTION)
    panels: list[tuple[str, pd.DataFrame]] = []
    rows = []
    files: dict[str, Path] = {}
    summary = []
    warnings = []
    for name, path in found:
        data = read_workload_csv(path)
        r = ratios(data)
        panels.append((name, r))
        for i, row in r.iterrows():
            rows.append({"workload": name, "probe": row["probe"], **{c: data.at[i, c] for c in TIME_COLUMNS},
                         **{c: row[c] for c in r.columns if c != "probe" and not c.endswith("_height")}})
            t = _truth(gt, name, row["probe"])
            for key in ("ncu_ratio", "neutrino_ratio"):
                summary.append({"key": f"{name}.{row['probe']}.{key}", "paper_ref": PAPER_REF,
                                "value": float(row[key]), "unit": "x", "ground_truth": t.get(key)})
            if row["parts_over_total"] > 1 + SUM_TOLERANCE:
                warnings.append(f"{path}: probe {row['probe']}: prologue+kernel+epilogue is "
                                f"{row['parts_over_total']:.3f} x the neutrino time")
        fig = draw_workload(name, r, synthetic)
        png, *rest = style.save_figure(fig, out, f"{SECTION}_{name}")
        files[f"figure_{name}"] = png
        for extra in rest:
            files[f"figure_{name}.{extra.suffix[1:]}"] = extra
    fig = draw_combined(panels, synthetic)
    png, *rest = style.save_figure(fig, out, SECTION)
    files = {"figure": png, **{f"figure.{e.suffix[1:]}": e for e in rest}, **files}
    df = pd.DataFrame(rows)
    payload = {
        "paper_ref": PAPER_REF,
        "bundle_kind": bundle.bundle_kind(found[0][1]),
        "synthetic": synthetic,
        "inputs": [{"workload": n, "csv": str(p)} for n, p in found],
        "missing": missing,
        "warnings": warnings,
        "rows": df.to_dict(orient="records"),
        "summary": summary,
    }
    files.update(write_results(out, SECTION, payload, input_path=found[0][1], tables={SECTION: df}))
    return SectionResult(SECTION, payload, files, {SECTION: df}, summary,
                         _text(df, summary, missing, warnings, synthetic, files["figure"]))


def _text(df: pd.DataFrame, summary: Sequence[dict[str, Any]], missing: Sequence[str], warnings: Sequence[str],
          synthetic: bool, figure: Path) -> str:
    lines = [f"{PAPER_REF}: exposed latency (time / original)" + (" [SYNTHETIC sample data]" if synthetic else "")]
    show = df[["workload", "probe"]].copy()
    show["ncu"] = ["n/a" if pd.isna(v) else f"{v:.2f}x" for v in df["ncu_ratio"]]
    show["neutrino"] = [f"{v:.2f}x" for v in df["neutrino_ratio"]]
    for part in PARTS:
        show[f"{part} share"] = [f"{v:.1%}" for v in df[f"{part}_share"]]
    lines.append(show.to_string(index=False))
    with_truth = [s for s in summary if s["ground_truth"] is not None]
    if with_truth:
        err = max(abs(s["value"] - float(s["ground_truth"])) / float(s["ground_truth"]) for s in with_truth)
        lines.append(f"ground truth: {len(with_truth)} ratios, largest relative deviation {err:.2%}")
    lines += [f"warning: {w}" for w in warnings]
    if missing:
        lines.append("missing inputs (the rest is reported):")
        lines += [f"  {m}" for m in missing]
    lines.append(f"wrote {figure} and one figure per workload")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    default = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=f"{PAPER_REF}: exposed latency of Nsight Compute vs. Neutrino.")
    parser.add_argument("inputs", nargs="*", type=Path, default=[default],
                        help=f"folder with {{attn,gmm,conv,gemm}}.csv, or CSV files (default: {default})")
    add_output_args(parser)
    return parser


def analyze_bundle(bundle_root: str | Path, out_dir: str | Path) -> SectionResult:
    """The section entry point: Fig. 12 from a bundle root."""
    return analyze([Path(bundle_root) / "exposed_latency"], out_dir)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    emit(analyze(args.inputs, args.out), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
