"""Record layouts (numpy dtypes) of the probes the paper uses.

A binary trace section stores, per unit (thread or warp), ``size`` bytes: one or more records of
the probe's layout. ``BinTrace.records(section, dtype)`` views them as ``(blocks, units, n)``.
"""

from __future__ import annotations

import numpy as np

#: ``block_sched`` (warp:16): clock64 at kernel entry, elapsed cycles, SM id.
BLOCK_SCHED = np.dtype([("lstart", "<u8"), ("elapse", "<u4"), ("smid", "<u4")])

#: Sec. 7 warp scheduling probe: the block_sched record saved by *every* warp (warp:16). The
#: warp slot on the SM is not stored; analyses reconstruct it from the time-ordered starts.
WARP_SCHED = BLOCK_SCHED

#: ``dmat`` (thread:16:count): repeated (clock since the thread's entry, global address).
DMAT = np.dtype([("clock", "<u8"), ("addr", "<u8")])

#: ``gmem_bytes`` (thread:8).
GMEM_BYTES = np.dtype([("sync_bytes", "<u4"), ("async_bytes", "<u4")])

#: ``tensorop_count`` (thread:8).
TENSOROP_COUNT = np.dtype([("count", "<u8")])

#: A ``count`` datamodel leaves unfilled slots with this marker in the record's first uint64.
EMPTY_MARKER = np.uint64(0xFFFF_FFFF_FFFF_FFFF)

BY_PROBE: dict[str, np.dtype] = {
    "block_sched": BLOCK_SCHED,
    "warp_sched": WARP_SCHED,
    "dmat": DMAT,
    "gmem_bytes": GMEM_BYTES,
    "tensorop_count": TENSOROP_COUNT,
}


def nonempty_mask(records: np.ndarray) -> np.ndarray:
    """Boolean mask of records whose first uint64 is not the empty-slot marker."""
    first = records.dtype.names[0] if records.dtype.names else None
    if first is None or records.dtype[first] != np.dtype("<u8"):
        raise TypeError("nonempty_mask needs a structured dtype whose first field is uint64")
    return records[first] != EMPTY_MARKER


def drop_empty(records: np.ndarray) -> np.ndarray:
    """Filled records of a ``count`` section as a flat 1-D array (unit order is kept)."""
    return records[nonempty_mask(records)]
