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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from neutrino_ae.atomic import write_text
from neutrino_ae.bundle.context import Bundle, bundle_of
from neutrino_ae.errors import InputError
from neutrino_ae.formats.eventlog import parse_event_log
from neutrino_ae.formats.inputs import MiB, read_text_input
from neutrino_ae.formats.tracedir import trace_dir_order_key
from neutrino_ae.report import style
from neutrino_ae.report.paths import missing_reason
from neutrino_ae.report.results import SectionResult, write_results
from neutrino_ae.report.summary import summary_row

from .analysis import (  # noqa: F401  (re-exported for callers)
    _PROBE_TRUTH,
    _UNITS,
    _WORKLOAD_TRUTH,
    MODEL_ORDER,
    PAPER_REF,
    PROBE_ORDER,
    Entry,
    _models_probes,
    _order,
    _truth,
    _truth_value,
    human_bytes,
    table,
    workload_peaks,
)
from .figures import WORKLOAD_COLOR, _byte_ticks, draw  # noqa: F401  (re-exported for callers)

SECTION = "max_mem"
MAX_MEMORY_TAG = "max memory:"

#: Which ``max memory:`` line is the workload's memory; said in the results JSON, the text and the table note.
WORKLOAD_MEMORY_RULE = ("workload memory = the first 'max memory:' line of each stdout.log, largest over the "
                        "sub-modules (the artifact's Fig. 11 loop); a stdout.log may hold several: the first "
                        "readable one is used and the later ones are listed")

_BYTE_UNITS = ("bytes", "(bytes)", "B")


def read_max_memory_lines(path: str | Path) -> tuple[list[int], list[str]]:
    """Every readable ``max memory: <bytes>`` value of a stdout.log in file order, and problems
    (unreadable values, a cut last line, no line at all)."""
    path = Path(path)
    text = read_text_input(path, "stdout.log", 256 * MiB)
    values: list[int] = []
    problems = []
    # Lines as the artifact's loop sees them (a text-mode read split on "\n"): "\r\n" and "\r" end a
    # line, other Unicode line breaks (\x0c, \u2028, ...) do not.
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    cut = lines.pop()
    if cut.startswith(MAX_MEMORY_TAG):  # the workload was cut off mid-line: its last value is incomplete
        problems.append(f"{path}: last line {cut.strip()[:80]!r} has no newline (output cut short); excluded")
    for lineno, line in enumerate(lines, 1):
        if not line.startswith(MAX_MEMORY_TAG):
            continue
        words = line[len(MAX_MEMORY_TAG):].split()
        value = _byte_count(words[0]) if len(words) == 1 or (len(words) == 2 and words[1] in _BYTE_UNITS) else None
        if value is None:
            problems.append(f"{path}: line {lineno}: {line.strip()[:80]!r} is not a byte count")
        else:
            values.append(value)
    if not values and not problems:
        problems.append(f"{path}: no '{MAX_MEMORY_TAG} <bytes>' line")
    return values, problems


def _byte_count(word: str) -> int | None:
    try:
        value = float(word)
    except ValueError:
        return None
    return int(value) if np.isfinite(value) and value >= 0 else None


def read_max_memory(path: str | Path) -> tuple[int | None, list[str]]:
    """The workload memory of one stdout.log: its first readable ``max memory:`` value (the artifact's
    reading, :data:`WORKLOAD_MEMORY_RULE`), and problems."""
    values, problems = read_max_memory_lines(path)
    return (values[0] if values else None), problems


def several_lines_note(path: str | Path, values: Sequence[int]) -> str | None:
    """The output's note for a stdout.log with several values: which one is used, which are left out."""
    if len(values) < 2:
        return None
    later = ", ".join(str(v) for v in values[1:6]) + (", ..." if len(values) > 6 else "")
    return f"{path}: {len(values)} '{MAX_MEMORY_TAG}' lines, the first ({values[0]}) is used; later: {later}"


