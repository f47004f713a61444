"""The paper's claims as data, and the verdict of a run on them.

A section declares its claims (``Section.claims``); each is checked against the run's summary rows
(``summary.json``), never against internals, so the same claims judge a paper, sample or dynamic
run. A claim compares summary values named by key patterns::

    Claim("neutrino-below-ncu", "Neutrino's exposed latency is below Nsight Compute's",
          source="Fig. 12", left="{w}.{p}.neutrino_ratio", op="<", right="{w}.{p}.ncu_ratio")

``{name}`` in ``left`` matches one dotted key part; every left row must satisfy ``op`` against
``right`` -- a number, or a pattern filled with the left row's parts (free parts left in ``right``
match every row, e.g. all probes of one kernel) -- times ``factor``. The outcome is PASS when every
comparison holds, DIFFERS (with the first failures) when one does not, and SKIPPED (with the reason)
when no row matches: a claim is never silently dropped.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PASS, DIFFERS, SKIPPED = "PASS", "DIFFERS", "SKIPPED"
VERDICT_NAME = "verdict.json"  # written in a run's output folder (neutrino_ae.run.notebook.write_verdict)
_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_PART = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Claim:
    id: str
    text: str  # the claim, in the paper's words where possible
    source: str  # where the expectation comes from (paper section, artifact notebook, published number)
    left: str  # summary key pattern
    op: str  # one of < <= > >=
    right: str | float  # a number, or a key pattern
    factor: float = 1.0  # right side is multiplied by this
    expected: str = ""  # the expectation shown to people; defaults to "left op factor x right"

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"claim {self.id}: op must be one of {', '.join(_OPS)}, not {self.op!r}")

    @property
    def shown_expectation(self) -> str:
        rhs = self.right if isinstance(self.right, str) else f"{self.right:g}"
        scale = "" if self.factor == 1 else f"{self.factor:g} x "
        return self.expected or f"{self.left} {self.op} {scale}{rhs}"


@dataclass(frozen=True)
class Outcome:
    section: str
    claim: str
    text: str
    source: str
    expected: str
    obtained: str
    status: str
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _regex(pattern: str) -> re.Pattern[str]:
    out, pos = "", 0
    for m in _PART.finditer(pattern):
        out += re.escape(pattern[pos:m.start()]) + f"(?P<{m.group(1)}>[^.]+)"
        pos = m.end()
    return re.compile(out + re.escape(pattern[pos:]) + r"\Z")


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def evaluate(section: str, claim: Claim, values: Mapping[str, float | None]) -> Outcome:
    """Judge ``claim`` on one section's summary values (key -> value)."""
    base = dict(section=section, claim=claim.id, text=claim.text, source=claim.source,
                expected=claim.shown_expectation)
    left_re = _regex(claim.left)
    lefts = [(m, v) for k, v in values.items() if (m := left_re.match(k))]
    if not lefts:
        return Outcome(**base, obtained="", status=SKIPPED, reason=f"no result matches {claim.left}")
    compare = _OPS[claim.op]
    checked, failures, missing = [], [], []
    for m, lv in lefts:
        if isinstance(claim.right, str):
            parts = m.groupdict()
            filled = _PART.sub(lambda p, parts=parts: parts.get(p.group(1), p.group(0)), claim.right)
            rre = _regex(filled)
            rights = [(k, v) for k, v in values.items() if rre.match(k) and k != m.group(0)]
        else:
            rights = [(f"{claim.right:g}", float(claim.right))]
        if lv is None or not rights or any(v is None for _, v in rights):
            missing.append(m.group(0))
            continue
        for rk, rv in rights:
            ok = not (math.isnan(lv) or math.isnan(rv)) and compare(lv, claim.factor * rv)
            checked.append((m.group(0), lv, rk, rv))
            if not ok:
                failures.append(f"{m.group(0)} = {_fmt(lv)} vs {rk} = {_fmt(rv)}")
    if not checked:
        return Outcome(**base, obtained="", status=SKIPPED,
                       reason=f"no value to compare for {', '.join(missing[:3])}")
    if len(checked) == 1:
        k, lv, rk, rv = checked[0]
        obtained = f"{_fmt(lv)}" + ("" if rk == f"{rv:g}" else f" vs {_fmt(rv)}")
    else:
        obtained = f"{len(checked) - len(failures)}/{len(checked)} comparisons hold"
    reason = "; ".join(failures[:3]) + (f" (+{len(failures) - 3} more)" if len(failures) > 3 else "")
    if missing and not failures:
        reason = f"not comparable: {', '.join(missing[:3])}"
    return Outcome(**base, obtained=obtained, status=DIFFERS if failures else PASS, reason=reason)


