"""Fig. 11's inputs: the ``max_mem/<model>/<probe>/<sub>/`` folders read (each sub-module's
``stdout.log`` for the workload's memory, its trace folders' ``event.log`` for the probe's), each
model x probe's peaks (:func:`measure_entry`) with its ground truth attached: the section's ``load``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from neutrino_ae.errors import InputError
from neutrino_ae.formats.eventlog import parse_event_log
from neutrino_ae.formats.inputs import MiB, read_text_input
from neutrino_ae.formats.tracedir import trace_dir_order_key
from neutrino_ae.report.command.paths import missing_reason
from neutrino_ae.report.section.driver import Source

from .analysis import MODEL_ORDER, PROBE_ORDER, SECTION, Entry, Measured, _order, _truth

MAX_MEMORY_TAG = "max memory:"

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
            mem = parsed.probe_mem()  # complete launches, NaN where a launch has no probe-mem line
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


def load(source: Source) -> Measured:
    """The section's ``load``: every model x probe under the max_mem folder ``source.paths[0]``."""
    root = Path(source.paths[0])
    runs, problems_by_model = discover(root)
    if not runs:
        raise InputError(root, "no <model>/<probe>/ folders found")
    entries = [measure_entry(m, p, d) for m, p, d in runs]
    gt: Any = source.bundle.ground_truth(SECTION)
    for e in entries:
        e.ground_truth = _truth(gt, e.model, e.probe)
    for e in entries:
        if e.problems:
            problems_by_model.setdefault(e.model, []).extend(e.problems)
    return Measured(root, source.bundle, entries, problems_by_model)
