"""Diff two runs' ``summary.json`` (schema: :mod:`neutrino_ae.report.summary`).

A value *moved* when ``|b - a| > atol + rtol * max(|a|, |b|)`` (symmetric, so swapping the runs
gives the same verdict). A row present in one run only, or a number in one and null in the
other, also counts. Two nulls are equal.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from neutrino_ae.report.summary import read_summary, resolve_summary

OK, MOVED, ONLY_A, ONLY_B = "ok", "moved", "only in A", "only in B"


@dataclass(frozen=True)
class Diff:
    section: str
    key: str
    a: float | None
    b: float | None
    unit: str | None
    status: str

    @property
    def rel_change(self) -> float | None:
        if self.a is None or self.b is None:
            return None
        if self.a == 0:
            return 0.0 if self.b == 0 else math.inf
        return (self.b - self.a) / abs(self.a)


@dataclass(frozen=True)
class Comparison:
    diffs: list[Diff]
    kinds: tuple[str | None, str | None]  # bundle kinds of A and B, for a warning when they differ

    @property
    def changed(self) -> list[Diff]:
        return [d for d in self.diffs if d.status != OK]


def moved(a: float | None, b: float | None, rtol: float, atol: float) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    return abs(b - a) > atol + rtol * max(abs(a), abs(b))


def compare_summaries(a: str | os.PathLike[str], b: str | os.PathLike[str], rtol: float = 0.1,
                      atol: float = 0.0) -> Comparison:
    """Row-by-row comparison of two summaries (files or run directories)."""
    if rtol < 0 or atol < 0 or not (math.isfinite(rtol) and math.isfinite(atol)):
        raise ValueError("rtol and atol must be finite and >= 0")
    doc_a, doc_b = read_summary(a), read_summary(b)
    rows_a, rows_b = _index(doc_a), _index(doc_b)
    diffs: list[Diff] = []
    for ident in [*rows_a, *(k for k in rows_b if k not in rows_a)]:
        ra, rb = rows_a.get(ident), rows_b.get(ident)
        va = None if ra is None else ra["value"]
        vb = None if rb is None else rb["value"]
        unit = (ra or rb or {}).get("unit")
        if ra is None:
            status = ONLY_B
        elif rb is None:
            status = ONLY_A
        else:
            status = MOVED if moved(va, vb, rtol, atol) else OK
        diffs.append(Diff(ident[0], ident[1], va, vb, unit, status))
    return Comparison(diffs, (_kind(doc_a), _kind(doc_b)))


def _index(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(str(r["section"]), str(r["key"])): r for r in doc["results"]}


def _kind(doc: dict[str, Any]) -> str | None:
    if doc.get("bundle_kind"):
        return str(doc["bundle_kind"])
    kinds = {r.get("bundle_kind") for r in doc["results"]} - {None}
    return kinds.pop() if len(kinds) == 1 else None


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.6g}"


def format_table(diffs: list[Diff]) -> str:
    """A fixed-width text table of ``diffs`` (section/key, A, B, change, status)."""
    head = ("section/key", "A", "B", "change", "unit", "status")
    rows = []
    for d in diffs:
        rel = d.rel_change
        change = "-" if rel is None else ("inf" if math.isinf(rel) else f"{rel:+.1%}")
        rows.append((f"{d.section}/{d.key}", _fmt(d.a), _fmt(d.b), change, d.unit or "", d.status))
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [head, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def report(a: str | os.PathLike[str], b: str | os.PathLike[str], rtol: float = 0.1,
           atol: float = 0.0) -> tuple[int, str]:
    """Exit code (0 all within tolerance, 1 something moved or is missing) and the text to print."""
    cmp = compare_summaries(a, b, rtol, atol)
    lines = [f"A: {resolve_summary(a)}", f"B: {resolve_summary(b)}"]
    ka, kb = cmp.kinds
    if ka != kb:
        lines.append(f"note: the runs used different bundles (A: {ka or 'unknown'}, B: {kb or 'unknown'})")
    changed = cmp.changed
    if changed:
        lines.append(format_table(changed))
        lines.append(f"{len(changed)} of {len(cmp.diffs)} values moved beyond rtol={rtol:g} atol={atol:g} "
                     "or are missing on one side")
        return 1, "\n".join(lines)
    lines.append(f"{len(cmp.diffs)} values compared; none moved beyond rtol={rtol:g} atol={atol:g}")
    return 0, "\n".join(lines)
