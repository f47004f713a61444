"""A DMAT figure's inputs, read and binned: ``load`` (neutrino_ae/report/section/driver.py) of the section.

``python dmat/dmat.py <trace.bin | file.dmat | tracedir>`` draws one figure; a notebook run (the bundle's
``dmat/`` folder) each of ``fig1``, ``fig10a/b/c`` whose ``.dmat`` is there.

* A raw ``dmat`` trace (``result/*.bin``, or a trace directory: its newest result) is sparsified into
  ``<name>.dmat`` in the output folder and binned for the figure in the same pass, clock range by
  clock range, in memory bounded whatever the trace size (formats.dmat.stream); the ``.dmat`` is written
  once every input (event.log, tensor.trace) has been read, so a failing run leaves nothing behind.
* A ``.dmat`` file is read in batches (bounded memory) twice: once for what the figure needs up front,
  once to bin it.

Tensor names come from the launch's pointer arguments (``[exec] <ns> param <hex> ...`` in
``event.log``) matched to ``tensor.trace`` rows (decimal ``data_ptr`` + ``nbytes`` -> ``arg_name``).
The launch is the one whose ``[exec] save`` names the plotted result file, else the last launch
with parameters. A parameter missing from ``tensor.trace`` is named ``param<i>`` and extends to the
next parameter's address (size unknown). A page that two tensors share belongs to the lower
address. Pages of no tensor are grouped as ``other``.

Where the naming files are looked for:
  * trace directory or ``<tracedir>/result/*.bin``: that trace directory;
  * a bare ``<dir>/<fig>.dmat``: the newest trace directory under ``<dir>/raw/<fig>/`` (the sample
    bundle's layout; newest by the time in its name, neutrino_ae/formats/tracedir.py), else
    ``<dir>/<fig>/`` if it is a trace directory; otherwise every page is drawn as ``unnamed``.
    The folder used is ``naming.trace_dir`` in the results and ends the figure's text line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from neutrino_ae.errors import InputError, TraceFormatError, refuse_pickle
from neutrino_ae.formats.bintrace import BinTrace, open_trace
from neutrino_ae.formats.dmat import DmatData, DmatHead, drop_unfilled, iter_dmat, open_dmat
from neutrino_ae.formats.dmat.sparsify import sparsify
from neutrino_ae.formats.dmat.stream import BUCKET_RECORDS, Chunks, DmatScan, scan, write_streamed
from neutrino_ae.formats.level import Level
from neutrino_ae.formats.records import DMAT
from neutrino_ae.formats.tracedir import TraceDir, find_trace_dirs, is_trace_dir
from neutrino_ae.report.command.paths import missing_reason

from . import FIGURES, SECTION
from .analysis import (
    UNNAMED,
    BinnedFigure,
    TensorRange,
    attribute_pages,
    ranges_from_tensor_trace,
    tensor_ranges,
)
from .binning import DEFAULT_XBINS, DEFAULT_YBINS, DmatBinner
from .memory import MemoryGuard, out_of_memory

if TYPE_CHECKING:
    from neutrino_ae.bundle.context import Bundle
    from neutrino_ae.report.section.driver import Source

# --------------------------------------------------------------------------------------------------
# The section's load


def load(source: Source) -> BinnedFigure | list[BinnedFigure]:
    """The figure of the one input a command line names (its ``name``, ``xbins``, ``ybins`` options), or,
    given the bundle's ``dmat/`` folder (or its root), each figure whose ``.dmat`` is there."""
    path = source.paths[0]
    xbins, ybins = source.options.get("xbins") or DEFAULT_XBINS, source.options.get("ybins") or DEFAULT_YBINS
    bundle = source.bundle
    if bundle.root is not None and path.is_dir() and path.resolve() in (bundle.root.resolve(),
                                                                         bundle.path(SECTION.name).resolve()):
        base = path / "dmat" if (path / "dmat").is_dir() else path
        inputs = [base / f"{f}.dmat" for f in FIGURES if (base / f"{f}.dmat").is_file()]
        if not inputs:
            raise InputError(base, f"holds none of {', '.join(f + '.dmat' for f in FIGURES)}")
        return [read_figure(p, bundle, source.out, None, xbins, ybins) for p in inputs]
    return read_figure(path, bundle, source.out, source.options.get("name"), xbins, ybins)


