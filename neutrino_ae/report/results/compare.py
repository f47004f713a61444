"""Diff two runs' ``summary.json`` (schema: :mod:`neutrino_ae.report.results.summary`).

A value *moved* when ``|b - a| > atol + rtol * max(|a|, |b|)`` (symmetric, so swapping the runs
gives the same verdict), decided exactly: integers are compared as integers and the rule is worked
out in rational arithmetic, so ``2**53 + 1`` and ``2**53`` differ (as floats they are one number),
and integers are printed whole. A summary.json over
:data:`~neutrino_ae.report.command.layout.MAX_SUMMARY_BYTES` is refused before it is read.

A row present in one run only, or a number in one and null in the other, also counts. Two nulls
are equal. NaN and +/-inf (not valid in a summary we write, but a hand-edited or foreign file may
hold them) count as moved unless both runs hold the very same non-finite value: the tolerance rule
alone would call them unchanged, because every comparison with NaN is false and
``inf <= rtol * inf``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from neutrino_ae.errors import InputError, UsageError
from neutrino_ae.report.results.summary import read_summary, resolve_summary

OK, MOVED, ONLY_A, ONLY_B = "ok", "moved", "only in A", "only in B"


@dataclass(frozen=True)
class Diff:
    section: str
    key: str
    a: int | float | None
    b: int | float | None
    unit: str | None
    status: str

    @property
    def rel_change(self) -> float | None:
        if self.a is None or self.b is None:
            return None
        if not (math.isfinite(self.a) and math.isfinite(self.b)):
            return 0.0 if _same(self.a, self.b) else math.nan
        if self.a == 0:
            return 0.0 if self.b == 0 else math.inf
        try:
            return (self.b - self.a) / abs(self.a)
        except OverflowError:  # two integers whose ratio is beyond a float
            return math.copysign(math.inf, self.b - self.a)


@dataclass(frozen=True)
class Comparison:
    diffs: list[Diff]
    kinds: tuple[str | None, str | None]  # bundle kinds of A and B, for a warning when they differ
    digests: tuple[str | None, str | None] = (None, None)  # bundle digests of A and B (static runs record one)

    @property
    def changed(self) -> list[Diff]:
        return [d for d in self.diffs if d.status != OK]


def moved(a: int | float | None, b: int | float | None, rtol: float, atol: float) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    if not (math.isfinite(a) and math.isfinite(b)):
        # The rule below cannot see these (NaN > x is False, inf - inf is NaN), so decide here.
        return not _same(a, b)
    # Exact: every finite float and every int is a rational number, so nothing is rounded away.
    fa, fb = Fraction(a), Fraction(b)
    return abs(fb - fa) > Fraction(atol) + Fraction(rtol) * max(abs(fa), abs(fb))


def _same(a: float, b: float) -> bool:
    """Identical values, NaN included (NaN != NaN, but two runs that both got NaN agree)."""
    return (math.isnan(a) and math.isnan(b)) or a == b


def compare_summaries(a: str | os.PathLike[str], b: str | os.PathLike[str], rtol: float = 0.1,
                      atol: float = 0.0) -> Comparison:
    """Row-by-row comparison of two summaries (files or run directories)."""
    # `not (x >= 0)` is also true for NaN; a NaN or infinite tolerance would accept anything.
    if not (rtol >= 0 and atol >= 0 and math.isfinite(rtol) and math.isfinite(atol)):
        raise UsageError(f"--rtol and --atol must be finite numbers >= 0, got rtol={rtol!r} atol={atol!r}")
    doc_a, rows_a = _load(a)
    doc_b, rows_b = _load(b)
    diffs: list[Diff] = []
    for ident in [*rows_a, *(k for k in rows_b if k not in rows_a)]:
        ra, rb = rows_a.get(ident), rows_b.get(ident)
        va = None if ra is None else ra[0]
        vb = None if rb is None else rb[0]
        unit = (ra or rb or (None, None))[1]
        if ra is None:
            status = ONLY_B
        elif rb is None:
            status = ONLY_A
        else:
            status = MOVED if moved(va, vb, rtol, atol) else OK
        diffs.append(Diff(ident[0], ident[1], va, vb, unit, status))
    return Comparison(diffs, (_kind(doc_a), _kind(doc_b)), (_digest(doc_a), _digest(doc_b)))


Number = int | float | None


def _load(path: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[tuple[str, str], tuple[Number, Any]]]:
    """The validated summary and its rows as ``{(section, key): (value, unit)}`` (integers kept).

    Hostile input must end in one line naming the file, not a traceback: json raises
    RecursionError on deep nesting and ValueError for integers over 4300 digits, and a shorter
    but still huge integer overflows when turned into a float.
    """
    p = resolve_summary(path)
    try:
        doc = read_summary(p)
        return doc, _index(doc, p)
    except RecursionError:
        raise InputError(p, "is nested too deeply to be a summary.json") from None
    except ValueError as exc:  # JSONDecodeError is handled by read_summary; this is the digit limit
        raise InputError(p, f"holds a number too large to compare ({str(exc).split(':')[0]})") from None


def _index(doc: dict[str, Any], path: Path) -> dict[tuple[str, str], tuple[Number, Any]]:
    rows: dict[tuple[str, str], tuple[Number, Any]] = {}
    for i, r in enumerate(doc["results"]):
        ident = (str(r["section"]), str(r["key"]))
        value = r["value"]
        if value is not None:
            try:
                float(value)  # json gives ints unbounded; the change in percent needs a float's range
            except OverflowError:
                raise InputError(path, f"results[{i}] ({ident[0][:60]}/{ident[1][:60]}): value with "
                                       f"{len(str(abs(value)))} digits is too large for a float") from None
        unit = r.get("unit")
        rows[ident] = (value, None if unit is None else str(unit))  # free-form in a foreign file
    return rows


def _kind(doc: dict[str, Any]) -> str | None:
    if doc.get("bundle_kind"):
        return str(doc["bundle_kind"])
    # Only strings count: a list or dict here (a foreign file) is unhashable and names no kind.
    kinds = {k for r in doc["results"] if isinstance(k := r.get("bundle_kind"), str)}
    return kinds.pop() if len(kinds) == 1 else None


def _digest(doc: dict[str, Any]) -> str | None:
    """The bundle digest a run recorded (``bundle_digest``: the paper archive's sha256, else one over the
    bundle's file digests), or None when it recorded none (a collected tree, an older summary)."""
    digest = doc.get("bundle_digest")
    return digest if isinstance(digest, str) and digest else None


def bundles_line(cmp: Comparison) -> str | None:
    """One line saying the two runs read different bundles (kinds or digests), or None when nothing says so.
    A warning, not a failure: comparing a GPU run with the paper's bundle is what ``compare`` is for; the
    exit status stays that of the values."""
    (ka, kb), (da, db) = cmp.kinds, cmp.digests
    if ka == kb and (da is None or db is None or da == db):
        return None

    def named(kind: str | None, digest: str | None) -> str:
        return f"{kind or 'unknown'}" + (f" (sha256 {digest[:16]}...)" if digest else " (no digest)")

    return (f"warning: the runs read different bundles: A {named(ka, da)}, B {named(kb, db)}; values may "
            "differ because the data differ")


def _fmt(v: Number, exact: bool = False) -> str:
    """A value as the table shows it: integers whole; floats to 6 significant digits, or all their
    digits (``exact``) where 6 would show two different values alike."""
    if v is None:
        return "-"
    if isinstance(v, int):
        return str(v)
    return repr(v) if exact else f"{v:.6g}"


def format_table(diffs: list[Diff]) -> str:
    """A fixed-width text table of ``diffs`` (section/key, A, B, change, status)."""
    head = ("section/key", "A", "B", "change", "unit", "status")
    rows = []
    for d in diffs:
        rel = d.rel_change
        change = "-" if rel is None else (f"{rel}" if not math.isfinite(rel) else f"{rel:+.1%}")
        a, b = _fmt(d.a), _fmt(d.b)
        if a == b and d.status == MOVED:
            a, b = _fmt(d.a, exact=True), _fmt(d.b, exact=True)
        rows.append((f"{d.section}/{d.key}", a, b, change, d.unit or "", d.status))
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in [head, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def report(a: str | os.PathLike[str], b: str | os.PathLike[str], rtol: float = 0.1,
           atol: float = 0.0) -> tuple[int, str]:
    """Exit code (0 all within tolerance, 1 something moved or is missing) and the text to print."""
    cmp = compare_summaries(a, b, rtol, atol)
    lines = [f"A: {resolve_summary(a)}", f"B: {resolve_summary(b)}"]
    differ = bundles_line(cmp)
    if differ:
        lines.append(differ)
    changed = cmp.changed
    if changed:
        lines.append(format_table(changed))
        lines.append(f"{len(changed)} of {len(cmp.diffs)} values moved beyond rtol={rtol:g} atol={atol:g} "
                     "or are missing on one side")
        return 1, "\n".join(lines)
    lines.append(f"{len(cmp.diffs)} values compared; none moved beyond rtol={rtol:g} atol={atol:g}")
    return 0, "\n".join(lines)
