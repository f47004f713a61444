"""Fig. 11: the largest probe memory of each model x probe vs. the workload's own peak memory.

Input layout (the dynamic notebook's ``--memusage`` runs of each torch.compile'd sub-module)::

    <root>/<model>/<probe>/<sub>/stdout.log              workload prints "max memory: <bytes>"
    <root>/<model>/<probe>/<sub>/<tracedir>/event.log    "[exec] probe-mem <bytes> (bytes)" per launch

Per model x probe:

* probe memory = the maximum ``[exec] probe-mem`` over ALL launches of ALL trace folders of ALL
  sub-modules (each launch allocates its probe buffers anew, so the peak is one launch's need);
* workload memory = the FIRST ``max memory:`` line of each sub-module's stdout.log, largest over
  the sub-modules: the artifact's Fig. 11 loop breaks after the first line of a file, and so do we
  (:data:`WORKLOAD_MEMORY_RULE`; a file with several lines is named in the output with the values
  left out). Lines are read as that loop reads them: a line counts when it starts with the tag, and
  lines end at a newline only. The value is one byte count (``max memory: <n>``, optionally
  ``bytes``); anything else is named as unreadable and the next line is tried.

A missing stdout.log / event.log, a sub-module without trace folder or an unreadable value is listed
for its model and the rest is still reported.

    python max_mem/max_mem.py [<root>] [--out DIR] [--json]

The numbers and the printed text are :mod:`.fast` (numpy only); this module adds the table files, the
results JSON and the figure (drawn here, or collected from the command line's figure process).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from neutrino_ae.atomic import write_text
from neutrino_ae.bundle.context import Bundle
from neutrino_ae.report.figure_process import FigureProcess, draw
from neutrino_ae.report.results import SectionResult, write_results
from neutrino_ae.report.summary import summary_row

from .analysis import (  # noqa: F401  (re-exported for callers)
    _PROBE_TRUTH,
    _WORKLOAD_TRUTH,
    PAPER_REF,
    Entry,
    _truth_value,
    human_bytes,
    table,
    workload_peaks,
)
from .fast import (  # noqa: F401  (re-exported for callers)
    MAX_MEMORY_TAG,
    SECTION,
    WORKLOAD_MEMORY_RULE,
    Measured,
    _rule_lines,
    discover,
    measure,
    measure_entry,
    read_max_memory,
    read_max_memory_lines,
    several_lines_note,
)
from .figure_inputs import figure_job


def analyze(root: str | Path, out_dir: str | Path, bundle: Bundle | None = None, measured: Measured | None = None,
            figures: FigureProcess | None = None) -> SectionResult:
    """Fig. 11 from ``root`` (the max_mem folder); writes figure, table and JSON into ``out_dir``.
    ``bundle``: the run's bundle; without it (a command line) the one holding ``root``, found from its path.
    ``measured``: :func:`.fast.measure` of it when done already; ``figures``: the command line's figure
    process, sent :func:`.figure_inputs.figure_job` (without it the figure is drawn here)."""
    m = measure(root, bundle) if measured is None else measured
    out, entries, bundle = Path(out_dir), m.entries, m.bundle
    synthetic = bundle.synthetic
    df = table(entries)
    notes = m.notes
    drawn = draw(figure_job(m, out)) if figures is None else None
    summary = []
    for e in entries:
        key = f"{e.model}.{e.probe}"
        gt_probe = _truth_value(e.ground_truth, *_PROBE_TRUTH)
        gt_work = _truth_value(e.ground_truth, *_WORKLOAD_TRUTH)
        summary += [
            summary_row(SECTION, f"{key}.probe_mem_max", e.probe_mem_max, "bytes", PAPER_REF, bundle.kind, gt_probe),
            summary_row(SECTION, f"{key}.workload_max", e.workload_max, "bytes", PAPER_REF, bundle.kind, gt_work),
            summary_row(SECTION, f"{key}.probe_over_workload", e.ratio, "ratio", PAPER_REF, bundle.kind,
                        gt_probe / gt_work if gt_probe is not None and gt_work else None),
        ]
    payload = {
        "paper_ref": PAPER_REF,
        "bundle_kind": bundle.kind,
        "synthetic": synthetic,
        "root": str(m.root),
        "entries": [{**asdict(e), "ratio": e.ratio} for e in entries],
        "workload_peaks": workload_peaks(entries),
        "problems_by_model": m.problems_by_model,
        "workload_memory_rule": WORKLOAD_MEMORY_RULE,
        "workload_memory_notes": notes,
        "summary": summary,
    }
    written = write_results(out, SECTION, payload, input_path=m.root, tables={SECTION: df}, bundle=bundle)
    md = written[f"{SECTION}.md"]
    write_text(md, md.read_text(encoding="utf-8") + "\n" + _rule_lines(notes, markdown=True) + "\n")
    # The PNG under "figure", the SVG under "figure.svg" (style.save_figure_files' key form).
    pics = list((figures.join() if drawn is None else drawn).values())
    files = {"figure": pics[0], **{f"figure.{p.suffix[1:]}": p for p in pics[1:]}, **written}
    text = "\n".join([*m.lines(), f"wrote {files['figure']}"])
    return SectionResult(SECTION, payload, files, {SECTION: df}, summary, text)


def analyze_bundle(bundle: Bundle, out_dir: str | Path) -> SectionResult:
    """The section entry point: Fig. 11 from the run's bundle."""
    return analyze(bundle.path("max_mem"), out_dir, bundle=bundle)
