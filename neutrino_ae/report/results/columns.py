"""A results table without pandas: named numpy columns, written as the same CSV and Markdown bytes that
:func:`neutrino_ae.report.results.write_results` writes for the equivalent DataFrame.

A per-figure command's numbers need numpy alone; importing pandas to write a table of a few hundred rows
costs a third of a second, more than the analysis itself at paper size. A section builds its tables as
:class:`Columns` and hands them to ``write_results`` (no pandas), and its :class:`SectionResult` keeps them
in a :class:`FrameMap`, which gives each as a DataFrame (pandas imported then) to whoever reads it: a
notebook, the run record.

Values are formatted as pandas formats them: a list is typed as ``pd.DataFrame`` types it (ints, floats
with None as NaN, all-None or text as objects), a float column with missing values and otherwise whole
numbers is written as integers (:func:`counts_with_gaps`, as ``results.integer_columns`` does), floats in their
shortest round-trip form, a missing value as an empty cell.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from neutrino_ae.escape import csv_cell, md_text

if TYPE_CHECKING:
    import pandas as pd


def as_column(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """A 1-D column, typed as a DataFrame column made from the same values would be: numpy arrays as they
    are; a list of ints as int64, of numbers and Nones as float64 (None: NaN), of bools as bool, anything
    else (text, all None) as objects."""
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(f"a table column is 1-D, not of shape {values.shape}")
        return values
    vals = list(values)
    present = [v for v in vals if v is not None]
    if present and all(isinstance(v, (bool, np.bool_)) for v in present) and len(present) == len(vals):
        return np.array(vals, dtype=bool)
    numbers = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
                  for v in present)
    if present and numbers:
        if len(present) == len(vals) and all(isinstance(v, (int, np.integer)) for v in vals):
            return np.array(vals, dtype=np.int64)
        return np.array([np.nan if v is None else float(v) for v in vals], dtype=np.float64)
    out = np.empty(len(vals), dtype=object)
    out[:] = vals
    return out


class Columns:
    """Named, equally long 1-D columns in order (a table's rows are the columns' positions)."""

    def __init__(self, columns: Mapping[str, Sequence[Any] | np.ndarray]) -> None:
        self._cols = {str(name): as_column(values) for name, values in columns.items()}
        lengths = {c.size for c in self._cols.values()}
        if len(lengths) > 1:
            raise ValueError(f"table columns differ in length: {sorted(lengths)}")
        self._rows = lengths.pop() if lengths else 0

    @property
    def columns(self) -> list[str]:
        return list(self._cols)

    def __len__(self) -> int:
        return self._rows

    def __getitem__(self, name: str) -> np.ndarray:
        return self._cols[name]

    @classmethod
    def concat(cls, tables: Sequence[Columns]) -> Columns:
        """The tables' rows one after the other (same columns, in the first's order), each column promoted
        as ``pd.concat`` promotes it (ints with floats: floats; with text: objects)."""
        if not tables:
            return cls({})
        names = tables[0].columns
        if any(t.columns != names for t in tables[1:]):
            raise ValueError("tables to concatenate have different columns")
        out = {}
        for name in names:
            parts = [t[name] for t in tables]
            out[name] = np.concatenate([p.astype(object) for p in parts]) if any(p.dtype == object for p in parts) \
                else np.concatenate(parts)
        return cls(out)

    def to_frame(self) -> pd.DataFrame:
        """The DataFrame with these columns (pandas is imported here)."""
        import pandas as pd

        return pd.DataFrame(self._cols, columns=self.columns)

    # ----------------------------------------------------------------------------------------- writing

    def _cells(self, rows: int | None = None) -> list[list[Any]]:
        """Each column's values, cut to ``rows``, as what the files show: ints, floats, text or None."""
        n = self._rows if rows is None else min(rows, self._rows)
        return [_cells(col[:n]) for col in self._cols.values()]

    def csv_text(self) -> str:
        """``DataFrame.to_csv(index=False)`` of the table (after ``integer_columns``), without pandas."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow([csv_cell(c) for c in self.columns])
        writer.writerows(zip(*(_csv_strings(c) for c in self._cells()), strict=True) if self._cols else [])
        return buf.getvalue()

    def markdown(self, rows: int | None = None, floatfmt: str = ".3g") -> str:
        """:func:`neutrino_ae.report.results.dataframe_to_markdown` of the table's first ``rows`` rows."""
        cells = self._cells(rows)
        n = len(cells[0]) if cells else 0
        return markdown_table(self.columns, (tuple(c[i] for c in cells) for i in range(n)), floatfmt)


def counts_with_gaps(values: np.ndarray) -> bool:
    """Whether a float column is whole numbers with missing values: counts that pandas widened to floats
    because a cell is missing (``168`` became ``168.0``), which the files show as integers."""
    missing = np.isnan(values)
    present = values[~missing]
    return bool(missing.any()) and bool(present.size) and bool(np.all(present % 1 == 0)) \
        and bool(np.all(np.abs(present) < 2**53))


def _cells(col: np.ndarray) -> list[Any]:
    if col.dtype.kind == "f":
        whole = counts_with_gaps(col)
        return [None if math.isnan(v) else int(v) if whole else v for v in col.tolist()]
    if col.dtype.kind in "iub":
        return col.tolist()
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in col.tolist()]


def _csv_strings(cells: list[Any]) -> list[str]:
    # Text cells escaped for a spreadsheet (csv_cell); numbers are written as numbers.
    return ["" if v is None else repr(v) if isinstance(v, float) else csv_cell(v) if isinstance(v, str) else str(v)
            for v in cells]


def is_missing(value: Any) -> bool:
    """None, a float NaN or pandas' NA (without importing pandas)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return type(value).__name__ == "NAType"


def markdown_table(columns: Sequence[str], rows: Iterable[tuple[Any, ...]], floatfmt: str = ".3g") -> str:
    """A GitHub-flavoured Markdown table: floats as ``floatfmt``, missing values empty, text (headers too)
    escaped as Markdown text (:func:`neutrino_ae.escape.md_text`: a probe or folder name is never markup)."""

    def cell(v: Any) -> str:
        if is_missing(v):
            return ""
        if isinstance(v, float):
            return format(v, floatfmt)
        return md_text(v)

    head = "| " + " | ".join(md_text(c) for c in columns) + " |"
    sep = "| " + " | ".join("---" for _ in columns) + " |"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join([head, sep, *body])


class FrameMap(Mapping[str, "pd.DataFrame"]):
    """A result's tables by name: each :class:`Columns` given as a DataFrame when it is first read (pandas
    imported then), DataFrames as they are."""

    def __init__(self, tables: Mapping[str, Columns | pd.DataFrame]) -> None:
        self._tables = dict(tables)

    def __getitem__(self, name: str) -> pd.DataFrame:
        table = self._tables[name]
        if isinstance(table, Columns):
            table = self._tables[name] = table.to_frame()
        return table

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)

    def __repr__(self) -> str:
        return f"FrameMap({list(self._tables)})"
