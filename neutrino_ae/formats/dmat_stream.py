"""A raw dmat trace sparsified straight into a ``.dmat`` file, in memory bounded whatever its size.

On a random-access trace nearly every record is a distinct (clock, page) pair, so holding the pairs
(what :func:`neutrino_ae.formats.dmat_sparsify.sparsify` does) takes memory that grows with the trace. Here the
trace file is read three times, in chunks, into one reused buffer:

1. :func:`scan`: the distinct pages (they head the ``.dmat``), the largest clock, the unfilled
   records (:func:`~neutrino_ae.formats.dmat.filled_mask`), and a sample of clocks from which the
   clock axis is cut into buckets of at most ``bucket_records`` records each;
2. partition: every record becomes one packed uint64 key ``clock << page_bits | page - first_page``
   (sorting keys sorts by (clock, page)), appended to its bucket; buckets stay in memory up to
   ``memory_bytes`` in all and spill to files in a scratch folder beyond;
3. reduce: bucket by bucket in clock order, the keys are sorted and equal keys counted, which gives
   that clock range's entries of the ``.dmat``: they are appended to the file and handed to the caller
   (the DMAT figure bins them), then dropped.

Peak memory is about one chunk, ``memory_bytes`` of held keys and one bucket being reduced (the bucket
edges are clock values, so a bucket exceeds ``bucket_records`` only where one clock value alone holds
more records). The file is written atomically; ``num_clocks``, known at the end, is patched into the
header before the rename.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neutrino_ae.atomic import atomic_open
from neutrino_ae.errors import TraceFormatError
from neutrino_ae.formats.dmat import DmatData, body_words, filled_mask, from_pairs, run_starts, write_head

#: A chunk source: called once per pass, it yields the trace's DMAT records (any shape) in order.
Chunks = Callable[[], Iterable[np.ndarray]]

#: Largest page span (in 64 KiB pages) kept as a presence table while scanning (1 byte per page).
PAGE_TABLE_SPAN = 1 << 26
#: Clocks kept for cutting buckets; one record in ``SAMPLE_STRIDE`` is sampled (more as the trace grows).
SAMPLE_MAX = 1 << 21
SAMPLE_STRIDE = 64
BUCKET_RECORDS = 1 << 19
#: Scratch folders are named ``<prefix><pid>-<random>``; one whose process is gone and that has not
#: changed for SCRATCH_STALE_S is left over by a killed run (a folder shared between machines may hold a
#: live run of another host under a pid this one does not have, hence the age too).
SCRATCH_PREFIX = ".dmat-scratch-"
SCRATCH_STALE_S = 3600.0
MEMORY_BYTES = 16 << 20


@dataclass
class DmatScan:
    """What the first pass learns of a raw dmat trace."""

    pages: np.ndarray  # uint64, distinct non-zero pages, ascending
    max_clock: int  # largest clock of a filled record (0 when there are none)
    accesses: int  # filled records
    unfilled: int  # unfilled records (zero fill or all-ones clock: formats.dmat.filled_mask)
    clock_sample: np.ndarray  # uint64, sorted clocks of every ``sample_stride``-th filled record or so

    @property
    def page_bits(self) -> int:
        return int(int(self.pages[-1] - self.pages[0]) >> 16).bit_length() if self.pages.size else 0

    def packs(self) -> bool:
        """Whether a (clock, page) key fits in 64 bits (always, for real GPU addresses and clocks)."""
        return int(self.max_clock).bit_length() + self.page_bits <= 64


@dataclass
class StreamSummary:
    num_clocks: int
    num_pairs: int
    spilled_bytes: int  # keys written to scratch files (0: everything fitted in memory)
    buckets: int


def scan(chunks: Chunks) -> DmatScan:
    """Pass 1 (see the module docstring)."""
    pages = _PageSet()
    sample: list[np.ndarray] = []
    held, stride = 0, SAMPLE_STRIDE
    max_clock, accesses, unfilled = 0, 0, 0
    for chunk in chunks():
        rec = chunk.reshape(-1)
        page = rec["addr"] >> np.uint64(16)
        clock = rec["clock"]
        filled = filled_mask(clock, page)
        kept = int(np.count_nonzero(filled))
        unfilled += rec.size - kept
        if kept == 0:
            continue
        if kept < rec.size:
            page, clock = page[filled], clock[filled]
        accesses += kept
        max_clock = max(max_clock, int(clock.max()))
        pages.add(page)
        sample.append(clock[::stride].copy())
        held += sample[-1].size
        if held > SAMPLE_MAX:  # thin what is held and sample more sparsely from now on
            sample = [s[::2] for s in sample]
            held = sum(s.size for s in sample)
            stride *= 2
    clocks = np.sort(np.concatenate(sample)) if sample else np.zeros(0, np.uint64)
    return DmatScan(pages.sorted() << np.uint64(16), max_clock, accesses, unfilled, clocks)


class _PageSet:
    """Distinct page numbers (address >> 16) as a presence table over their span, or as a sorted
    array once the span is too wide for a table."""

    def __init__(self) -> None:
        self.base = 0
        self.table = np.zeros(0, bool)
        self.wide: np.ndarray | None = None

    def add(self, page: np.ndarray) -> None:
        if self.wide is not None:
            self.wide = np.union1d(self.wide, page)
            return
        lo, hi = int(page.min()), int(page.max())
        if self.table.size == 0:
            self.base, self.table = lo, np.zeros(0, bool)
        new_lo, new_hi = min(lo, self.base), max(hi, self.base + self.table.size - 1)
        if new_hi - new_lo + 1 > PAGE_TABLE_SPAN:
            self.wide = np.union1d(self.sorted(), page)
            return
        if new_lo < self.base or new_hi >= self.base + self.table.size:
            grown = np.zeros(new_hi - new_lo + 1, bool)
            at = self.base - new_lo
            grown[at : at + self.table.size] = self.table
            self.base, self.table = new_lo, grown
        self.table[page - np.uint64(self.base)] = True

    def sorted(self) -> np.ndarray:
        if self.wide is not None:
            return self.wide.astype(np.uint64)
        return np.flatnonzero(self.table).astype(np.uint64) + np.uint64(self.base)


def bucket_edges(info: DmatScan, bucket_records: int) -> np.ndarray:
    """Ascending clock values where buckets start (the first is 0), about ``bucket_records`` records
    each by the clock sample."""
    n = -(-info.accesses // max(1, bucket_records))
    if n <= 1 or info.clock_sample.size == 0:
        return np.zeros(1, np.uint64)
    at = (np.arange(1, n) * info.clock_sample.size) // n
    return np.unique(np.r_[np.uint64(0), info.clock_sample[at]]).astype(np.uint64)


class _Buckets:
    """Keys per bucket: in memory up to ``memory_bytes`` in all, then appended to one file per bucket."""

    def __init__(self, n: int, scratch: Path, memory_bytes: int) -> None:
        self.parts: list[list[np.ndarray]] = [[] for _ in range(n)]
        self.files = [scratch / f"bucket{i:05d}.u64" for i in range(n)]
        self.sizes = [0] * n
        self.held = 0
        self.spilled = 0
        self.memory_bytes = memory_bytes

    def add(self, i: int, keys: np.ndarray) -> None:
        self.parts[i].append(keys)
        self.sizes[i] += keys.size
        self.held += keys.nbytes
        if self.held > self.memory_bytes:
            self.spill()

    def spill(self) -> None:
        for i, parts in enumerate(self.parts):
            if parts:
                with open(self.files[i], "ab") as fh:
                    for part in parts:
                        part.tofile(fh)
                        self.spilled += part.nbytes
                parts.clear()
        self.held = 0

    def take(self, i: int) -> np.ndarray:
        """Bucket ``i``'s keys (its memory and file released)."""
        keys = np.empty(self.sizes[i], np.uint64)
        at = 0
        if self.files[i].exists():
            with open(self.files[i], "rb") as fh:
                at = fh.readinto(keys.view(np.uint8)) // 8
            self.files[i].unlink()
        for part in self.parts[i]:
            keys[at : at + part.size] = part
            at += part.size
        if at != keys.size:
            raise OSError(f"{self.files[i]}: scratch file shorter than what was written to it")
        self.held -= sum(p.nbytes for p in self.parts[i])
        self.parts[i] = []
        return keys


