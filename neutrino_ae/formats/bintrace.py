"""Binary traces ``result/<seconds>.bin``: header, section descriptors (v1 and v2), record data.

Layout (little-endian)::

    header   8 x uint32   gridDimX gridDimY gridDimZ blockDimX blockDimY blockDimZ sharedMem numProbes
    sections numProbes x 16-byte descriptors
             v1 (artifact branch): uint64 size, uint64 offset
             v2 (later main):      uint32 size, uint32 warpDiv (1 thread, 32 warp, 64 wave), uint64 offset
    data     per section at its absolute offset: [block][unit][size bytes]

``size`` is bytes per unit (both Neutrino branches: ``section.size = probe_sizes[idx]``, or the
launch's count size for a count probe). A thread-level section has blockSize units per block. A
warp-level one is allocated with ceil(blockSize/32) units per block, but the probe indexes warps
with a floor(blockSize/32) stride, so the reader views it with that stride
(:meth:`TraceHeader.device_units_per_block`; ``Section.partial_warp`` flags the blocks whose last
warp is partial). v1 does not store the level: it comes from ``probe.toml`` (pass ``levels=``) or
is inferred from the region length.

A v1 ``size`` that equals its whole region is read as the section's *total* bytes and divided by
its units (``Section.size_field`` says which reading was used). Neither branch we run writes
that; the reader tolerates it rather than rejecting such a file.

Readers never allocate from header fields: every size is checked against the file length first,
and records come back as ``np.memmap`` views (or bounded chunks from :meth:`BinTrace.iter_chunks`).
The writers are in :mod:`.bintrace_write`; :class:`~.level.Level` is the level of a section.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from neutrino_ae.errors import InputError, TraceFormatError
from neutrino_ae.formats.inputs import check_input
from neutrino_ae.formats.level import Level

HEADER_DTYPE = np.dtype(
    [
        (name, "<u4")
        for name in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem", "num_probes")
    ]
)
HEADER_BYTES = HEADER_DTYPE.itemsize  # 32
DESCRIPTOR_BYTES = 16
DESCRIPTOR_V1 = np.dtype([("size", "<u8"), ("offset", "<u8")])
DESCRIPTOR_V2 = np.dtype([("size", "<u4"), ("warp_div", "<u4"), ("offset", "<u8")])

# Limits of real launches (CUDA) and of real probes; beyond them a header is corrupt.
MAX_PROBES = 256
MAX_GRID_X = 2**31 - 1
MAX_GRID_YZ = 65535
MAX_BLOCK_THREADS = 1024
WARP_SIZE = 32

Layout = Literal["v1", "v2"]


@dataclass(frozen=True)
class TraceHeader:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int = 0

    @property
    def grid_size(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def block_size(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]

    @property
    def warps_per_block(self) -> int:
        # The writer rounds up: a 48-thread block has 2 warps.
        return math.ceil(self.block_size / WARP_SIZE)

    def units_per_block(self, level: Level | str | int) -> int:
        """Units the HOST allocates per block (ceil): what the hook driver sizes a buffer by."""
        return math.ceil(self.block_size / int(Level.parse(level)))

    def device_units_per_block(self, level: Level | str | int) -> int:
        """Units per block in the PROBE's own indexing (floor): the probe computes a warp's slot as
        ``block_idx * (blockSize / 32) + thread_idx / 32`` with integer division
        (``WARP_BUFFER_CALC`` in neutrino/probe/cuda.py). When blockSize is not a multiple of 32 the
        last, partial warp of block b writes the slot of warp 0 of block b+1, and the buffer's tail
        stays unfilled; readers index with this stride."""
        return self.block_size // int(Level.parse(level))


@dataclass(frozen=True)
class Section:
    index: int
    size: int  # bytes per unit
    offset: int  # absolute file offset of the data
    level: Level
    blocks: int
    units_per_block: int
    size_field: str = "unit"  # what the descriptor's size meant: "unit" (bytes per unit) or "total" (v1 only)
    partial_warp: bool = False  # warp-level with blockSize % 32 != 0: see TraceHeader.device_units_per_block
    #: where ``level`` came from: "file" (v2 warpDiv), "given" (probe.toml or the caller), "region" (v1, the
    #: region length fits one level only) or "assumed" (v1 without a hint, and the region fits both levels:
    #: 1-thread blocks or an empty section; the caller's ``fallback`` level, else warp)
    level_from: str = "file"

    @property
    def nbytes(self) -> int:
        return self.blocks * self.units_per_block * self.size

    @property
    def end(self) -> int:
        return self.offset + self.nbytes


class BinTrace:
    """An opened, validated binary trace. Cheap to create: data is only mapped on demand."""

    def __init__(self, path: Path, header: TraceHeader, layout: Layout, sections: tuple[Section, ...],
                 file_size: int) -> None:
        self.path = path
        self.header = header
        self.layout: Layout = layout
        self.sections = sections
        self.file_size = file_size

    def __repr__(self) -> str:
        secs = ", ".join(f"{s.level.name.lower()}:{s.size}" for s in self.sections)
        return (f"BinTrace({str(self.path)!r}, grid={self.header.grid}, block={self.header.block}, "
                f"layout={self.layout}, sections=[{secs}])")

    def section(self, index: int = 0) -> Section:
        if not -len(self.sections) <= index < len(self.sections):
            raise TraceFormatError(self.path, f"has {len(self.sections)} section(s), section {index} requested")
        return self.sections[index]

    def _records_per_unit(self, sec: Section, dtype: np.dtype) -> int:
        if sec.size % dtype.itemsize:
            raise TraceFormatError(
                self.path,
                f"section {sec.index} saves {sec.size} bytes per unit, not a multiple of the "
                f"{dtype.itemsize}-byte record (wrong probe for this trace?)",
            )
        return sec.size // dtype.itemsize

    def records(self, section: int = 0, dtype: np.dtype | str = "u1") -> np.ndarray:
        """Records of a section as a read-only array shaped ``(blocks, units, records_per_unit)``.

        Backed by ``np.memmap``: nothing is read until indexed. With the default ``u1`` dtype the
        last axis is the raw bytes of each unit.
        """
        sec = self.section(section)
        dt = np.dtype(dtype)
        rpu = self._records_per_unit(sec, dt)
        shape = (sec.blocks, sec.units_per_block, rpu)
        if sec.nbytes == 0:
            return np.empty(shape, dtype=dt)
        return np.memmap(self.path, dtype=dt, mode="r", offset=sec.offset, shape=shape)

    def iter_chunks(self, section: int = 0, dtype: np.dtype | str = "u1",
                    chunk_bytes: int = 64 << 20, reuse: bool = False) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_block, records)`` chunks of whole blocks with bounded memory.

        Each chunk is an in-memory array shaped ``(n_blocks, units, records_per_unit)``, so peak memory
        is about ``chunk_bytes`` whatever the trace size. ``reuse``: every chunk is read into the same
        buffer (no fresh pages to fault in per chunk: several times faster on traces of gigabytes), so a
        chunk is valid only until the next one is asked for.
        """
        sec = self.section(section)
        dt = np.dtype(dtype)
        rpu = self._records_per_unit(sec, dt)
        block_bytes = sec.units_per_block * sec.size
        if block_bytes == 0:
            return
        per_chunk = max(1, chunk_bytes // block_bytes)
        items_per_block = sec.units_per_block * rpu
        buf = np.empty(min(per_chunk, sec.blocks) * items_per_block, dtype=dt) if reuse else None
        with open(self.path, "rb") as fh:
            for start in range(0, sec.blocks, per_chunk):
                n = min(per_chunk, sec.blocks - start)
                fh.seek(sec.offset + start * block_bytes)
                if buf is None:
                    flat = np.fromfile(fh, dtype=dt, count=n * items_per_block)
                else:
                    flat = buf[: n * items_per_block]
                    got = fh.readinto(flat.view(np.uint8))
                    flat = flat[: (got or 0) // dt.itemsize]
                if flat.size != n * items_per_block:
                    raise TraceFormatError(self.path, f"file shrank while reading section {sec.index}")
                yield start, flat.reshape(n, sec.units_per_block, rpu)


def _fail(path: Path, problem: str) -> TraceFormatError:
    return TraceFormatError(path, problem)


def read_header(path: str | os.PathLike[str]) -> tuple[TraceHeader, int]:
    """Parse and sanity-check the 32-byte header. Returns the header and numProbes."""
    p = check_input(path, "trace")
    with open(p, "rb") as fh:
        raw = fh.read(HEADER_BYTES)
    if len(raw) < HEADER_BYTES:
        raise _fail(p, f"truncated: {len(raw)} bytes, the header alone needs {HEADER_BYTES}")
    h = np.frombuffer(raw, dtype=HEADER_DTYPE)[0]
    grid = (int(h["grid_x"]), int(h["grid_y"]), int(h["grid_z"]))
    block = (int(h["block_x"]), int(h["block_y"]), int(h["block_z"]))
    nprobes = int(h["num_probes"])
    if 0 in grid or 0 in block:
        raise _fail(p, f"impossible header: grid {grid} block {block} has a zero dimension")
    if grid[0] > MAX_GRID_X or grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ:
        raise _fail(p, f"impossible header: grid {grid} exceeds CUDA limits")
    if block[0] * block[1] * block[2] > MAX_BLOCK_THREADS:
        raise _fail(p, f"impossible header: block {block} has more than {MAX_BLOCK_THREADS} threads")
    if nprobes == 0:
        raise _fail(p, "header declares numProbes=0: the trace holds no section")
    if nprobes > MAX_PROBES:
        raise _fail(p, f"impossible header: numProbes={nprobes} (limit {MAX_PROBES}); corrupt file?")
    return TraceHeader(grid, block, int(h["shared_mem"])), nprobes


def _detect_layout(path: Path, desc_raw: bytes, nprobes: int) -> Layout:
    words = np.frombuffer(desc_raw, dtype="<u4").reshape(nprobes, 4)
    second = words[:, 1]
    if np.all(second == 0):
        return "v1"
    if np.all(np.isin(second, (1, 32, 64))):
        return "v2"
    invalid = np.flatnonzero(~np.isin(second, (0, 1, 32, 64)))
    # Either a word no layout allows, or a mix of v1 (0) and v2 (non-zero) descriptors.
    bad = int(invalid[0]) if invalid.size else int(np.flatnonzero(second == 0)[0])
    raise _fail(
        path,
        f"unknown section layout: descriptor {bad} has second word {int(second[bad])} "
        "(expected 0 in every descriptor for v1, or 1/32/64 in every descriptor for v2)",
    )


def open_trace(path: str | os.PathLike[str],
               levels: Sequence[Level | str | int | None] | None = None,
               fallback: Level | None = None) -> BinTrace:
    """Open and validate a binary trace.

    ``levels`` gives each section's level (from ``probe.toml``) for v1 files; ``None`` entries are
    inferred from the region lengths. With no list at all, a file inside a trace directory
    (``<tracedir>/result/<t>.bin``) takes the levels of that directory's ``probe.toml`` when it has
    one per section. For v2 files the stored ``warpDiv`` wins, and a conflicting hint is an error.
    ``fallback`` is the level to assume for a v1 section that has no hint and whose region fits both
    levels (1-thread blocks: one warp is one thread): the probe's documented level, e.g. thread for
    dmat. ``Section.level_from`` says which of these decided each level.
    """
    p = Path(path)
    header, nprobes = read_header(p)
    if levels is None:
        levels = _levels_beside(p, nprobes)
    file_size = p.stat().st_size
    table_end = HEADER_BYTES + nprobes * DESCRIPTOR_BYTES
    if file_size < table_end:
        raise _fail(p, f"truncated: {file_size} bytes, header and {nprobes} section descriptors need {table_end}")
    with open(p, "rb") as fh:
        fh.seek(HEADER_BYTES)
        desc_raw = fh.read(nprobes * DESCRIPTOR_BYTES)
    layout = _detect_layout(p, desc_raw, nprobes)
    if levels is not None and len(levels) != nprobes:
        raise _fail(p, f"has {nprobes} section(s) but {len(levels)} level(s) were given (probe.toml mismatch?)")
    hints = [None if lv is None else Level.parse(lv) for lv in (levels or [None] * nprobes)]

    if layout == "v1":
        d = np.frombuffer(desc_raw, dtype=DESCRIPTOR_V1)
        sizes = [int(x) for x in d["size"]]
        offsets = [int(x) for x in d["offset"]]
        stored: list[Level | None] = [None] * nprobes
    else:
        d = np.frombuffer(desc_raw, dtype=DESCRIPTOR_V2)
        sizes = [int(x) for x in d["size"]]
        offsets = [int(x) for x in d["offset"]]
        stored = [Level(int(x)) for x in d["warp_div"]]

    for i, off in enumerate(offsets):
        if off < table_end:
            raise _fail(p, f"section {i} offset {off} overlaps the header/descriptor table (ends at {table_end})")
        if off > file_size:
            raise _fail(p, f"truncated: section {i} starts at byte {off} but the file has {file_size} bytes")

    # Region available to each section: up to the next section's start (in file order) or the file end.
    order = sorted(range(nprobes), key=lambda i: offsets[i])
    region = [0] * nprobes
    for k, i in enumerate(order):
        nxt = offsets[order[k + 1]] if k + 1 < nprobes else file_size
        region[i] = nxt - offsets[i]

    grid = header.grid_size
    resolved: list[Level] = []
    size_field = ["unit"] * nprobes
    level_from = ["file"] * nprobes
    for i in range(nprobes):
        if stored[i] is not None:
            if hints[i] is not None and hints[i] != stored[i]:
                raise _fail(p, f"section {i} is {stored[i].name.lower()}-level in the file but "
                               f"{hints[i].name.lower()}-level in probe.toml")
            resolved.append(stored[i])
            continue
        total = _total_size_level(header, sizes[i], region[i], hints[i])
        level_from[i] = "given" if hints[i] is not None else "region"
        if total is not None:
            resolved.append(total)
            size_field[i] = "total"
            sizes[i] //= grid * header.units_per_block(total)
        elif hints[i] is not None:
            resolved.append(hints[i])
        else:
            level, level_from[i] = _infer_level(p, i, header, sizes[i], region[i], fallback)
            resolved.append(level)

    for i in range(nprobes):
        if header.device_units_per_block(resolved[i]) == 0:
            raise _fail(p, f"section {i} is {resolved[i].name.lower()}-level but a block has only "
                           f"{header.block_size} threads: the probe's per-block warp stride "
                           f"({header.block_size}//{int(resolved[i])} = 0) put every block's record in one slot")
    sections = tuple(
        Section(i, sizes[i], offsets[i], resolved[i], grid, header.device_units_per_block(resolved[i]),
                size_field[i], header.block_size % int(resolved[i]) != 0, level_from[i])
        for i in range(nprobes)
    )
    for k, i in enumerate(order):
        sec = sections[i]
        if sec.end > file_size:
            raise _fail(
                p,
                f"truncated: section {i} ({sec.level.name.lower()}-level, {sec.size} B/unit) needs bytes "
                f"{sec.offset}..{sec.end} but the file has {file_size}",
            )
        if k + 1 < nprobes and sec.end > offsets[order[k + 1]]:
            raise _fail(p, f"section {i} (bytes {sec.offset}..{sec.end}) overlaps section {order[k + 1]} "
                           f"starting at {offsets[order[k + 1]]}")
    return BinTrace(p, header, layout, sections, file_size)


def _total_size_level(header: TraceHeader, size: int, region: int, hint: Level | None) -> Level | None:
    """The level of a v1 section whose ``size`` holds its total bytes, or None if ``size`` is per unit.

    ``size`` is read as a total only when it fills its region exactly and the per-unit reading does
    not (the two agree only for one unit per grid, where they mean the same bytes), and it splits
    evenly over the units of exactly one candidate level (the probe.toml level when given).
    """
    if size != region or size == 0:
        return None
    levels = [hint] if hint is not None else [Level.WARP, Level.THREAD]
    if any(header.grid_size * header.units_per_block(lv) * size == region for lv in levels):
        return None
    fits = [lv for lv in levels if size % (header.grid_size * header.units_per_block(lv)) == 0]
    if len(fits) == 2 and header.units_per_block(Level.WARP) == header.units_per_block(Level.THREAD):
        fits = fits[:1]
    return fits[0] if len(fits) == 1 else None


def _levels_beside(path: Path, nprobes: int) -> list[Level] | None:
    """Section levels from the enclosing trace directory's probe.toml, if it describes this file."""
    probe_toml = path.parent.parent / "probe.toml"
    if path.parent.name != "result" or not probe_toml.is_file():
        return None
    from neutrino_ae.formats.probe import read_probe_toml  # only for a trace dir: a loose .bin needs no toml

    try:
        found = read_probe_toml(probe_toml).levels
    except InputError:
        return None  # a broken probe.toml only loses the hint; lengths are still checked
    return found if len(found) == nprobes else None


def _infer_level(path: Path, index: int, header: TraceHeader, size: int, region: int,
                 fallback: Level | None = None) -> tuple[Level, str]:
    """The level a v1 section's region length gives, and ``Section.level_from``: "region", or "assumed"
    when the region is exactly as long at either level (1-thread blocks, or 0 bytes per unit) -- then only
    the probe knows which it was, and ``fallback`` (else warp) is taken."""
    thread_len = header.grid_size * header.block_size * size
    warp_len = header.grid_size * header.warps_per_block * size
    if region == warp_len == thread_len:
        return (fallback if fallback is not None else Level.WARP), "assumed"
    if region == warp_len:
        return Level.WARP, "region"
    if region == thread_len:
        return Level.THREAD, "region"
    if size == region and size:
        # _total_size_level found the total splitting evenly over both thread and warp units.
        raise _fail(path, f"cannot infer the level of section {index}: its size field equals its whole "
                          f"{region}-byte region, a total that splits over thread or warp units alike; "
                          "pass the levels from probe.toml")
    if region < warp_len:
        raise _fail(path, f"truncated: section {index} region is {region} bytes, but even warp-level data "
                          f"needs {warp_len} ({size} B/unit)")
    raise _fail(
        path,
        f"cannot infer the level of section {index}: its region is {region} bytes, thread-level needs "
        f"{thread_len} and warp-level {warp_len}; pass the levels from probe.toml",
    )
