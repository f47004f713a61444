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

BY_PROBE: dict[str, np.dtype] = {
    "block_sched": BLOCK_SCHED,
    "warp_sched": WARP_SCHED,
    "dmat": DMAT,
    "gmem_bytes": GMEM_BYTES,
    "tensorop_count": TENSOROP_COUNT,
    "tensorop": TENSOROP_COUNT,  # today's Neutrino (main branch) names the tool tensorop
}


def nonempty_mask(records: np.ndarray) -> np.ndarray:
    """Boolean mask of records that a probe filled.

    The hook driver zero-fills every probe buffer before the launch (``cuMemsetD32(buf, 0, ..)`` in
    src/cuda.c), so a slot no thread wrote -- the tail of a ``count`` datamodel's slots -- is an
    all-zero record. A filled record always has a non-zero field (a DMAT address is never 0).
    """
    names = records.dtype.names
    if not names:
        raise TypeError("nonempty_mask needs a structured record dtype")
    mask = records[names[0]] != 0
    for name in names[1:]:
        mask |= records[name] != 0
    return mask


def drop_empty(records: np.ndarray) -> np.ndarray:
    """Filled records of a ``count`` section as a flat 1-D array (unit order is kept)."""
    return records[nonempty_mask(records)]