def write_streamed(path: str | os.PathLike[str], chunks: Chunks, info: DmatScan,
                   on_batch: Callable[[DmatData], None] | None = None,
                   scratch_dir: str | os.PathLike[str] | None = None, source: Path | None = None,
                   bucket_records: int | None = None, memory_bytes: int | None = None) -> StreamSummary:
    """Passes 2 and 3: write the ``.dmat`` of the records ``chunks`` yields (``info`` from :func:`scan` of
    the same records) to ``path`` atomically, handing each batch of clock entries (a canonical
    :class:`DmatData` of consecutive clocks, ``pages`` = all pages) to ``on_batch``. Scratch files go in
    a temporary folder under ``scratch_dir`` (default: beside ``path``), removed when done. ``source``,
    the trace file, is named by the error raised if the records differ from the scan's (the file
    changed between passes). ``bucket_records`` and ``memory_bytes`` default to the module's constants."""
    if not info.packs():
        raise ValueError("(clock, page) keys need more than 64 bits; use formats.dmat_sparsify.sparsify")
    page_bits = info.page_bits
    first_page = np.uint64(int(info.pages[0]) >> 16) if info.pages.size else np.uint64(0)
    edges = bucket_edges(info, BUCKET_RECORDS if bucket_records is None else bucket_records)
    edge_keys = edges << np.uint64(page_bits)
    dest = Path(path)
    scratch_parent = Path(scratch_dir) if scratch_dir is not None else dest.parent
    scratch_parent.mkdir(parents=True, exist_ok=True)
    num_clocks = num_pairs = accesses = 0
    remove_dead_scratch(scratch_parent)
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=scratch_parent) as tmp:
        buckets = _Buckets(edges.size, Path(tmp), MEMORY_BYTES if memory_bytes is None else memory_bytes)
        for chunk in chunks():
            _partition(chunk, page_bits, first_page, edge_keys, buckets)
        with atomic_open(dest, "wb") as fh:
            write_head(fh, info.pages, 0)
            for i in range(edges.size):
                batch = _reduce_bucket(buckets.take(i), page_bits, first_page, info.pages)
                if batch.clocks.size == 0:
                    continue
                body_words(batch.clocks, batch.indptr, batch.pair_page, batch.pair_count).tofile(fh)
                num_clocks += batch.clocks.size
                num_pairs += batch.pair_page.size
                accesses += batch.num_accesses
                if on_batch is not None:
                    on_batch(batch)
            if accesses != info.accesses:
                raise TraceFormatError(source, f"changed while being read: {accesses:,} accesses on the second "
                                               f"pass, {info.accesses:,} on the first")
            fh.seek(8)
            fh.write(np.array([num_clocks], "<u8").tobytes())
    return StreamSummary(num_clocks, num_pairs, buckets.spilled, edges.size)


