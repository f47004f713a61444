"""``summary.json``: the one headline-numbers file a notebook run writes, and ``compare`` diffs.

Schema (single source of truth; ``SCHEMA`` names its version)::

    {
      "schema": "neutrino-ae-summary/1",
      "generated_at": "2026-01-01T00:00:00+00:00",
      ...run metadata passed to write_summary (notebook, bundle_kind, trace_root, ...)...,
      "results": [
        {"section": "block_sched",            # paper section folder
         "key": "mean_scheduling_cycles",     # unique within the section
         "paper_ref": "Sec. 4.5",            # where the number appears in the paper, or null
         "value": 87713,                      # a finite number (an integer for a count), or null
         "unit": "cycles",                    # or null
         "bundle_kind": "paper",              # "paper" | "sample" | "dynamic" (fresh traces) | "unknown"
         "ground_truth": null},               # the sample generator's injected value, or null
        ...
      ]
    }

``(section, key)`` identifies a row; it must be unique. NaN/inf are not valid JSON, so
:func:`write_summary` stores them as ``null``.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neutrino_ae.atomic import write_json
from neutrino_ae.bundle.manifest import UNKNOWN
from neutrino_ae.errors import InputError
from neutrino_ae.report.command.layout import MAX_SUMMARY_BYTES
from neutrino_ae.report.results import SectionResult

if TYPE_CHECKING:  # pandas: only for summary_table
    import pandas as pd

SCHEMA = "neutrino-ae-summary/1"
SUMMARY_NAME = "summary.json"
ROW_FIELDS = ("section", "key", "paper_ref", "value", "unit", "bundle_kind", "ground_truth")
#: Column order of the summary table people read.
SUMMARY_COLUMNS = ("section", "paper_ref", "key", "value", "unit", "bundle_kind", "ground_truth")
_REQUIRED = ("section", "key", "value")


def summary_row(section: str, key: str, value: float | None, unit: str | None = None,
                paper_ref: str | None = None, bundle_kind: str = "unknown",
                ground_truth: float | None = None) -> dict[str, Any]:
    """One ``results`` row with every field present. Integers (numpy's too) stay integers, exactly,
    other numbers become floats, NaN and infinities None; the ground truth of an integer value is an
    integer when it is a whole number (the sample model may compute a count as a float)."""
    number, truth = _number(value, "value"), _number(ground_truth, "ground_truth")
    if isinstance(number, int) and isinstance(truth, float) and truth.is_integer():
        truth = int(truth)
    return {"section": section, "key": key, "paper_ref": paper_ref, "value": number,
            "unit": unit, "bundle_kind": bundle_kind, "ground_truth": truth}


def write_summary(path: str | os.PathLike[str], rows: Iterable[Mapping[str, Any]], **meta: Any) -> Path:
    """Validate ``rows`` and write ``path`` (a file, or a directory to hold ``summary.json``) atomically.

    Missing optional fields default to None (``bundle_kind`` to ``"unknown"``); integers (numpy's
    too) stay integers, other numbers become floats; non-finite numbers become None. Raises
    ValueError on a missing section/key or a duplicate ``(section, key)``.
    """
    out = Path(path)
    if out.is_dir():
        out = out / SUMMARY_NAME
    normalised: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for i, row in enumerate(rows):
        missing = [f for f in _REQUIRED if f not in row]
        if missing:
            raise ValueError(f"summary row {i} lacks {', '.join(missing)}: {dict(row)!r}")
        ident = (str(row["section"]), str(row["key"]))
        if ident in seen:
            raise ValueError(f"duplicate summary row {ident[0]}/{ident[1]}")
        seen.add(ident)
        extra = {k: v for k, v in row.items() if k not in ROW_FIELDS}
        normalised.append({**summary_row(ident[0], ident[1], row["value"], row.get("unit"),
                                         row.get("paper_ref"), row.get("bundle_kind") or "unknown",
                                         row.get("ground_truth")), **extra})
    doc = {"schema": SCHEMA,
           "generated_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
           **meta, "results": normalised}
    return write_json(out, doc)


def resolve_summary(path: str | os.PathLike[str]) -> Path:
    """``path`` itself if it is a file, ``path/summary.json`` if it is a run directory."""
    p = Path(path)
    if p.is_dir():
        p = p / SUMMARY_NAME
        if not p.is_file():
            raise InputError(p, "not found; is this a run output directory?")
    elif not p.is_file():
        raise InputError(p, "not found")
    return p


def read_summary(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load and validate a summary (file or run directory); raises InputError naming the file."""
    p = resolve_summary(path)
    try:
        size = p.stat().st_size
        if size > MAX_SUMMARY_BYTES:
            raise InputError(p, f"is {size / 2**20:,.1f} MiB, more than the {MAX_SUMMARY_BYTES // 2**20} MiB a "
                                "summary.json may have (a run's holds one row per headline number, under "
                                "1 MiB); not read")
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(p, f"is not valid JSON ({exc})") from None
    except OSError as exc:
        raise InputError(p, f"cannot read: {exc.strerror or exc}") from None
    except MemoryError:
        raise InputError(p, f"not enough memory to read its {size / 2**20:,.1f} MiB") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise InputError(p, "has no 'results' list; not a summary.json")
    schema = doc.get("schema", SCHEMA)
    if not str(schema).startswith("neutrino-ae-summary/"):
        raise InputError(p, f"unknown schema {schema!r}")
    seen: set[tuple[str, str]] = set()
    for i, row in enumerate(doc["results"]):
        if not isinstance(row, dict) or any(f not in row for f in _REQUIRED):
            raise InputError(p, f"results[{i}] lacks section/key/value")
        value = row["value"]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InputError(p, f"results[{i}] ({row['section']}/{row['key']}): value {value!r} is not a number")
        ident = (str(row["section"]), str(row["key"]))
        if ident in seen:
            raise InputError(p, f"duplicate result {ident[0]}/{ident[1]}")
        seen.add(ident)
    return doc


def _number(value: Any, what: str) -> int | float | None:
    if value is None:
        return None
    if hasattr(value, "item") and not isinstance(value, int | float):
        value = value.item()  # numpy scalar: numpy's integers become ints, its floats floats
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"summary {what} must be a number or None, got {value!r}")
    if isinstance(value, int):
        return int(value)  # a count stays a count: JSON holds it exactly, whatever its size
    value = float(value)
    return value if math.isfinite(value) else None


