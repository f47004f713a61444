"""How much of the memory this process may use (:mod:`.memory`) the streamed sparsifier (:mod:`.stream`)
takes, and in what pieces: the rule, and the one-line refusal where even the smallest pieces do not fit.

The working sets (bytes, measured on the passes' code; ``K``: 8 per packed key, 16 per two-word key):

* scan: per record of a chunk ``SCAN_PER_RECORD`` (the chunk, its page numbers, the filled mask and
  copies), the record sample (``SAMPLE_ENTRY`` per entry) and the page presence table (1 per page of span);
* partition: per record of a chunk ``PARTITION_PER_RECORD`` (as the scan, plus the keys and their split),
  and the keys held before spilling (``memory_bytes``);
* reduce: the keys still held, plus per key of the bucket being reduced ``REDUCE_PER_KEY`` (its sort and
  count, the entries written and the figure's binning of them).

:func:`plan_stream` gives each piece a share of the room (chunk 1/8, held keys 1/4, the bucket being
reduced 1/4, sample 1/16, page table 1/8: the passes' peaks stay near half the room, the rest is the
margin for what the estimates miss), capped at the module constants that are fastest when memory is
plentiful and floored at the least that still works (one whole block per chunk).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from neutrino_ae.errors import ResourceError
from neutrino_ae.formats.dmat import stream as dmat_stream
from neutrino_ae.formats.memory import MemoryLimit, refuse

RECORD = 16  # bytes of one raw dmat record
SCAN_PER_RECORD = 64
PARTITION_PER_RECORD = 96
WIDE_EXTRA_PER_RECORD = 64  # a two-word key, its argsort and the reordered copies
REDUCE_PER_KEY = 128
SAMPLE_ENTRY = 40  # clock and page kept, then encoded, sorted and cut

MIN_CHUNK_BYTES = 1 << 20
MIN_HELD_BYTES = 1 << 20
MIN_BUCKET_RECORDS = 1 << 14
MIN_SAMPLE = 1 << 14
MIN_PAGE_TABLE = 1 << 20


@dataclass(frozen=True)
class StreamPlan:
    chunk_bytes: int  # raw trace read per chunk (at least one block)
    memory_bytes: int  # keys held in memory before spilling to scratch files
    bucket_records: int  # records per bucket reduced at once
    sample_max: int  # records sampled to cut the buckets
    page_table_span: int  # largest page span kept as a presence table while scanning
    wide: bool = False  # two-word keys

    def peak(self) -> int:
        """The largest working set of the three passes (module docstring)."""
        records = self.chunk_bytes // RECORD
        per_record = PARTITION_PER_RECORD + (WIDE_EXTRA_PER_RECORD if self.wide else 0)
        scan = records * SCAN_PER_RECORD + self.sample_max * SAMPLE_ENTRY + self.page_table_span
        partition = records * per_record + self.memory_bytes
        reduce = self.memory_bytes + self.bucket_records * REDUCE_PER_KEY * (2 if self.wide else 1)
        return max(scan, partition, reduce)


def _share(room: int, part: float, unit: int, floor: int, cap: int) -> int:
    """``part`` of the room in ``unit``s, at most ``cap`` and at least ``floor`` (or ``cap``, if smaller)."""
    return max(min(floor, cap), min(cap, int(room * part) // unit))


def plan_stream(limit: MemoryLimit, block_bytes: int, chunk_cap: int, wide: bool = False,
                reserve: int = 0) -> StreamPlan:
    """The pieces for the room ``limit`` leaves beside ``reserve`` bytes the caller needs for itself (see
    the module docstring); ``block_bytes``: one block of the trace (the least a chunk holds),
    ``chunk_cap``: the chunk size when memory is plentiful. The plan may need more than the room:
    :func:`check` says so."""
    room = max(0, limit.available - reserve) if limit.available is not None else 1 << 62
    per_record = PARTITION_PER_RECORD + (WIDE_EXTRA_PER_RECORD if wide else 0)
    key_cost = REDUCE_PER_KEY * (2 if wide else 1)
    chunk = max(block_bytes, _share(room, 1 / 8, per_record // RECORD, MIN_CHUNK_BYTES, chunk_cap))
    return StreamPlan(
        chunk_bytes=chunk,
        memory_bytes=_share(room, 1 / 4, 1, MIN_HELD_BYTES, dmat_stream.MEMORY_BYTES),
        bucket_records=_share(room, 1 / 4, key_cost, MIN_BUCKET_RECORDS, dmat_stream.BUCKET_RECORDS),
        sample_max=_share(room, 1 / 16, SAMPLE_ENTRY, MIN_SAMPLE, dmat_stream.SAMPLE_MAX),
        page_table_span=_share(room, 1 / 8, 1, MIN_PAGE_TABLE, dmat_stream.PAGE_TABLE_SPAN),
        wide=wide,
    )


def least_need(block_bytes: int, chunk_cap: int, wide: bool = False) -> int:
    """The smallest working set the passes can run in (every piece at its floor)."""
    return plan_stream(MemoryLimit(0, ""), block_bytes, chunk_cap, wide).peak()


def check(path: str | os.PathLike[str] | None, plan: StreamPlan, limit: MemoryLimit, what: str,
          reserve: int = 0, least: int | None = None) -> None:
    """Raise :class:`ResourceError` when ``plan`` beside ``reserve`` bytes does not fit ``limit``, saying
    how much is needed: ``least`` (the passes at their smallest; default ``plan``'s own) plus ``reserve``."""
    if not limit.fits(plan.peak() + reserve):
        raise refuse(path, what, (plan.peak() if least is None else least) + reserve, limit)


__all__ = ["ResourceError", "StreamPlan", "check", "least_need", "plan_stream"]
