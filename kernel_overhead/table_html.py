"""Table 2 as a standalone HTML page (no matplotlib: written beside the figure, whoever draws it)."""

from __future__ import annotations

import html
from collections.abc import Sequence

from neutrino_ae.report.labels import SYNTHETIC_LABEL

from .analysis import FEWER_LEGEND, FEWER_MARK, GROUP_LABELS, KERNEL_LABELS, Cell, _ordered_probes


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