def read_figure(path: str | os.PathLike[str], bundle: Bundle, out: Path | None, name: str | None = None,
                xbins: int = DEFAULT_XBINS, ybins: int = DEFAULT_YBINS) -> BinnedFigure:
    """One figure's input read, named and binned; a raw trace's ``.dmat`` written to ``out`` meanwhile."""
    guard = None
    try:
        inp = load_input(path, out)
        guard = inp.raw.guard if inp.raw is not None else None
        # Zero-filled count slots are not accesses: a .dmat from the artifact's sparsifier keeps them as
        # a page-0 cell at clock 0 (see formats/dmat/__init__.py); they are left out of the plot and reported.
        if name:
            inp.name = name
            if inp.sparsified is not None:
                inp.sparsified = inp.sparsified.with_name(f"{name}.dmat")
        labels, names, ranges = tensor_names(inp)
        stats = inp.stats
        table = guard.check_figure(stats.pages.size, len(names), ybins, xbins) if guard is not None else None
        binner = DmatBinner(stats.pages, labels, names, stats.max_clock, xbins, ybins, stats.accesses, table)
        if inp.raw is not None:
            assert inp.sparsified is not None
            clock_entries = write_raw(inp.raw, inp.sparsified, binner.add)
        else:
            assert inp.dmat is not None
            for batch in inp.dmat.batches():
                binner.add(batch)
            clock_entries = inp.dmat.clock_entries
        plot = binner.result()
    except MemoryError as exc:
        what = "this DMAT figure"
        raise (guard.out_of_memory(exc, what) if guard is not None else out_of_memory(path, exc, what)) from None
    truth = bundle.ground_truth(SECTION.name)
    truth = truth.get(inp.name) if isinstance(truth, dict) and isinstance(truth.get(inp.name), dict) else None
    nm = inp.naming
    return BinnedFigure(inp.name, Path(path), inp.source, inp.sparsified,
                        bundle.relative(nm.trace_dir) if nm.trace_dir else None, nm.event_log, nm.tensor_trace,
                        ranges, plot, stats.accesses, stats.unfilled, clock_entries, inp.level_note, truth,
                        bundle.synthetic, bundle.collected(SECTION.name).get("workloads"))


# --------------------------------------------------------------------------------------------------
# Inputs


@dataclass
class Naming:
    """Where tensor names come from (any part may be missing)."""

    trace_dir: Path | None = None
    event_log: Path | None = None
    tensor_trace: Path | None = None
    result_name: str | None = None  # file name of the plotted result/*.bin, to pick the launch


@dataclass
class RawTrace:
    """A raw dmat trace, read again (in chunks of ``chunk_bytes``) by each pass of the streaming sparsifier;
    ``guard``: its memory checks (sizes the passes to the memory available)."""

    chunks: Chunks
    scan: DmatScan
    source: Path
    guard: MemoryGuard | None = None


@dataclass
class DmatFile:
    """A ``.dmat`` input, read in batches (bounded memory) twice: once here for what the figure needs
    up front, once to bin it. Unfilled cells (formats.dmat.filled_mask: the artifact sparsifier's page-0
    cell of zero-filled slots, or an all-ones clock) are left out."""

    head: DmatHead
    pages: np.ndarray  # distinct, ascending
    max_clock: int
    accesses: int
    unfilled: int
    clock_entries: int

    @classmethod
    def scan(cls, path: Path) -> DmatFile:
        head = open_dmat(path)
        max_clock = accesses = unfilled = clock_entries = 0
        for batch in _counted_batches(head):
            if batch.clocks.size:
                max_clock = max(max_clock, int(batch.clocks.max()))
            accesses += batch.num_accesses
            unfilled += batch.unfilled
            clock_entries += batch.clocks.size
        pages = np.unique(head.pages)
        return cls(head, pages[pages != 0], max_clock, accesses, unfilled, clock_entries)

    def batches(self) -> Iterator[DmatData]:
        return _counted_batches(self.head)


def _counted_batches(head: DmatHead) -> Iterator[DmatData]:
    """The file's batches without unfilled cells, each counting what it dropped in ``unfilled``."""
    return (drop_unfilled(b) for b in iter_dmat(head))


@dataclass
class DmatInput:
    name: str  # figure stem, e.g. "fig1"
    source: Path
    naming: Naming
    sparsified: Path | None = None  # the .dmat we write, for raw inputs
    raw: RawTrace | None = None  # a raw trace (sparsified and binned in one streamed pass) ...
    dmat: DmatFile | None = None  # ... or a .dmat file
    level_note: str = ""  # how the section's level was decided, when the file could not tell

    @property
    def stats(self) -> DmatScan | DmatFile:
        """What is known before binning: ``pages`` (distinct, ascending), ``max_clock``, ``accesses``,
        ``unfilled``."""
        stats = self.raw.scan if self.raw is not None else self.dmat
        assert stats is not None
        return stats


