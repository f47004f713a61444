"""Writing binary traces ``result/<seconds>.bin`` in the layout :mod:`.bintrace` reads (v1 or v2
descriptors): :class:`TraceWriter` streams one section and block chunk after another, atomically;
:func:`write_trace` writes whole arrays. Each section's region is zero-filled past the probe's own
indexing, as the hook driver's buffer is.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from neutrino_ae.atomic import atomic_open
from neutrino_ae.formats.bintrace import (
    DESCRIPTOR_BYTES,
    DESCRIPTOR_V1,
    DESCRIPTOR_V2,
    HEADER_BYTES,
    HEADER_DTYPE,
    Layout,
    TraceHeader,
)
from neutrino_ae.formats.level import Level


@dataclass(frozen=True)
class SectionSpec:
    level: Level
    size: int  # bytes per unit


def _descriptor_table(header: TraceHeader, specs: Sequence[SectionSpec], layout: Layout,
                      v1_size: str = "unit") -> tuple[bytes, list[int]]:
    if layout not in ("v1", "v2"):
        raise ValueError(f"layout must be 'v1' or 'v2', got {layout!r}")
    if v1_size not in ("unit", "total"):
        raise ValueError(f"v1_size must be 'unit' or 'total', got {v1_size!r}")
    offset = HEADER_BYTES + len(specs) * DESCRIPTOR_BYTES
    rows, offsets = [], []
    for spec in specs:
        offsets.append(offset)
        nbytes = _region_bytes(header, spec)
        if layout == "v1":
            rows.append(np.array([(spec.size if v1_size == "unit" else nbytes, offset)], dtype=DESCRIPTOR_V1).tobytes())
        else:
            rows.append(np.array([(spec.size, int(spec.level), offset)], dtype=DESCRIPTOR_V2).tobytes())
        offset += nbytes
    head = np.array(
        [(*header.grid, *header.block, header.shared_mem, len(specs))], dtype=HEADER_DTYPE
    ).tobytes()
    return head + b"".join(rows), offsets


def _region_bytes(header: TraceHeader, spec: SectionSpec) -> int:
    """Bytes the hook driver allocates, copies back and writes for a section: grid x
    ceil(units) x size. (The main branch steps the *descriptor offsets* by grid x blockSize x size
    / warpDiv instead, which differs only for partial warps and then misplaces any later section;
    no built-in tool saves more than one map, and readers take the offsets as written.)"""
    return header.grid_size * header.units_per_block(spec.level) * spec.size


class TraceWriter:
    """Stream a trace to disk section by section, block chunk by block chunk, atomically.

    ``write(chunk)`` takes arrays shaped ``(n_blocks, units, ...)`` (any dtype; bytes are written as
    is) for the current section, ``units`` in the probe's own indexing
    (:meth:`TraceHeader.device_units_per_block`); when a section's blocks are complete the rest of
    its region is zero-filled, as the hook driver's buffer is, and the next section begins. Closing
    with missing data raises and leaves no file behind.
    """

    def __init__(self, path: str | os.PathLike[str], header: TraceHeader, specs: Sequence[SectionSpec],
                 layout: Layout = "v1", v1_size: str = "unit") -> None:
        if not specs:
            raise ValueError("a trace needs at least one section")
        self.path = Path(path)
        self.header = header
        self.specs = [SectionSpec(Level.parse(s.level), int(s.size)) for s in specs]
        self.layout = layout
        self._table, _ = _descriptor_table(header, self.specs, layout, v1_size)
        self._ctx = None
        self._fh: BinaryIO | None = None
        self._section = 0
        self._written = 0  # bytes of the current section

    def __enter__(self) -> TraceWriter:
        self._ctx = atomic_open(self.path, "wb")
        self._fh = self._ctx.__enter__()
        self._fh.write(self._table)
        return self

    def _section_bytes(self, i: int) -> int:
        s = self.specs[i]
        return self.header.grid_size * self.header.device_units_per_block(s.level) * s.size

    def _pad(self, i: int) -> None:
        assert self._fh is not None
        pad = _region_bytes(self.header, self.specs[i]) - self._section_bytes(i)
        if pad > 0:
            self._fh.write(bytes(pad))

    def write(self, chunk: np.ndarray) -> None:
        assert self._fh is not None, "use TraceWriter as a context manager"
        self._advance()
        if self._section >= len(self.specs):
            raise ValueError("all sections are complete; extra data")
        spec = self.specs[self._section]
        units = self.header.device_units_per_block(spec.level)
        arr = np.ascontiguousarray(chunk)
        if arr.ndim < 2 or arr.shape[1] != units:
            raise ValueError(f"section {self._section}: chunk shape {arr.shape}, expected (blocks, {units}, ...)")
        if arr.nbytes != arr.shape[0] * units * spec.size:
            raise ValueError(
                f"section {self._section}: chunk has {arr.nbytes // max(1, arr.shape[0] * units)} bytes per unit, "
                f"expected {spec.size}"
            )
        if self._written + arr.nbytes > self._section_bytes(self._section):
            raise ValueError(f"section {self._section}: more blocks than the grid has")
        self._fh.write(memoryview(arr).cast("B"))
        self._written += arr.nbytes

    def _advance(self) -> None:
        while self._section < len(self.specs) and self._written == self._section_bytes(self._section):
            self._pad(self._section)
            self._section, self._written = self._section + 1, 0

    def __exit__(self, exc_type, exc, tb) -> None:
        assert self._ctx is not None
        if exc_type is None:
            self._advance()
            if self._section < len(self.specs):
                err = ValueError(f"{self.path}: section {self._section} is incomplete "
                                 f"({self._written} of {self._section_bytes(self._section)} bytes written)")
                self._ctx.__exit__(ValueError, err, None)
                raise err
        self._ctx.__exit__(exc_type, exc, tb)


def write_trace(path: str | os.PathLike[str], header: TraceHeader,
                sections: Sequence[tuple[Level | str | int, np.ndarray]], layout: Layout = "v1",
                v1_size: str = "unit") -> Path:
    """Write a whole trace at once. Each section is ``(level, array)`` with the array shaped
    ``(grid_size, device_units_per_block, ...)``; its bytes per unit are taken from the array.
    ``v1_size="total"`` stores each section's total bytes in the v1 size field (a variant the
    reader tolerates; Neutrino itself stores bytes per unit)."""
    specs = []
    for level, arr in sections:
        lv = Level.parse(level)
        units = header.device_units_per_block(lv)
        if units == 0:
            raise ValueError(f"a {lv.name.lower()}-level section needs blocks of at least {int(lv)} threads")
        if arr.ndim < 2 or arr.shape[0] != header.grid_size or arr.shape[1] != units:
            raise ValueError(f"section array shape {arr.shape}, expected ({header.grid_size}, {units}, ...)")
        specs.append(SectionSpec(lv, arr.nbytes // (header.grid_size * units) if arr.size else 0))
    with TraceWriter(path, header, specs, layout, v1_size) as w:
        for _, arr in sections:
            w.write(arr)
    return Path(path)
