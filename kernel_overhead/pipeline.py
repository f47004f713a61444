"""Table 2: kernel slowdown and extra registers per kernel x probe, from benchmark-mode traces.

Input layout (the dynamic notebook's collection, ``<test>/<metric>/{stdout.log,trace}``)::

    <root>/{cutlass_op,triton_op,pytorch_op}/<kernel>/<probe>/trace/{event.log,kernel/<i>_<sha1>/process.log}

Per kernel x probe:

* slowdown = MEDIAN of ``impact`` (probed kernel time / pruned original time) over the launches'
  ``[benchmark] ... impact <r> <rc>`` lines. The median, not the mean, because one launch hit by
  a clock change or a context switch should not move a row of the table.
* launches that failed (``[exec] failed`` or a non-zero rc) are listed (launch index and why) and
  left out of the median; launches with no benchmark line at all are counted separately.
* extra registers = probed - pruned from each kernel folder's ``process.log`` (ptxas lines), signed
  as ptxas gives them: ptxas allocates each build on its own, so a probed build can get fewer
  registers than the pruned one (the real engine's dmat build of a register-heavy kernel does). A
  negative value is shown marked "probed build allocated fewer registers" (``registers_note`` in the
  JSON, ``notes`` in the table, a dagger in the text, HTML and figure). When a trace holds several
  kernels the table shows the largest value; all of them are in the JSON.

Missing files (event.log, process.log, a probe's trace folder) are listed per kernel x probe and the
rest of the table is still produced.

    python kernel_overhead/kernel_overhead.py [<root>] [--out DIR] [--json]

The numbers and the printed text are :mod:`.fast` (numpy only); this module adds the tables, the HTML, the
results JSON and the figure (drawn here, or collected from the command line's figure process).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from neutrino_ae.atomic import write_text
from neutrino_ae.bundle.context import Bundle
from neutrino_ae.report.figure_process import FigureProcess, draw
from neutrino_ae.report.results import SectionResult, write_results

from .analysis import (  # noqa: F401  (re-exported for callers)
    FEWER_LEGEND,
    GROUP_LABELS,
    GROUPS,
    KERNEL_LABELS,
    KERNEL_ORDER,
    PAPER_REF,
    PROBE_ORDER,
    Cell,
    _order,
    _ordered_probes,
    _summary_rows,
    _truth,
    _truth_lines,
    _truth_value,
    long_table,
    regs_label,
    wide_table,
)
from .fast import (  # noqa: F401  (re-exported for callers)
    SECTION,
    Measured,
    discover,
    find_trace_dirs,
    measure,
    measure_cell,
)
from .figure_inputs import TITLE, figure_job
from .table_html import render_html


def draw_heatmap(cells: Sequence[Cell], synthetic: bool, title: str):
    """Table 2's heatmap (:func:`.figures.draw_heatmap`; matplotlib imported on the call)."""
    from .figures import draw_heatmap as draw_it

    return draw_it(cells, synthetic, title)


def analyze(root: str | Path, out_dir: str | Path, groups: Sequence[str] | None = None,
            stem: str | None = None, bundle: Bundle | None = None, measured: Measured | None = None,
            figures: FigureProcess | None = None) -> SectionResult:
    """Build Table 2 from ``root`` and write figure, tables (CSV/Markdown/HTML) and JSON into ``out_dir``.

    ``groups`` restricts to some of ``cutlass_op``/``triton_op``/``pytorch_op``; ``stem`` names the
    output files (default ``kernel_overhead``, or ``kernel_overhead_<group>`` for one group). ``bundle``:
    the run's bundle; without it (a command line) the one holding ``root``, found from its path.
    ``measured``: :func:`.fast.measure` of it when done already; ``figures``: the command line's figure
    process, sent :func:`.figure_inputs.figure_job` (without it the figure is drawn here).
    """
    m = measure(root, groups, stem, bundle) if measured is None else measured
    out, cells, bundle, stem = Path(out_dir), m.cells, m.bundle, m.stem
    synthetic = bundle.synthetic
    drawn = draw(figure_job(m, out)) if figures is None else None
    wide, longt = wide_table(cells), long_table(cells)
    html = write_text(out / f"{stem}.html", render_html(cells, TITLE, synthetic))

    summary = _summary_rows(cells, bundle.kind)
    problems, failed = m.problems, m.failed
    payload = {
        "paper_ref": PAPER_REF,
        "bundle_kind": bundle.kind,
        "synthetic": synthetic,
        "root": str(m.root),
        "probes": _ordered_probes(cells),
        "cells": [asdict(c) for c in cells],
        "failed_launches": failed,
        "problems": problems,
        "summary": summary,
    }
    tables = {stem: wide, f"{stem}_long": longt}
    written = write_results(out, stem, payload, input_path=m.root, tables=tables, bundle=bundle)
    # The PNG under "figure", the SVG under "figure.svg" (style.save_figure_files' key form), then the HTML.
    pics = list((figures.join() if drawn is None else drawn).values())
    files = {"figure": pics[0], **{f"figure.{p.suffix[1:]}": p for p in pics[1:]}, "html": html, **written}
    text = "\n".join([*m.lines(), f"wrote {files['figure']} and {files['html']}"])
    return SectionResult(SECTION, payload, files, tables, summary, text)


def analyze_bundle(bundle: Bundle, out_dir: str | Path) -> SectionResult:
    """The section entry point: Table 2 from the run's bundle."""
    return analyze(bundle.path("kernel_overhead"), out_dir, bundle=bundle)