def _open_result(trace_dir: Path | None, result: Path) -> BinTrace:
    if trace_dir is not None and (trace_dir / "probe.toml").is_file():
        return TraceDir(trace_dir).open_result(result)
    # Without probe.toml a v1 file of 1-thread blocks fits either level; the dmat probe saves per
    # thread (its datamodel is thread:16:count), as the artifact's dmat.cc reads every file.
    return open_trace(result, fallback=Level.THREAD)


def level_note(trace: BinTrace, section: int = 0) -> str:
    """What the figure and results say when the section's level was assumed rather than read."""
    if trace.section(section).level_from != "assumed":
        return ""
    return ("section level assumed thread (the dmat probe's datamodel): the v1 file does not store it, "
            "no probe.toml beside it, and its length fits either level")


def _naming_for_trace_dir(trace_dir: Path, result_name: str | None) -> Naming:
    ev = trace_dir / "event.log"
    tt = trace_dir / "tensor.trace"
    # present but unreadable (a folder, a FIFO, no permission) is an error, not "no naming"
    return Naming(trace_dir, ev if ev.exists() else None, tt if tt.exists() else None, result_name)


def naming_for_dmat(path: Path) -> Naming:
    """Naming files for a bare ``<dir>/<fig>.dmat`` (rule in the module docstring)."""
    stem = path.stem
    raw = path.parent / "raw" / stem
    if raw.is_dir():
        dirs = find_trace_dirs(raw)  # raw itself when it is a trace dir, else its collections, oldest first
        if dirs:
            res = TraceDir(dirs[-1]).results()
            return _naming_for_trace_dir(dirs[-1], res[-1].name if res else None)
    side = path.parent / stem
    if is_trace_dir(side):
        return _naming_for_trace_dir(side, None)
    return Naming()


def figure_name(path: Path) -> str:
    """``fig1`` for ``dmat/fig1.dmat`` and for ``dmat/raw/fig1/<tracedir>/...``; else the trace dir / file stem."""
    parts = path.resolve().parts
    for i in range(len(parts) - 2, 0, -1):  # the bundle's dmat/raw/<fig>/... layout
        if parts[i] == "raw" and parts[i - 1] == "dmat" and (i + 1 < len(parts) - 1 or path.is_dir()):
            return parts[i + 1]
    if path.suffix == ".bin" and path.parent.name == "result":
        return path.parent.parent.name
    return path.stem if path.suffix else path.name


#: Bytes of raw trace read per chunk by the streaming sparsifier (one buffer, reused).
RAW_CHUNK_BYTES = 8 << 20


def _check_thread_level(trace: BinTrace, section: int) -> None:
    sec = trace.section(section)
    if sec.level != Level.THREAD:
        raise TraceFormatError(trace.path, f"section {section} is {sec.level.name.lower()}-level; the dmat probe "
                                           "saves per thread (wrong probe?)")


def sparsify_trace(trace: BinTrace, section: int = 0, chunk_bytes: int = 64 << 20) -> DmatData:
    """Per-(clock, page) counts of a dmat trace held in memory, read in chunks of whole blocks (memory
    bounded by the distinct (clock, page) pairs; :func:`load_input` streams instead)."""
    _check_thread_level(trace, section)
    return sparsify(chunk for _, chunk in trace.iter_chunks(section, DMAT, chunk_bytes))


def load_input(path: str | os.PathLike[str], out_dir: Path | None, section: int = 0) -> DmatInput:
    """The input at ``path`` opened and scanned (nothing written); a raw trace's ``.dmat`` goes to ``out_dir``."""
    p = Path(path)
    refuse_pickle(p, "Pass the .dmat or the raw .bin trace instead.")
    if not p.exists():
        raise InputError(p, missing_reason(p, "no such file or directory"))
    name = figure_name(p)
    if p.is_dir():
        if not is_trace_dir(p):
            raise InputError(p, "is a directory but not a trace directory "
                                "(no result/, event.log, probe.toml or kernel/)")
        result = TraceDir(p).newest_result()
        trace_dir = p
    elif p.suffix.lower() == ".dmat":
        return DmatInput(name, p, naming_for_dmat(p), dmat=DmatFile.scan(p))
    elif p.suffix.lower() == ".bin":
        result = p
        trace_dir = p.parent.parent if p.parent.name == "result" and is_trace_dir(p.parent.parent) else None
    else:
        raise InputError(p, "expected a dmat result .bin, a .dmat file or a trace directory")
    trace = _open_result(trace_dir, result)
    _check_thread_level(trace, section)
    sec = trace.section(section)
    raw = scan_raw(trace, section, MemoryGuard(result, sec.units_per_block * sec.size, RAW_CHUNK_BYTES))
    naming = _naming_for_trace_dir(trace_dir, result.name) if trace_dir else Naming()
    if out_dir is None:
        raise ValueError("a raw dmat trace is sparsified into the output folder: none was given")
    # The sparsified .dmat is written by read_figure once every input (event.log, tensor.trace) has
    # been read: a failing run leaves nothing behind.
    return DmatInput(name, result, naming, out_dir / f"{name}.dmat", raw=raw, level_note=level_note(trace, section))


