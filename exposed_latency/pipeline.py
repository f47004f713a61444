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

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from neutrino_ae.bundle.context import Bundle, bundle_of
from neutrino_ae.errors import InputError
from neutrino_ae.formats.inputs import MiB, check_input
from neutrino_ae.report import style
from neutrino_ae.report.paths import missing_reason
from neutrino_ae.report.results import SectionResult, write_results
from neutrino_ae.report.summary import summary_row

from .analysis import (  # noqa: F401  (re-exported for callers)
    _TRUTH_KEYS,
    COLUMNS,
    OPTIONAL_COLUMNS,
    PAPER_REF,
    SUM_TOLERANCE,
    TIME_COLUMNS,
    UNATTRIBUTED_MIN,
    WORKLOADS,
    _has_unattributed,
    _truth,
    ratios,
)
from .figures import (  # noqa: F401  (re-exported for callers)
    BREAK_FACTOR,
    PART_COLORS,
    PARTS,
    WORKLOAD_LABELS,
    _draw_panel,
    _legend_handles,
    _reserve_footer,
    draw_combined,
    draw_workload,
)

SECTION = "exposed_latency"
MAX_CSV_BYTES = 16 * MiB


def read_workload_csv(path: str | Path) -> pd.DataFrame:
    """Read and validate one workload CSV; any problem is an :class:`InputError` naming file and column."""
    # A regular file of sensible size (one row per probe): a FIFO or a huge sparse file is refused
    # before pandas would read it whole.
    path = check_input(path, "CSV", MAX_CSV_BYTES)
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
    seen: dict[str, int] = {}
    for i, probe in enumerate(out["probe"]):
        if not probe:
            raise InputError(path, f"row {i + 2}: empty value in column 'probe'")
        if probe in seen:
            raise InputError(path, f"probe {probe!r} is in rows {seen[probe]} and {i + 2}: one row per probe")
        seen[probe] = i + 2
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
        positive = col in ("original", "neutrino", "kernel")  # a kernel never takes no time
        bad = values <= 0 if positive else values < 0
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            need = "positive" if positive else "non-negative"
            raise InputError(path, f"column '{col}' row {i + 2} (probe {out['probe'].iloc[i]}): "
                                   f"{values.iloc[i]} is not {need}")
        out[col] = values.astype(float)
    return out


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


def analyze(inputs: Sequence[str | Path], out_dir: str | Path, bundle: Bundle | None = None) -> SectionResult:
    """Fig. 12 from workload CSVs (or folders holding ``{attn,gmm,conv,gemm}.csv``). ``bundle``: the run's
    bundle; without it (a command line) each CSV's own, found from its path."""
    out = Path(out_dir)
    found, missing = resolve_inputs(inputs)
    if not found:
        raise InputError(inputs[0] if inputs else None, "no workload CSV found (" + "; ".join(missing) + ")")
    # Every input is read and checked before anything is written: a bad CSV leaves no figure behind.
    tables = [(name, path, read_workload_csv(path)) for name, path in found]
    owners = [bundle or bundle_of(p) for _, p in found]  # the bundle of each CSV
    kinds = {b.synthetic for b in owners}
    synthetic = True if True in kinds else None if None in kinds else False
    gt = owners[0].ground_truth(SECTION)
    panels: list[tuple[str, pd.DataFrame]] = []
    rows = []
    files: dict[str, Path] = {}
    summary = []
    warnings = []
    for name, path, data in tables:
        r = ratios(data)
        panels.append((name, r))
        for i, row in r.iterrows():
            rows.append({"workload": name, "probe": row["probe"], **{c: data.at[i, c] for c in TIME_COLUMNS},
                         **{c: row[c] for c in r.columns if c != "probe" and not c.endswith("_height")}})
            t = _truth(gt, name, row["probe"])
            for key in ("ncu_ratio", "neutrino_ratio"):
                summary.append(summary_row(SECTION, f"{name}.{row['probe']}.{key}", float(row[key]), "x", PAPER_REF,
                                           owners[0].kind, t.get(key)))
            if row["parts_over_total"] > 1 + SUM_TOLERANCE:
                warnings.append(f"{path}: probe {row['probe']}: prologue+kernel+epilogue is "
                                f"{row['parts_over_total']:.3f} x the neutrino time")
        fig = draw_workload(name, r, synthetic)
        files.update(style.save_figure_files(fig, out, f"{SECTION}_{name}", key=f"figure_{name}"))
    fig = draw_combined(panels, synthetic)
    files = {**style.save_figure_files(fig, out, SECTION, key="figure"), **files}
    df = pd.DataFrame(rows)
    payload = {
        "paper_ref": PAPER_REF,
        "bundle_kind": owners[0].kind,
        "synthetic": synthetic,
        "inputs": [{"workload": n, "csv": str(p)} for n, p in found],
        "missing": missing,
        "warnings": warnings,
        "rows": df.to_dict(orient="records"),
        "summary": summary,
    }
    files.update(write_results(out, SECTION, payload, input_path=found[0][1], tables={SECTION: df},
                               bundle=owners[0]))
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


def analyze_bundle(bundle: Bundle, out_dir: str | Path) -> SectionResult:
    """The section entry point: Fig. 12 from the run's bundle."""
    return analyze([bundle.path("exposed_latency")], out_dir, bundle=bundle)

