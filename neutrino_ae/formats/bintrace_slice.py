"""A small, valid slice of a binary trace: its first blocks, every section, bytes unchanged.

Real traces run to gigabytes; tests and bug reports need a few megabytes of the genuine bytes. The
slice keeps the header (block shape, shared memory, number of sections), the layout (v1/v2) and
each section's bytes per unit; the grid becomes ``(k, 1, 1)``, the first ``k`` blocks in linear
block-index order, and each section's region is the prefix of the original holding those blocks
(``k`` x ceil-units x size bytes, as the hook driver lays blocks out). Nothing is decoded, so a
record the analyses would reject (an unfilled slot, a wrapped clock) stays in the slice.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from neutrino_ae.atomic import atomic_open
from neutrino_ae.errors import TraceFormatError
from neutrino_ae.formats.bintrace import (
    DESCRIPTOR_BYTES,
    DESCRIPTOR_V1,
    DESCRIPTOR_V2,
    HEADER_BYTES,
    HEADER_DTYPE,
    BinTrace,
    open_trace,
)


def block_bytes(trace: BinTrace) -> int:
    """Bytes one block occupies over all sections (the hook driver's ceil-units allocation)."""
    return sum(trace.header.units_per_block(s.level) * s.size for s in trace.sections)


def blocks_within(trace: BinTrace, max_bytes: int) -> int:
    """How many leading blocks fit in ``max_bytes`` of section data: at least 1, at most the grid."""
    per_block = block_bytes(trace)
    if per_block == 0:
        return trace.header.grid_size
    return max(1, min(trace.header.grid_size, max_bytes // per_block))


def slice_trace(src: str | os.PathLike[str], dest: str | os.PathLike[str], blocks: int,
                trace: BinTrace | None = None) -> Path:
    """Write the first ``blocks`` blocks of the trace ``src`` to ``dest`` (atomically); see the module
    docstring. ``trace`` is ``src`` already opened (with its probe.toml levels), if the caller has it."""
    tr = trace or open_trace(src)
    k = max(1, min(int(blocks), tr.header.grid_size))
    h = tr.header
    head = np.array([(k, 1, 1, *h.block, h.shared_mem, len(tr.sections))], dtype=HEADER_DTYPE).tobytes()
    offset = HEADER_BYTES + len(tr.sections) * DESCRIPTOR_BYTES
    rows, spans = [], []
    for sec in tr.sections:
        nbytes = k * h.units_per_block(sec.level) * sec.size
        if tr.layout == "v1":
            rows.append(np.array([(sec.size, offset)], dtype=DESCRIPTOR_V1).tobytes())
        else:
            rows.append(np.array([(sec.size, int(sec.level), offset)], dtype=DESCRIPTOR_V2).tobytes())
        spans.append((sec.offset, nbytes))
        offset += nbytes
    with open(tr.path, "rb") as fin, atomic_open(dest, "wb") as fout:
        fout.write(head + b"".join(rows))
        for start, nbytes in spans:
            fin.seek(start)
            if _copy_exactly(fin, fout, nbytes) < nbytes:
                raise TraceFormatError(tr.path, "file shrank while it was being sliced")
    return Path(dest)


def _copy_exactly(fin, fout, nbytes: int, chunk: int = 8 << 20) -> int:
    done = 0
    while done < nbytes:
        data = fin.read(min(chunk, nbytes - done))
        if not data:
            break
        fout.write(data)
        done += len(data)
    return done


def copy_or_slice(src: str | os.PathLike[str], dest: str | os.PathLike[str], max_bytes: int) -> tuple[Path, int, int]:
    """Copy ``src`` to ``dest`` when it is at most ``max_bytes``, else write its slice of as many blocks
    as fit. Returns (dest, blocks kept, blocks in the original)."""
    tr = open_trace(src)
    if Path(src).stat().st_size <= max_bytes:
        shutil.copyfile(src, dest)
        return Path(dest), tr.header.grid_size, tr.header.grid_size
    k = blocks_within(tr, max_bytes)
    return slice_trace(src, dest, k, tr), k, tr.header.grid_size