def verdict(claims_by_section: Mapping[str, Iterable[Claim]], rows: Iterable[Mapping[str, Any]],
            skipped_sections: Mapping[str, str] | None = None) -> list[Outcome]:
    """Every claim of every section judged on summary ``rows``; sections in ``skipped_sections``
    (name -> why: failed, not selected, nothing collected) report their claims SKIPPED with that reason."""
    by_section: dict[str, dict[str, float | None]] = {}
    for r in rows:
        v = r.get("value")
        by_section.setdefault(str(r.get("section")), {})[str(r.get("key"))] = None if v is None else float(v)
    skipped = dict(skipped_sections or {})
    out = []
    for section, claims in claims_by_section.items():
        for claim in claims:
            if section in skipped:
                out.append(Outcome(section, claim.id, claim.text, claim.source, claim.shown_expectation, "",
                                   SKIPPED, skipped[section]))
            else:
                out.append(evaluate(section, claim, by_section.get(section, {})))
    return out


def verdict_table(outcomes: Iterable[Outcome]) -> str:
    """The verdict as a Markdown table: claim | expected | obtained | verdict."""
    lines = ["| section | claim | expected | obtained | verdict |", "|---|---|---|---|---|"]
    for o in outcomes:
        why = f" ({o.reason})" if o.reason else ""
        cell = lambda s: str(s).replace("|", "\\|")  # noqa: E731
        lines.append(f"| {o.section} | {cell(o.text)} [{cell(o.source)}] | `{cell(o.expected)}` | {cell(o.obtained)} "
                     f"| **{o.status}**{cell(why)} |")
    return "\n".join(lines)


def verdict_text(outcomes: Iterable[Outcome], width: int = 60) -> str:
    """The verdict as a plain-text table for a terminal: verdict | claim | expected | obtained,
    the reason of a DIFFERS or SKIPPED under its row."""
    def cut(text: str, n: int) -> str:
        text = " ".join(str(text).split())
        return text if len(text) <= n else text[:n - 3] + "..."

    rows = [(o.status, f"{o.section}/{o.claim}", cut(o.expected, width), cut(o.obtained, 30), o.reason)
            for o in outcomes]
    head = ("verdict", "claim", "expected", "obtained")
    widths = [max([len(head[i])] + [len(r[i]) for r in rows]) for i in range(4)]
    line = lambda cols: "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip()  # noqa: E731
    out = [line(head), line(["-" * w for w in widths])]
    for r in rows:
        out.append(line(r[:4]))
        if r[4]:
            out.append(" " * (widths[0] + 2) + cut(f"reason: {r[4]}", 2 * width))
    return "\n".join(out)


def trace_dirs_lines(trace_dirs: Mapping[str, Iterable[str]]) -> list[str]:
    """``<section>: <dir>, <dir>`` per section: the trace directories its numbers came from (``verdict.json``
    ``trace_dirs``; where a folder holds several collections, the newest by the time in its name)."""
    return [f"{section}: {', '.join(map(str, dirs))}" for section, dirs in trace_dirs.items() if dirs]


def failed(outcomes: Iterable[Outcome]) -> list[Outcome]:
    return [o for o in outcomes if o.status == DIFFERS]


def counts_line(counts: Mapping[str, int]) -> str:
    """``3 PASS, 1 DIFFERS, 0 SKIPPED`` (a status missing from ``counts`` counts 0)."""
    return ", ".join(f"{counts.get(k, 0)} {k}" for k in (PASS, DIFFERS, SKIPPED))


def read_verdict(out_dir: Path) -> tuple[dict[str, Any], list[Outcome]] | None:
    """The ``verdict.json`` in ``out_dir`` and its claims as Outcomes; None when there is none.
    A damaged file raises (OSError, ValueError, TypeError)."""
    path = Path(out_dir) / VERDICT_NAME
    if not path.is_file():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    return doc, [Outcome(**c) for c in doc.get("claims", [])]
