"""Table 2 from its cells: the section's ``compute`` (:func:`compute`: the wide and long tables, the summary
numbers, the artifact's text and the HTML page) and what its heatmap shows (:func:`figures`)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import asdict
from functools import partial
from typing import TYPE_CHECKING, Any

from neutrino_ae.report.results.labels import SYNTHETIC_LABEL
from neutrino_ae.report.results.text_table import text_table
from neutrino_ae.report.section.driver import Figure, Result

from .analysis import (
    FEWER_LEGEND,
    FEWER_MARK,
    GROUP_LABELS,
    KERNEL_LABELS,
    PAPER_REF,
    Cell,
    _ordered_probes,
    _truth_lines,
    _truth_value,
    long_table,
    text_rows,
    wide_table,
)

if TYPE_CHECKING:
    from .inputs import Measured

SECTION = "kernel_overhead"
TITLE = f"{PAPER_REF}: kernel slowdown and extra registers"


def _lines(m: Measured) -> list[str]:
    """The command's text up to the files' names (the artifact's result, printed first)."""
    cells, problems, failed = m.cells, m.problems, m.failed
    lines = [f"{PAPER_REF}: kernel slowdown (median probed/pruned) and extra registers (probed - pruned)"
             + (" [SYNTHETIC sample data]" if m.bundle.synthetic else "")]
    lines.append(text_table(*text_rows(cells)))
    if any(c.registers_note for c in cells):
        lines.append(FEWER_LEGEND)
    lines += _truth_lines(cells)
    if failed:
        lines.append(f"failed launches (excluded): {len(failed)}")
        lines += [f"  {f}" for f in failed[:20]]
        if len(failed) > 20:
            lines.append(f"  ... {len(failed) - 20} more in the JSON")
    if problems:
        lines.append(f"missing or unusable inputs: {len(problems)}")
        lines += [f"  {p}" for p in problems]
    return lines


def compute(m: Measured) -> dict[str, Result]:
    """The section's ``compute``: per kernel x probe, the median slowdown and the extra registers."""
    numbers: dict[str, Any] = {}
    truth: dict[str, Any] = {}
    for c in m.cells:
        base = f"{c.group}.{c.kernel}.{c.probe}"
        numbers.update({f"{base}.slowdown": c.slowdown, f"{base}.extra_registers": c.extra_regs})
        truth.update({f"{base}.slowdown": _truth_value(c.ground_truth, "launch_median_slowdown"),
                      f"{base}.extra_registers": _truth_value(c.ground_truth, "extra_registers")})
    synthetic = m.bundle.synthetic
    data = {"paper_ref": PAPER_REF, "bundle_kind": m.bundle.kind, "synthetic": synthetic, "root": str(m.root),
            "probes": _ordered_probes(m.cells), "cells": [asdict(c) for c in m.cells], "failed_launches": m.failed,
            "problems": m.problems, "summary": None}
    files = {"html": (f"{m.stem}.html", render_html(m.cells, TITLE, synthetic)),
             m.stem: partial(wide_table, m.cells), f"{m.stem}_long": partial(long_table, m.cells)}  # after the lines
    return {m.stem: Result(files=files, numbers=numbers, truth=truth,
                           units={"slowdown": "x", "extra_registers": "registers"}, data=data, lines=_lines(m),
                           done="wrote {figure} and {html}", input=m.root,
                           plots={"stem": m.stem, "synthetic": synthetic, "cells": data["cells"]})}


def figures(result: Result) -> list[Figure]:
    """The section's ``figures``: the heatmap of every cell as the results JSON records it."""
    p = result.plots
    return [Figure(p["stem"], "figures:heatmap_figure", {}, {"synthetic": p["synthetic"], "title": TITLE,
                                                             "cells": p["cells"]}, key="figure")]


def render_html(cells: Sequence[Cell], title: str, synthetic: bool) -> str:
    """A standalone HTML page with Table 2 (probe headers spanning slowdown and +regs)."""
    probes = _ordered_probes(cells)
    by_key = {(c.group, c.kernel, c.probe): c for c in cells}
    kernels: list[tuple[str, str]] = []
    for c in cells:
        if (c.group, c.kernel) not in kernels:
            kernels.append((c.group, c.kernel))
    esc = html.escape
    out = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>", f"<title>{esc(title)}</title>",
           "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
           "th,td{border:1px solid #999;padding:3px 8px;text-align:right}th{background:#eee}"
           "td.k,th.k{text-align:left}td.na{color:#999;text-align:center}"
           ".synthetic{color:#a00000;font-weight:bold}</style></head><body>",
           f"<h2>{esc(title)}</h2>"]
    if synthetic:
        out.append(f"<p class='synthetic'>{esc(SYNTHETIC_LABEL)}</p>")
    out.append("<table><thead><tr><th class='k' rowspan='2'>group</th><th class='k' rowspan='2'>kernel</th>")
    out += [f"<th colspan='2'>{esc(p)}</th>" for p in probes]
    out.append("</tr><tr>" + "<th>slowdown</th><th>+regs</th>" * len(probes) + "</tr></thead><tbody>")
    groups = [g for g, _ in kernels]
    for i, (g, k) in enumerate(kernels):
        out.append("<tr>")
        if i == 0 or groups[i - 1] != g:
            out.append(f"<td class='k' rowspan='{groups.count(g)}'>{esc(GROUP_LABELS.get(g, g))}</td>")
        out.append(f"<td class='k'>{esc(KERNEL_LABELS.get(k, k))}</td>")
        for p in probes:
            c = by_key.get((g, k, p))
            tip = esc("; ".join(c.problems + [f"{len(c.failed)} failed launch(es)"] * bool(c.failed))) if c else ""
            if c is not None and c.not_built:
                out.append(f"<td class='na' colspan='2' title='{tip}'>not built</td>")
                continue
            if c is None or c.slowdown is None:
                out.append(f"<td class='na' title='{tip or 'not measured'}'>&ndash;</td>")
            else:
                out.append(f"<td title='{tip}'>{c.slowdown:.2f}&times;{'*' if c.failed else ''}</td>")
            if c is None or c.extra_regs is None:
                out.append(f"<td class='na' title='{tip or 'not measured'}'>&ndash;</td>")
            elif c.registers_note:
                out.append(f"<td class='fewer' title='{esc(c.registers_note)}'>{c.extra_regs:+d}&dagger;</td>")
            else:
                out.append(f"<td>{c.extra_regs:+d}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    out.append("<p>slowdown = median over launches of probed / pruned kernel time; +regs = probed &minus; pruned "
               "registers (ptxas), signed. * = some launches failed and were left out. &ndash; = not measured; not "
               "built = the probe engine could not build this probe for the kernel, which then ran unprobed "
               f"(hover for the reason). {esc(FEWER_LEGEND).replace(FEWER_MARK, '&dagger;')}.</p></body></html>")
    return "\n".join(out) + "\n"