def _subdirs(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def measure_entry(model: str, probe: str, probe_dir: str | Path) -> Entry:
    """Peaks of one ``<model>/<probe>/`` folder over all its sub-modules."""
    probe_dir = Path(probe_dir)
    entry = Entry(model, probe, str(probe_dir))
    subs = _subdirs(probe_dir)
    if not subs:
        entry.problems.append(f"{probe_dir}: no sub-module folders")
    for sub in subs:
        entry.subs.append(sub.name)
        stdout = sub / "stdout.log"
        if stdout.is_file():
            values, problems = read_max_memory_lines(stdout)
            entry.problems += problems
            note = several_lines_note(stdout, values)
            if note:
                entry.notes.append(note)
            value = values[0] if values else None
            if value is not None and (entry.workload_max is None or value > entry.workload_max):
                entry.workload_max, entry.workload_source = value, str(stdout)
        else:
            entry.problems.append(f"{stdout}: missing, workload memory of this sub-module unknown")
        tdirs = sorted(_subdirs(sub), key=trace_dir_order_key)  # collection order (formats.tracedir)
        if not tdirs:
            entry.problems.append(f"{sub}: no trace folder, probe memory of this sub-module unknown")
        for tdir in tdirs:
            log = tdir / "event.log"
            if not log.is_file():
                entry.problems.append(f"{log}: missing")
                continue
            entry.trace_dirs += 1
            parsed = parse_event_log(log)
            if parsed.cut_launch is not None:
                entry.problems.append(f"{log}: ends mid-line (run killed?); launch {parsed.cut_launch} left out")
            mem = parsed.complete_launches()["probe_mem"].to_numpy(dtype=float, na_value=np.nan)
            entry.launches += int(mem.size)
            mem = mem[np.isfinite(mem)]
            if mem.size and (entry.probe_mem_max is None or mem.max() > entry.probe_mem_max):
                entry.probe_mem_max, entry.probe_mem_source = int(mem.max()), str(log)
    if entry.probe_mem_max is None and entry.trace_dirs:
        entry.problems.append(f"{probe_dir}: no '[exec] probe-mem' line in any event.log")
    return entry


def discover(root: str | Path) -> tuple[list[tuple[str, str, Path]], dict[str, list[str]]]:
    """``(model, probe, folder)`` runs under ``root``, and models that have no probe folder at all."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(root, missing_reason(root, "no such folder (expected max_mem/<model>/<probe>/<sub>/)"))
    runs, empty = [], {}
    for model in _order([p.name for p in _subdirs(root)], MODEL_ORDER):
        probes = _order([p.name for p in _subdirs(root / model)], PROBE_ORDER)
        if not probes:
            empty[model] = [f"{root / model}: no <probe>/ folders, model not measured"]
        runs += [(model, probe, root / model / probe) for probe in probes]
    return runs, empty


def analyze(root: str | Path, out_dir: str | Path, bundle: Bundle | None = None) -> SectionResult:
    """Fig. 11 from ``root`` (the max_mem folder); writes figure, table and JSON into ``out_dir``.
    ``bundle``: the run's bundle; without it (a command line) the one holding ``root``, found from its path."""
    root = Path(root)
    out = Path(out_dir)
    runs, problems_by_model = discover(root)
    if not runs:
        raise InputError(root, "no <model>/<probe>/ folders found")
    entries = [measure_entry(m, p, d) for m, p, d in runs]
    bundle = bundle or bundle_of(root)
    synthetic = bundle.synthetic
    gt = bundle.ground_truth(SECTION)
    for e in entries:
        e.ground_truth = _truth(gt, e.model, e.probe)

    df = table(entries)
    notes = [n for e in entries for n in e.notes]
    fig = draw(entries, synthetic)
    files = style.save_figure_files(fig, out, SECTION, key="figure")
    for e in entries:
        if e.problems:
            problems_by_model.setdefault(e.model, []).extend(e.problems)
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
        "root": str(root),
        "entries": [{**asdict(e), "ratio": e.ratio} for e in entries],
        "workload_peaks": workload_peaks(entries),
        "problems_by_model": problems_by_model,
        "workload_memory_rule": WORKLOAD_MEMORY_RULE,
        "workload_memory_notes": notes,
        "summary": summary,
    }
    files.update(write_results(out, SECTION, payload, input_path=root, tables={SECTION: df}, bundle=bundle))
    md = files[f"{SECTION}.md"]
    write_text(md, md.read_text(encoding="utf-8") + "\n" + _rule_lines(notes, markdown=True) + "\n")
    return SectionResult(SECTION, payload, files, {SECTION: df}, summary,
                         _text(entries, df, problems_by_model, notes, synthetic, files["figure"]))


def _rule_lines(notes: Sequence[str], markdown: bool = False) -> str:
    """The workload-memory rule, and the stdout.log files it left lines of (the text's and the table's note)."""
    lines = [f"_{WORKLOAD_MEMORY_RULE}._" if markdown else f"{WORKLOAD_MEMORY_RULE}."]
    if notes:
        lines.append(f"{len(notes)} stdout.log file(s) with several 'max memory:' lines:")
        if markdown:
            lines.append("")
        lines += [("- " if markdown else "  ") + n for n in notes]
    return "\n".join(lines)


def _text(entries: Sequence[Entry], df: pd.DataFrame, problems: dict[str, list[str]], notes: Sequence[str],
          synthetic: bool, figure: Path) -> str:
    lines = [f"{PAPER_REF}: maximum probe memory vs. workload peak" + (" [SYNTHETIC sample data]" if synthetic else "")]
    show = df[["model", "probe", "probe_mem", "workload", "probe_over_workload"]].copy()
    show["probe_over_workload"] = [("-" if pd.isna(v) else f"{v:.3g}") for v in show["probe_over_workload"]]
    lines.append(show.to_string(index=False))
    lines.append(_rule_lines(notes))
    for what, names, attr in (("probe-memory", _PROBE_TRUTH, "probe_mem_max"),
                              ("workload", _WORKLOAD_TRUTH, "workload_max")):
        checked = []
        for e in entries:
            t = _truth_value(e.ground_truth, *names)
            if t is not None and getattr(e, attr) is not None:
                checked.append(getattr(e, attr) == int(t))
        if checked:
            lines.append(f"ground truth: {sum(checked)}/{len(checked)} {what} peaks equal the injected value")
    if problems:
        lines.append("missing or unusable inputs (the rest is reported):")
        for model, items in problems.items():
            lines.append(f"  {model}: {len(items)}")
            lines += [f"    {p}" for p in items]
    lines.append(f"wrote {figure}")
    return "\n".join(lines)


def analyze_bundle(bundle: Bundle, out_dir: str | Path) -> SectionResult:
    """The section entry point: Fig. 11 from the run's bundle."""
    return analyze(bundle.path("max_mem"), out_dir, bundle=bundle)