def remove_dead_scratch(parent: Path) -> list[Path]:
    """Remove the scratch folders under ``parent`` left by killed runs (see SCRATCH_PREFIX); returns them."""
    removed = []
    now = time.time()
    for d in parent.glob(f"{SCRATCH_PREFIX}*"):
        pid = d.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
        try:
            stale = now - d.stat().st_mtime > SCRATCH_STALE_S
        except OSError:
            continue
        if pid.isdigit() and stale and not _alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _partition(chunk: np.ndarray, page_bits: int, first_page: np.uint64, edge_keys: np.ndarray,
               buckets: _Buckets) -> None:
    """Pass 2 for one chunk: the packed keys of its filled records, appended to their buckets."""
    rec = chunk.reshape(-1)
    page = rec["addr"] >> np.uint64(16)
    clock = rec["clock"]
    filled = filled_mask(clock, page)
    if not filled.all():
        page, clock = page[filled], clock[filled]
    page -= first_page
    key = clock << np.uint64(page_bits)
    key |= page
    if edge_keys.size == 1:
        buckets.add(0, key)
        return
    key.sort()
    cut = np.r_[0, np.searchsorted(key, edge_keys[1:]), key.size]
    for i in np.flatnonzero(np.diff(cut)):
        buckets.add(int(i), key[cut[i] : cut[i + 1]])


def _reduce_bucket(keys: np.ndarray, page_bits: int, first_page: np.uint64, pages: np.ndarray) -> DmatData:
    """The canonical entries of one bucket's keys (sorted in place)."""
    keys.sort()
    first = run_starts(keys)
    count = np.diff(np.r_[first, keys.size])
    unique = keys[first]
    del keys
    clock = unique >> np.uint64(page_bits)
    page = ((unique & np.uint64((1 << page_bits) - 1)) + first_page) << np.uint64(16)
    return from_pairs(clock, page, count, presorted=True, pages=pages)
