"""Fig. 12: exposed latency of Nsight Compute vs. Neutrino, normalised to the un-profiled kernel.

Input: one CSV per workload (``attn``, ``gmm``, ``conv``, ``gemm``) with columns
``probe, original, ncu, neutrino, prologue, kernel, epilogue`` (times of one launch, any one unit).

Per workload x probe the figure shows ``ncu / original`` and ``neutrino / original``; the Neutrino
bar is split into its kernel, epilogue and prologue parts: each part's share of the Neutrino time
(``part / neutrino``) scaled to the bar's height (``share * neutrino / original``). When the parts
do not add up to the Neutrino time the rest is drawn as a hatched "unattributed" segment, so the
bar top is always the measured ratio.

    python exposed_latency/exposed_latency.py [<dir or csv ...>] [--out DIR] [--json]

The numbers and the printed text are :mod:`.fast` (numpy only); this module adds the table files, the
results JSON and the figures (drawn here, or collected from the command line's figure process), and reads a
workload CSV out of the plain form (:func:`read_workload_csv`, pandas).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from neutrino_ae.bundle.context import Bundle
from neutrino_ae.errors import InputError
from neutrino_ae.formats.inputs import check_input
from neutrino_ae.report.figure_process import FigureProcess, draw
from neutrino_ae.report.results import SectionResult, write_results

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
from .fast import CONTROL, MAX_CSV_BYTES, SECTION, Measured, measure, resolve_inputs  # noqa: F401  (re-exported for callers)
from .figure_inputs import figure_jobs


def draw_workload(name: str, r: pd.DataFrame, synthetic: bool):
    """Fig. 12 of one workload (:func:`.figures.draw_workload`; matplotlib imported on the call)."""
    from .figures import draw_workload as draw_one

    return draw_one(name, r, synthetic)


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
        if (bad := CONTROL.search(probe)) is not None:
            # A NUL or an escape in a name makes it another probe: a claim would leave its row out.
            raise InputError(path, f"column 'probe' row {i + 2}: control character {bad.group()!r} in {probe!r}; "
                                   "a probe name is printable text")
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


def analyze(inputs: Sequence[str | Path], out_dir: str | Path, bundle: Bundle | None = None,
            measured: Measured | None = None, figures: FigureProcess | None = None) -> SectionResult:
    """Fig. 12 from workload CSVs (or folders holding ``{attn,gmm,conv,gemm}.csv``). ``bundle``: the run's
    bundle; without it (a command line) each CSV's own, found from its path. ``measured``: :func:`.fast.measure`
    of them when done already; ``figures``: the command line's figure process, sent
    :func:`.figure_inputs.figure_jobs` (without it the figures are drawn here)."""
    m = measure(inputs, bundle) if measured is None else measured
    out = Path(out_dir)
    jobs = figure_jobs(m, out)
    drawn = None
    if figures is None:
        drawn = {k: v for job in jobs for k, v in draw(job).items()}
    rows = []
    for w in m.workloads:
        for i, probe in enumerate(w.probes):
            rows.append({"workload": w.name, "probe": probe, **{c: w.times[c][i] for c in TIME_COLUMNS},
                         **{c: v[i] for c, v in w.ratios.items() if not c.endswith("_height")}})
    df = pd.DataFrame(rows)
    owner = m.owners[0]
    payload = {
        "paper_ref": PAPER_REF,
        "bundle_kind": owner.kind,
        "synthetic": m.synthetic,
        "inputs": [{"workload": n, "csv": str(p)} for n, p in m.found],
        "missing": m.missing,
        "warnings": m.warnings,
        "rows": df.to_dict(orient="records"),
        "summary": m.summary,
    }
    written = write_results(out, SECTION, payload, input_path=m.found[0][1], tables={SECTION: df}, bundle=owner)
    pics = figures.join() if drawn is None else drawn
    files: dict[str, Path] = {}
    for job in jobs:  # the combined figure first, under "figure"; each workload's under "figure_<name>"
        key = "figure" if job.stem == SECTION else f"figure_{job.stem[len(SECTION) + 1:]}"
        mine = [p for name, p in pics.items() if name.startswith(f"{job.stem}.")]
        files.update({key: mine[0], **{f"{key}.{p.suffix[1:]}": p for p in mine[1:]}})
    files.update(written)
    text = "\n".join([*m.lines(), f"wrote {files['figure']} and one figure per workload"])
    return SectionResult(SECTION, payload, files, {SECTION: df}, m.summary, text)


def analyze_bundle(bundle: Bundle, out_dir: str | Path) -> SectionResult:
    """The section entry point: Fig. 12 from the run's bundle."""
    return analyze([bundle.path("exposed_latency")], out_dir, bundle=bundle)