def summary_rows(results: Iterable[SectionResult] | Mapping[str, SectionResult],
                 bundle_kind: str | None = None) -> list[dict[str, Any]]:
    """Flatten every result's summary rows into summary.json rows (section and bundle kind added).

    ``bundle_kind`` overrides the kind recorded in each result's data (``unknown`` when neither).
    Rows keep the registry's section order and, within a section, the analysis' order.
    """
    from neutrino_ae.report.section import registry  # the order and paper references of the sections

    items = list(results.values()) if isinstance(results, Mapping) else list(results)
    known = {s.name: s for s in registry.sections()}
    order = {n: i for i, n in enumerate(known)}
    items.sort(key=lambda r: order.get(r.section, len(order)))
    rows: list[dict[str, Any]] = []
    for res in items:
        kind = bundle_kind or res.data.get("bundle_kind") or UNKNOWN
        default_ref = known[res.section].paper_ref if res.section in known else ""
        for row in res.summary:
            rows.append({
                "section": res.section,
                "key": row.get("key"),
                "paper_ref": row.get("paper_ref") or default_ref,
                "value": row.get("value"),
                "unit": row.get("unit", ""),
                "bundle_kind": kind,
                "ground_truth": row.get("ground_truth"),
            })
    return rows




def format_number(value: Any) -> str:
    """A summary number for people: integers with thousands separators, others to 4 significant digits."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"  # exact, whatever its size
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.4g}"


def summary_table(rows: Iterable[Mapping[str, Any]], ground_truth: bool = True) -> pd.DataFrame:
    """Summary rows as a display table (numbers formatted as text); ``ground_truth`` keeps that column."""
    import pandas as pd

    columns = [c for c in SUMMARY_COLUMNS if ground_truth or c != "ground_truth"]
    df = pd.DataFrame([{c: row.get(c) for c in columns} for row in rows], columns=columns)
    for col in ("value", "ground_truth"):
        if col in df:
            df[col] = [format_number(v) for v in df[col]]
    return df.fillna("")