class TraceChunks:
    """A raw trace's DMAT records in chunks of whole blocks (about ``chunk_bytes``; one reused buffer): the
    chunk source each pass calls (formats.dmat.stream.Chunks)."""

    def __init__(self, trace: BinTrace, section: int, chunk_bytes: int) -> None:
        self.trace, self.section, self.chunk_bytes = trace, section, chunk_bytes

    def __call__(self) -> Iterator[np.ndarray]:
        return (c for _, c in self.trace.iter_chunks(self.section, DMAT, self.chunk_bytes, reuse=True))


def scan_raw(trace: BinTrace, section: int = 0, guard: MemoryGuard | None = None) -> RawTrace:
    """The first pass over a raw dmat trace (pages, clocks, unfilled slots); see formats.dmat.stream.
    ``guard``: chunks and sample sized to the memory available (else the module's constants)."""
    _check_thread_level(trace, section)
    if guard is None:
        chunks = TraceChunks(trace, section, RAW_CHUNK_BYTES)
        return RawTrace(chunks, scan(chunks), trace.path)
    chunks = TraceChunks(trace, section, guard.plan.chunk_bytes)
    info = scan(chunks, guard.plan.sample_max, guard.plan.page_table_span, guard.check_pages)
    return RawTrace(chunks, info, trace.path, guard)


def write_raw(raw: RawTrace, dest: Path, on_batch: Callable[[DmatData], None] | None = None) -> int:
    """The ``.dmat`` of a scanned raw trace, written to ``dest`` (streamed, in bounded memory: with a guard,
    sized to the memory left); returns the number of clock entries."""
    held = written = None
    overlap = True
    if raw.guard is not None:
        plan = raw.guard.plan_write(not raw.scan.packs())
        if isinstance(raw.chunks, TraceChunks):
            raw.chunks.chunk_bytes = min(raw.chunks.chunk_bytes, plan.chunk_bytes)
        held, written = plan.memory_bytes, plan.bucket_records
        # Writing one batch while counting the next holds one more bucket: only where the buckets are at
        # their cap (memory is plentiful), never where the plan had to shrink them.
        overlap = plan.bucket_records >= BUCKET_RECORDS
    return write_streamed(dest, raw.chunks, raw.scan, on_batch=on_batch, source=raw.source,
                          bucket_records=written, memory_bytes=held, overlap=overlap).num_clocks


# --------------------------------------------------------------------------------------------------
# Tensor attribution


def launch_params(event_log: Path, result_name: str | None) -> tuple[int, ...]:
    from neutrino_ae.formats.eventlog import parse_event_log

    launches = parse_event_log(event_log).launches
    if len(launches) == 0:
        return ()
    if result_name and "save_path" in launches:
        hit = launches[launches["save_path"].map(lambda s: isinstance(s, str) and Path(s).name == result_name)]
        if len(hit):
            return tuple(int(x) for x in (hit.iloc[-1]["params"] or ()))
    with_params = launches[launches["params"].map(lambda t: bool(t))]
    return tuple(int(x) for x in with_params.iloc[-1]["params"]) if len(with_params) else ()


def tensor_names(inp: DmatInput) -> tuple[np.ndarray, list[str], list[TensorRange]]:
    """Page labels for the (sorted) pages of ``inp`` and their names; all ``unnamed`` without naming files."""
    pages = inp.stats.pages
    nm = inp.naming
    tensors = None
    if nm.tensor_trace is not None:
        from neutrino_ae.formats.tensortrace import read_tensor_trace

        tensors = read_tensor_trace(nm.tensor_trace)
    ranges: list[TensorRange] = []
    if nm.event_log is not None:
        ranges = tensor_ranges(launch_params(nm.event_log, nm.result_name), tensors)
        if pages.size:
            # Scalar arguments (sizes, strides) sit in the same param list: an argument unknown to
            # tensor.trace counts as a pointer only if it points into the accessed address range.
            lo, hi = int(pages.min()), int(pages.max()) + 0x10000
            ranges = [r for r in ranges if r.nbytes is not None or lo <= r.start < hi]
    elif tensors is not None:
        ranges = ranges_from_tensor_trace(tensors)
    if not ranges:
        return np.zeros(pages.size, np.int64), [UNNAMED], []
    labels, names = attribute_pages(pages, ranges)
    return labels, names, sorted(ranges, key=lambda r: r.start)
