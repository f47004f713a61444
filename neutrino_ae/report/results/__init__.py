"""Results files: ``<section>.json`` plus tables as CSV/Markdown, written atomically, with provenance."""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from neutrino_ae.atomic import atomic_open, write_json, write_text
from neutrino_ae.bundle.context import Bundle, bundle_of
from neutrino_ae.escape import csv_cell
from neutrino_ae.report.results.columns import Columns, counts_with_gaps, markdown_table

if TYPE_CHECKING:  # pandas is imported where a table is written: a command's first line comes before it
    import pandas as pd

#: Rows of a table shown in its Markdown copy (the CSV always has them all): a per-warp or per-step
#: table of a large trace has millions of rows, which no one reads as Markdown.
MARKDOWN_MAX_ROWS = 200


def write_results(out_dir: str | os.PathLike[str], section: str, payload: dict[str, Any],
                  input_path: str | os.PathLike[str] | None = None,
                  tables: Mapping[str, pd.DataFrame | Columns] | None = None, bundle: Bundle | None = None
                  ) -> dict[str, Path]:
    """Write ``<out_dir>/<section>.json`` (payload + provenance) and each table as CSV and Markdown (the
    Markdown copy holds the first :data:`MARKDOWN_MAX_ROWS` rows; the CSV all of them). A table is a
    DataFrame or :class:`neutrino_ae.report.results.columns.Columns` (the same files, without pandas).

    The provenance is ``bundle``'s (the run's bundle), or that of the bundle holding ``input_path``
    when no bundle is given (a per-figure command line); neither given: no provenance.

    Returns the written paths keyed by ``"json"`` and ``"<table>.csv"`` / ``"<table>.md"``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    doc = dict(payload)
    doc.setdefault("section", section)
    if bundle is None and input_path is not None:
        bundle = bundle_of(input_path)
    if bundle is not None:
        doc["provenance"] = bundle.provenance(input_path)
        doc.setdefault("bundle_kind", doc["provenance"]["bundle_kind"])
        doc.setdefault("synthetic", doc["provenance"]["synthetic"])
        if "warning" in doc["provenance"]:
            doc.setdefault("provenance_warning", doc["provenance"]["warning"])
        collected = bundle.collected(section)
        if collected.get("workloads"):  # a dynamic tree: which workload family, and its stand-ins
            doc.setdefault("workloads", {k: collected[k] for k in ("workloads", "stand_ins") if k in collected})
    doc.setdefault("generated_at", _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"))
    for name, table in (tables or {}).items():
        csv_path = out / f"{name}.csv"
        if isinstance(table, Columns):  # written without pandas, byte for byte as the DataFrame would be
            write_text(csv_path, table.csv_text())
            md = table.markdown(MARKDOWN_MAX_ROWS)
        else:
            table = integer_columns(table)
            with atomic_open(csv_path, "w", encoding="utf-8", newline="") as fh:
                csv_safe(table).to_csv(fh, index=False)
            md = dataframe_to_markdown(table.head(MARKDOWN_MAX_ROWS))
        written[f"{name}.csv"] = csv_path
        if len(table) > MARKDOWN_MAX_ROWS:
            md += f"\n\n_First {MARKDOWN_MAX_ROWS:,} of {len(table):,} rows; the whole table is `{csv_path.name}`._"
        written[f"{name}.md"] = write_text(out / f"{name}.md", md + "\n")
    written["json"] = write_json(out / f"{section}.json", doc)
    return written


def integer_columns(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each float column that holds missing values and otherwise only whole numbers as
    pandas' nullable integers: pandas widens a column of counts to floats as soon as one cell is
    missing (``168`` becomes ``168.0``); the files must show the counts as the analysis made them
    (:func:`neutrino_ae.report.results.columns.counts_with_gaps`, the rule :class:`Columns` writes by too)."""
    fix = {col: "Int64" for col in df.columns if df[col].dtype.kind == "f"
           and counts_with_gaps(df[col].to_numpy(dtype=float, na_value=np.nan))}
    return df.astype(fix) if fix else df


def csv_safe(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its text cells and column names as a CSV file shows them (:func:`neutrino_ae.escape.csv_cell`:
    no cell a spreadsheet runs as a formula); numeric columns as they are."""
    from pandas.api.types import is_object_dtype, is_string_dtype

    out = df.copy(deep=False)
    for i, dtype in enumerate(df.dtypes):
        if is_object_dtype(dtype) or is_string_dtype(dtype):
            out.isetitem(i, df.iloc[:, i].map(csv_cell))
    out.columns = [csv_cell(c) for c in df.columns]
    return out


def dataframe_to_markdown(df: pd.DataFrame, floatfmt: str = ".3g") -> str:
    """A GitHub-flavoured Markdown table (no ``tabulate`` dependency)."""
    return markdown_table(list(df.columns), df.itertuples(index=False), floatfmt)


@dataclass
class SectionResult:
    """What every per-figure analysis returns.

    ``data`` is what goes into ``<section>.json``; ``summary`` rows feed the notebooks'
    ``summary.json`` (keys: ``key``, ``paper_ref``, ``value``, ``unit``, ``ground_truth``; the
    section and bundle kind are filled in by the caller); ``text`` is the short human summary the
    CLI prints; ``files`` maps names to written paths (figures first).
    """

    section: str
    data: dict[str, Any]
    files: dict[str, Path] = field(default_factory=dict)
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)  # a FrameMap where built as Columns
    summary: list[dict[str, Any]] = field(default_factory=list)
    text: str = ""

    @property
    def figures(self) -> list[Path]:
        return [p for p in self.files.values() if p.suffix == ".png"]
