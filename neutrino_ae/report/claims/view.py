"""The verdict as people read it: one row per claim -- verdict first, claim id, expected, obtained --
grouped by section, the same rows in a terminal and in the notebook, its HTML page and its PDF.

* :func:`verdict_text` (``neutrino-ae run``'s last lines, the notebook's plain-text output): fits
  ``width`` columns (``$COLUMNS``, else :data:`TEXT_WIDTH`), one line per claim, a cell too long cut
  with ``...``; why a claim did not pass, and what a row means on this bundle, are numbered notes under
  the table, each text once.
* :func:`verdict_html` (the notebook's verdict output and the report made of it): a table as wide as
  its column and never wider (fixed layout, cells wrap, nothing scrolls, so a printed page keeps every
  row); each section's rows are followed by a folded detail (``<details>``) with each claim in words,
  its source, its tolerance and why, the run and the bundle it was judged on.

What a row leaves out is in ``verdict.json`` (``text``, ``source``, ``tolerance``, ``why``, ``reason``,
``note``, ``run_id``, ``bundle_digest``). On a SYNTHETIC sample bundle a published claim's row says that
it checks the model's calibration (``claims.CALIBRATION_NOTE``), not the paper.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass

from neutrino_ae.escape import html_text
from neutrino_ae.report.claims import DIFFERS, PASS, SHAPE, SKIPPED, Outcome, short_digest

#: Terminal width when neither ``$COLUMNS`` nor the terminal says (a pipe, a CI log), and the narrowest used.
TEXT_WIDTH, MIN_TEXT_WIDTH = 100, 60
#: The label a published claim's expected value carries on a sample bundle (its ``note`` says why).
CALIBRATION = "calibration"
_HEAD = ("verdict", "claim", "expected", "obtained")
#: A truth claim's expectation (claims.Truth) as a terminal row says it.
_TRUTH_LONG, _TRUTH_SHORT = "the model's ground truth", "model truth"
_COLOURS = {PASS: "#1a7f37", DIFFERS: "#c62828", SKIPPED: "#6e6e6e"}


@dataclass(frozen=True)
class Row:
    """One claim as a verdict table shows it; ``notes``: what the row cannot say in a cell (why it did
    not pass, what it means on this bundle)."""

    status: str
    claim: str
    expected: str
    obtained: str
    notes: tuple[str, ...]
    outcome: Outcome


def row(o: Outcome) -> Row:
    expected = " ".join(str(o.expected).split())
    if o.note and o.kind != SHAPE:
        expected = f"{CALIBRATION}: {expected}"
    obtained = " ".join(str(o.obtained).split())
    notes = tuple(n for n in ((o.reason if o.status != PASS else ""), o.note) if n)
    return Row(o.status, o.claim, expected, obtained, notes, o)


def by_section(outcomes: Iterable[Outcome]) -> list[tuple[str, list[Row]]]:
    """The rows grouped by section, sections and claims in the order given."""
    groups: dict[str, list[Row]] = {}
    for o in outcomes:
        groups.setdefault(o.section, []).append(row(o))
    return list(groups.items())


def _titles() -> dict[str, str]:
    """``section -> "Sec. 4.5: Block scheduling cost"`` for the registered sections (none when the
    registry cannot be read: a table of toy sections is still drawn)."""
    try:
        from neutrino_ae.report.section import registry

        return {s.name: f"{s.paper_ref}: {s.title}" for s in registry.sections()}
    except Exception:  # noqa: BLE001 - only a heading is lost
        return {}


def _heading(section: str, rows: list[Row], titles: dict[str, str], several_runs: bool) -> str:
    counts = ", ".join(f"{n} {k}" for k in (PASS, DIFFERS, SKIPPED) if (n := sum(r.status == k for r in rows)))
    title = f" ({titles[section]})" if section in titles else ""
    runs = sorted({r.outcome.run_id for r in rows if r.outcome.run_id}) if several_runs else []
    # The title last: a terminal too narrow for the whole line loses its end, never the counts or the run.
    return f"{section}: {counts}" + (f"; run {', '.join(runs)}" if runs else "") + title


def _several_runs(outcomes: list[Outcome]) -> bool:
    return len({o.run_id for o in outcomes}) > 1


def text_width(width: int | None = None) -> int:
    """``width``, else ``$COLUMNS`` or the terminal's width, else :data:`TEXT_WIDTH`; at least
    :data:`MIN_TEXT_WIDTH`."""
    if width is None:
        width = shutil.get_terminal_size((TEXT_WIDTH, 24)).columns or TEXT_WIDTH
    return max(MIN_TEXT_WIDTH, int(width))


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[:max(0, n - 3)].rstrip() + "..."


def verdict_text(outcomes: Iterable[Outcome], width: int | None = None) -> str:
    """The verdict for a terminal ``width`` columns wide (:func:`text_width`): a header, then per
    section a heading line and one line per claim (verdict, claim, expected, obtained); then the notes
    the rows point to (``[1]``: why a claim did not pass, what it means on this bundle), wrapped."""
    outcomes = list(outcomes)
    width = text_width(width)
    groups, titles = by_section(outcomes), _titles()
    several = _several_runs(outcomes)
    notes: dict[str, int] = {}
    cells = []  # (status, claim, expected, obtained, note marks) or a section heading (str)
    for section, rows in groups:
        cells.append(_heading(section, rows, titles, several))
        for r in rows:
            marks = "".join(f"[{notes.setdefault(n, len(notes) + 1)}]" for n in r.notes)
            obtained = r.obtained or (r.notes[0] if r.notes else "")  # a skipped claim: its reason, then the mark
            cells.append((r.status, r.claim, r.expected.replace(_TRUTH_LONG, _TRUTH_SHORT), obtained, marks))
    claims = [c for c in cells if isinstance(c, tuple)]
    w_status = max([len(_HEAD[0])] + [len(c[0]) for c in claims])
    w_claim = max([len(_HEAD[1])] + [len(c[1]) for c in claims])
    room = width - w_status - w_claim - 6  # three two-space gaps
    natural_exp = max([len(_HEAD[2])] + [len(c[2]) for c in claims])
    natural_obt = max([len(_HEAD[3])] + [len(c[3]) + (len(c[4]) + 1 if c[4] else 0) for c in claims])
    if natural_exp + natural_obt <= room:
        w_exp, w_obt = natural_exp, natural_obt
    else:  # the expectation gets at most half the room, less when the results need less
        w_exp = min(natural_exp, max(room // 2, room - natural_obt))
        w_obt = max(len(_HEAD[3]), room - w_exp)

    def line(status: str, claim: str, exp: str, obt: str) -> str:
        return f"{status:<{w_status}}  {claim:<{w_claim}}  {exp:<{w_exp}}  {obt}".rstrip()

    out = [line(*_HEAD), line(*("-" * w for w in (w_status, w_claim, w_exp, w_obt)))]
    for c in cells:
        if isinstance(c, str):
            out.append(_cut(c, width))
            continue
        status, claim, exp, obt, marks = c
        obt = (_cut(obt, w_obt - len(marks) - 1) + " " + marks).strip() if marks else _cut(obt, w_obt)
        out.append(line(status, _cut(claim, w_claim), _cut(exp, w_exp), obt))
    if notes:
        out.append("")
        for text, n in notes.items():
            out += textwrap.wrap(text, width, initial_indent=f"[{n}] ", subsequent_indent=" " * (len(str(n)) + 3),
                                 break_on_hyphens=False)
    return "\n".join(out)


def _e(text: str) -> str:
    return html_text(" ".join(str(text).split()))


_TABLE_CSS = "table-layout:fixed;width:100%;max-width:100%;border-collapse:collapse;margin:0 0 1em 0;font-size:13px"
_CELL_CSS = "text-align:left;vertical-align:top;padding:3px 6px;overflow-wrap:anywhere;white-space:normal"
_SMALL_CSS = "font-size:0.92em;color:#555"


def verdict_html(outcomes: Iterable[Outcome]) -> str:
    """The verdict as HTML that fits its column (``<div class="neutrino-ae-verdict">``): per section a table
    (``neutrino-ae-verdict-table``, the same fixed columns in each) with a heading row and one row per claim
    (verdict, claim, expected, obtained; why it did not pass, and what it means on this bundle, in small
    type in the row), then a folded detail with each claim in words, its source, tolerance and why, the
    run and the bundle. One line, no blank lines: it is also Markdown's raw HTML (the notebook's top cell)."""
    outcomes = list(outcomes)
    titles, several = _titles(), _several_runs(outcomes)
    cell = f'style="{_CELL_CSS}"'
    cols = '<colgroup><col style="width:6.5em"><col style="width:15em"><col style="width:38%"><col></colgroup>'
    head = "<thead><tr>" + "".join(f"<th {cell}>{h}</th>" for h in _HEAD) + "</tr></thead>"
    parts = ['<div class="neutrino-ae-verdict" style="max-width:100%;overflow:visible">']
    for i, (section, rows) in enumerate(by_section(outcomes)):
        heading = _e(_heading(section, rows, titles, several))
        shared = _shared_note(rows)
        if shared:  # every claim of the section skipped for one reason (a section that failed, nothing collected)
            heading += f'<div style="{_SMALL_CSS};font-weight:normal">{_e(shared)}</div>'
        parts.append(f'<table class="neutrino-ae-verdict-table" style="{_TABLE_CSS}">{cols}{head if i == 0 else ""}'
                     f'<tbody><tr><th colspan="4" {cell}>{heading}</th></tr>')
        for r in rows:
            colour = _COLOURS.get(r.status, "inherit")
            expected = _e(r.expected)
            if r.expected.startswith(f"{CALIBRATION}: "):
                expected = f"<i>{CALIBRATION}:</i> <code>{_e(r.expected.split(': ', 1)[1])}</code>"
            else:
                expected = f"<code>{expected}</code>"
            small = "".join(f'<div style="{_SMALL_CSS}">{_e(n)}</div>' for n in r.notes if n != shared)
            parts.append(f'<tr class="neutrino-ae-claim"><td {cell}><b style="color:{colour}">{_e(r.status)}</b></td>'
                         f'<td {cell}><code style="white-space:nowrap">{_e(r.claim)}</code></td>'
                         f"<td {cell}>{expected}</td>"
                         f"<td {cell}>{_e(r.obtained)}{small}</td></tr>")
        parts.append(f'</tbody></table><div class="neutrino-ae-detail" style="margin:-0.6em 0 1em 0">'
                     f"{_detail(section, rows)}</div>")
    parts.append("</div>")
    return "".join(parts)


def _shared_note(rows: list[Row]) -> str:
    """The one note every row of a section has (more than one row, all skipped for the same reason), or ''."""
    notes = {r.notes for r in rows}
    return next(iter(notes))[0] if len(rows) > 1 and len(notes) == 1 and len(next(iter(notes))) == 1 \
        and all(r.status == SKIPPED for r in rows) else ""


def _detail(section: str, rows: list[Row]) -> str:
    """A section's claims in words: what, source, tolerance and why, run and bundle (folded)."""
    items = []
    for r in rows:
        o = r.outcome
        tol = "a direction, no reference number" if o.kind == SHAPE else _e(o.tolerance)
        why = f" ({_e(o.why)})" if o.why else ""
        items.append(f"<li><code>{_e(o.claim)}</code>, {_e(o.kind)}: {_e(o.text)}. <i>Source:</i> {_e(o.source)}. "
                     f"<i>Tolerance:</i> {tol}{why}.</li>")
    runs = sorted({(r.outcome.run_id or "none", short_digest(r.outcome.bundle_digest)) for r in rows})
    judged = "; ".join(f"run {run}, bundle {digest}" for run, digest in runs)
    return (f'<details><summary style="{_SMALL_CSS}">{_e(section)}: each claim in words, its source and '
            f'tolerance ({len(rows)})</summary><ul style="margin:0.3em 0;font-size:0.92em">{"".join(items)}</ul>'
            f'<div style="{_SMALL_CSS}">judged by {_e(judged)}</div></details>')
