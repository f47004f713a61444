"""Sec. 4.5's inputs: every block's first-warp record of each ``block_sched`` trace, with the trace's
label, bundle and ground truth: the section's ``load``. A command line reads the traces it names (each
from its own bundle); the notebooks' run its bundle's ``block_sched/`` folder: the newest raw trace, the
newest of each ``variants/<name>/`` and the fixes' timing (``timing/events.json``).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neutrino_ae.bundle.context import Bundle
from neutrino_ae.errors import InputError, TraceFormatError, refuse_pickle
from neutrino_ae.formats.bintrace import BinTrace, open_trace
from neutrino_ae.formats.level import Level
from neutrino_ae.formats.memory import ensure_fits
from neutrino_ae.formats.records import BLOCK_SCHED
from neutrino_ae.report.section.driver import Source

#: What the analysis holds per block, beyond the mapped trace (measured: about 130 B per block for
#: ``block_sched.py`` on 4.2 M blocks, records, per-SM tables, estimator and figure inputs together).
BYTES_PER_BLOCK = 160


@dataclass
class BlockRecords:
    """First-warp record of every block, in linear block-index order."""

    lstart: np.ndarray  # int64, cycles relative to the trace's earliest start
    elapse: np.ndarray  # int64
    smid: np.ndarray  # int64
    grid_size: int
    block_size: int
    clock_origin: int  # the subtracted earliest lstart (raw clock64)


def resolve_traces(path: str | os.PathLike[str]) -> list[tuple[Path, BinTrace]]:
    """A ``.bin`` trace, or every ``result/*.bin`` of a trace directory (time order, levels from probe.toml)."""
    p = Path(path)
    refuse_pickle(p, "Pass the raw trace .bin (or its trace directory) instead.")
    if not p.exists():
        from neutrino_ae.report.command.paths import missing_reason  # a symlink loop is named as one

        raise InputError(p, missing_reason(p, "no such file or directory"))
    if p.is_dir():
        from neutrino_ae.formats.tracedir import TraceDir  # reads probe.toml and event.log: pandas

        td = TraceDir(p)
        results = list(td.results())
        if not results:
            from neutrino_ae.formats.tracedir import no_result_message

            raise InputError(p, no_result_message(p))
        return [(Path(r), td.open_result(r)) for r in results]
    return [(p, open_trace(p))]


def first_warp_records(trace: BinTrace, section: int = 0) -> BlockRecords:
    """Unit 0 of every block (the first warp, whatever the block size), first record of the unit."""
    sec = trace.section(section)
    if sec.level != Level.WARP or sec.size != 16:
        raise TraceFormatError(trace.path, f"section {section} saves {sec.size} B per {sec.level.name.lower()}; a "
                                           "block_sched/warp_sched trace saves 16 B per warp (wrong probe?)")
    rec = trace.records(section, BLOCK_SCHED)
    if rec.shape[0] == 0 or rec.shape[1] == 0 or rec.shape[2] == 0:
        raise TraceFormatError(trace.path, f"section {section} holds no block_sched record")
    ensure_fits(trace.path, f"the block_sched analysis of {rec.shape[0]:,} blocks", rec.shape[0] * BYTES_PER_BLOCK)
    # The compiled split only where numba is loaded already: importing it costs more than numpy's copy.
    words = None
    if "numba" in sys.modules:
        from neutrino_ae.sched import intervals as accel

        words = accel.record_words(rec, items=rec.shape[0])
    if words is not None:
        lstart, elapse, smid = accel.split_records_kernel(words[:, 0, 0:2])
    else:
        first = np.asarray(rec[:, 0, 0])
        lstart, elapse, smid = first["lstart"], first["elapse"].astype(np.int64), first["smid"].astype(np.int64)
    origin = int(lstart.min())
    # Subtracting the earliest clock keeps exact integer arithmetic in int64.
    rel = (lstart - np.uint64(origin)).astype(np.int64)
    return BlockRecords(rel, elapse, smid, trace.header.grid_size, trace.header.block_size, origin)


@dataclass
class Trace:
    """One trace read: its label (``raw``, a variant's name, else the trace dir's), its ``.bin``, records,
    bundle and that bundle's ground truth for it (sample bundles; else None)."""

    label: str
    path: Path
    records: BlockRecords
    bundle: Bundle
    truth: dict | None


@dataclass
class Traces:
    """What ``load`` read: the traces in order and, in a notebook run, the fixes' timing file."""

    traces: list[Trace]
    timing: Path | None = None


def trace_label(path: Path, used: set[str], bundle: Bundle) -> str:
    """``variants/<name>/...`` → name; a bundle's main block_sched trace → ``raw``; else the trace dir name."""
    parts = path.resolve().parts
    if "variants" in parts and parts.index("variants") + 1 < len(parts):
        label = parts[parts.index("variants") + 1]
    elif "block_sched" in parts and "variants" not in parts and bundle.manifest_root is not None:
        label = "raw"
    else:
        label = path.parent.parent.name if path.parent.name == "result" else path.stem
    base, i = label, 2
    while label in used:
        label, i = f"{base}-{i}", i + 1
    used.add(label)
    return label


def trace_truth(path: Path, bundle: Bundle, section: str = "block_sched") -> dict | None:
    """The sample generator's truth for this trace: top level for the main trace, ``variants/<label>`` else.

    Matched by the trace's bundle-relative path (the generator records it), so labels do not matter.
    """
    truth = bundle.ground_truth(section)
    root = bundle.manifest_root
    if not isinstance(truth, dict) or root is None:
        return None
    rel = path.resolve().relative_to(root).as_posix()
    candidates = [truth, *(v for v in (truth.get("variants") or {}).values() if isinstance(v, dict))]
    for cand in candidates:
        if cand.get("trace") == rel:
            return cand
    return None


def find_bundle_traces(root: str | os.PathLike[str]) -> list[Path]:
    """In a bundle's ``block_sched/`` folder: the newest raw trace dir, then the newest of each
    ``variants/<name>/`` (newest by the time in the folder's name: neutrino_ae/formats/tracedir.py)."""
    from neutrino_ae.formats.tracedir import find_trace_dirs  # event.log and probe.toml readers: a bundle's need

    base = Path(root)
    if (base / "block_sched").is_dir():
        base = base / "block_sched"
    if not base.is_dir():
        raise InputError(base, "no such block_sched folder")
    raw = find_trace_dirs(base)
    if not raw:
        raise InputError(base, "holds no block_sched trace directory (no <tracedir>/result/)")
    variants = []
    vdir = base / "variants"
    if vdir.is_dir():
        for v in sorted(d for d in vdir.iterdir() if d.is_dir() and not d.name.startswith((".", "_"))):
            variants.extend(find_trace_dirs(v)[-1:])  # v itself when it is a trace dir
    return [raw[-1], *variants]


def read_traces(inputs: list[tuple[Path, Bundle]], section: int = 0) -> list[Trace]:
    """Every trace of ``inputs`` (``.bin`` or trace dirs, each with its bundle; a trace dir gives one per
    ``result/*.bin``), in order."""
    if not inputs:
        raise InputError(None, "no block_sched trace given")
    read = [(p, first_warp_records(t, section), owner) for path, owner in inputs for p, t in resolve_traces(path)]
    used: set[str] = set()
    return [Trace(trace_label(p, used, owner), p, rec, owner, trace_truth(p, owner)) for p, rec, owner in read]


def load(source: Source) -> Traces:
    """The section's ``load``: the traces a command line names (``--section``: the probe's section index), each
    with its own bundle; in the notebooks' run its bundle's block_sched folder (:func:`find_bundle_traces`)
    and the fixes' timing."""
    if not source.notebook:
        return Traces(read_traces(source.inputs(), source.options.get("section", 0)))
    timing = source.bundle.path("block_sched", "timing", "events.json")
    return Traces(read_traces([(p, source.bundle) for p in find_bundle_traces(source.paths[0])]),
                  timing if timing.is_file() else None)
