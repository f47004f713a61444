"""Fig. 12's inputs: one CSV per workload (``attn``, ``gmm``, ``conv``, ``gemm``) with columns
``probe, original, ncu, neutrino, prologue, kernel, epilogue`` (times of one launch, any one unit), read
and checked (:func:`load`, the section's ``load``). Any problem is one :class:`InputError` line naming
the file, row and column; every input is read before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from neutrino_ae.errors import InputError
from neutrino_ae.formats.inputs import MiB, check_input
from neutrino_ae.report.command.paths import missing_reason
from neutrino_ae.report.section.driver import Source

from .analysis import COLUMNS, OPTIONAL_COLUMNS, TIME_COLUMNS, WORKLOADS, Workloads

MAX_CSV_BYTES = 16 * MiB

#: What no probe name holds: a NUL, an escape or another control character.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


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


def load(source: Source) -> Workloads:
    """The section's ``load``: the CSVs in ``source`` (folders holding ``{attn,gmm,conv,gemm}.csv``, or files)."""
    found, missing = resolve_inputs(source.paths)
    if not found:
        first = source.paths[0] if source.paths else None
        raise InputError(first, "no workload CSV found (" + "; ".join(missing) + ")")
    tables = [(name, path, read_workload_csv(path)) for name, path in found]
    return Workloads(tables, missing, source.bundle, source.bundle.ground_truth("exposed_latency"))
