"""A raw dmat trace sparsified straight into a ``.dmat`` file, in memory bounded whatever its size.

On a random-access trace nearly every record is a distinct (clock, page) pair, so holding the pairs
(what :func:`neutrino_ae.formats.dmat.sparsify.sparsify` does) takes memory that grows with the trace. Here the
trace file is read three times, in chunks, into one reused buffer:

1. :func:`scan`: the distinct pages (they head the ``.dmat``), the least and largest clock, the unfilled
   records (:func:`~neutrino_ae.formats.dmat.filled_mask`), and a sample of (clock, page) records from
   which the key space is cut into buckets of about ``bucket_records`` records each;
2. partition: every record becomes one sort key (:mod:`.keys`: one uint64 for any real trace,
   absolute timestamps included; two words where even that cannot hold it), appended to its bucket;
   buckets stay in memory up to ``memory_bytes`` in all and spill to files in a scratch folder beyond;
3. reduce: bucket by bucket in key order, the keys are sorted and equal keys counted, which gives
   that key range's entries of the ``.dmat``: they are appended to the file and handed to the caller
   (the DMAT figure bins them), then dropped. Buckets are cut by key, not by clock, so one clock held
   by millions of records still spreads over many buckets; the pairs of a clock that continues into the
   next bucket are carried over (at most one per page), so each clock is one entry.

Peak memory is about one chunk's working set, ``memory_bytes`` of held keys and one bucket being
reduced, plus the page list; :mod:`.plan` sizes all of them to the memory the process may use.
The file is written atomically; ``num_clocks``, known at the end, is patched into the header before
the rename.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from neutrino_ae.atomic import atomic_open
from neutrino_ae.errors import TraceFormatError
from neutrino_ae.formats.dmat import DmatData, body_words, filled_mask, from_pairs, write_head
from neutrino_ae.formats.dmat.keys import KeyCodec

#: A chunk source: called once per pass, it yields the trace's DMAT records (any shape) in order.
Chunks = Callable[[], Iterable[np.ndarray]]

#: Largest page span (in 64 KiB pages) kept as a presence table while scanning (1 byte per page).
PAGE_TABLE_SPAN = 1 << 26
#: Records kept for cutting buckets; one record in ``SAMPLE_STRIDE`` is sampled (more as the trace grows).
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
    clock_sample: np.ndarray  # uint64, clocks of every ``sample_stride``-th filled record or so
    page_sample: np.ndarray | None = None  # uint64, the page numbers of the same records
    min_clock: int = 0  # least clock of a filled record

    def codec(self) -> KeyCodec:
        return KeyCodec.choose(self.pages, self.min_clock, self.max_clock)

    def packs(self) -> bool:
        """Whether a (clock, page) key fits in one 64-bit word (any real GPU trace's does)."""
        return self.codec().mode != "wide"


@dataclass
class StreamSummary:
    num_clocks: int
    num_pairs: int
    spilled_bytes: int  # keys written to scratch files (0: everything fitted in memory)
    buckets: int


def scan(chunks: Chunks, sample_max: int | None = None, page_table_span: int | None = None,
         check_pages: Callable[[int, int], None] | None = None) -> DmatScan:
    """Pass 1 (see the module docstring). ``sample_max`` and ``page_table_span`` default to the module's
    constants; ``check_pages(pages, records)``, called after each chunk with the distinct pages and the
    records seen so far, may raise to stop a trace whose page list would not fit in memory."""
    cap = SAMPLE_MAX if sample_max is None else sample_max
    pages = _PageSet(PAGE_TABLE_SPAN if page_table_span is None else page_table_span)
    clocks: list[np.ndarray] = []
    numbers: list[np.ndarray] = []
    held, stride = 0, SAMPLE_STRIDE
    min_clock, max_clock, accesses, unfilled = -1, 0, 0, 0
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
        low = int(clock.min())
        min_clock = low if min_clock < 0 else min(min_clock, low)
        pages.add(page)
        clocks.append(clock[::stride].copy())
        numbers.append(page[::stride].copy())
        held += clocks[-1].size
        if held > cap:  # thin what is held and sample more sparsely from now on
            clocks, numbers = [c[::2] for c in clocks], [n[::2] for n in numbers]
            held = sum(c.size for c in clocks)
            stride *= 2
        if check_pages is not None:
            check_pages(pages.size(), accesses + unfilled)
    empty = np.zeros(0, np.uint64)
    return DmatScan(pages.sorted() << np.uint64(16), max_clock, accesses, unfilled,
                    np.concatenate(clocks) if clocks else empty, np.concatenate(numbers) if numbers else empty,
                    max(0, min_clock))


class _PageSet:
    """Distinct page numbers (address >> 16) as a presence table over their span, or as sorted arrays once
    the span is too wide for a table: each chunk's distinct pages, merged when they outgrow the merged set."""

    def __init__(self, table_span: int) -> None:
        self.base = 0
        self.table_span = table_span
        self.table = np.zeros(0, bool)
        self.wide: np.ndarray | None = None
        self.pending: list[np.ndarray] = []

    def add(self, page: np.ndarray) -> None:
        if self.wide is not None:
            self.pending.append(np.unique(page))
            if sum(p.size for p in self.pending) > max(self.wide.size, 1 << 16):
                self._merge()
            return
        lo, hi = int(page.min()), int(page.max())
        if self.table.size == 0:
            self.base, self.table = lo, np.zeros(0, bool)
        new_lo, new_hi = min(lo, self.base), max(hi, self.base + self.table.size - 1)
        if new_hi - new_lo + 1 > self.table_span:
            self.wide = self.sorted()
            self.table = np.zeros(0, bool)
            self.add(page)
            return
        if new_lo < self.base or new_hi >= self.base + self.table.size:
            grown = np.zeros(new_hi - new_lo + 1, bool)
            at = self.base - new_lo
            grown[at : at + self.table.size] = self.table
            self.base, self.table = new_lo, grown
        self.table[page - np.uint64(self.base)] = True

    def _merge(self) -> None:
        assert self.wide is not None
        self.wide = np.unique(np.concatenate([self.wide, *self.pending]))
        self.pending = []

    def size(self) -> int:
        """The distinct pages so far (an upper bound while chunks wait to be merged)."""
        if self.wide is not None:
            return self.wide.size + sum(p.size for p in self.pending)
        return int(np.count_nonzero(self.table))

    def sorted(self) -> np.ndarray:
        if self.wide is not None:
            self._merge()
            return self.wide.astype(np.uint64)
        return np.flatnonzero(self.table).astype(np.uint64) + np.uint64(self.base)


def bucket_edges(info: DmatScan, codec: KeyCodec, bucket_records: int) -> np.ndarray:
    """Ascending keys where buckets start (the first is the least key), about ``bucket_records`` records
    each by the scan's sample."""
    n = -(-info.accesses // max(1, bucket_records))
    sample = info.clock_sample
    first = np.zeros(1, codec.dtype)  # the least key of all
    if n <= 1 or sample.size == 0 or info.page_sample is None:
        return first
    keys = codec.sort(codec.encode(sample, info.page_sample))
    at = (np.arange(1, n) * keys.size) // n
    return np.unique(np.concatenate([first, keys[at]]))


class _Buckets:
    """Keys per bucket: in memory up to ``memory_bytes`` in all, then appended to one file per bucket."""

    def __init__(self, n: int, scratch: Path, memory_bytes: int, dtype: np.dtype | None = None) -> None:
        self.dtype = np.dtype(np.uint64) if dtype is None else dtype
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
        keys = np.empty(self.sizes[i], self.dtype)
        at = 0
        if self.files[i].exists():
            with open(self.files[i], "rb") as fh:
                at = fh.readinto(keys.view(np.uint8)) // self.dtype.itemsize
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
                   bucket_records: int | None = None, memory_bytes: int | None = None,
                   overlap: bool = False) -> StreamSummary:
    """Passes 2 and 3: write the ``.dmat`` of the records ``chunks`` yields (``info`` from :func:`scan` of
    the same records) to ``path`` atomically, handing each batch of clock entries (a canonical
    :class:`DmatData` of consecutive clocks, ``pages`` = all pages) to ``on_batch``. Scratch files go in
    a temporary folder under ``scratch_dir`` (default: beside ``path``), removed when done. ``source``,
    the trace file, is named by the error raised if the records differ from the scan's (the file
    changed between passes). ``bucket_records`` and ``memory_bytes`` default to the module's constants.
    ``overlap``: each batch is written and handed to ``on_batch`` in a second thread while the next bucket
    is sorted and counted (numpy's sort and the file write release the GIL; one batch in flight, in order:
    the same file and the same calls, about one more bucket's memory)."""
    codec = info.codec()
    edge_keys = bucket_edges(info, codec, BUCKET_RECORDS if bucket_records is None else bucket_records)
    dest = Path(path)
    scratch_parent = Path(scratch_dir) if scratch_dir is not None else dest.parent
    scratch_parent.mkdir(parents=True, exist_ok=True)
    num_clocks = num_pairs = accesses = 0
    remove_dead_scratch(scratch_parent)
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=scratch_parent) as tmp:
        buckets = _Buckets(edge_keys.size, Path(tmp), MEMORY_BYTES if memory_bytes is None else memory_bytes,
                           codec.dtype)
        for chunk in chunks():
            _partition(chunk, codec, edge_keys, buckets)
        with atomic_open(dest, "wb") as fh, _Emitter(fh, on_batch, overlap) as emit:
            write_head(fh, info.pages, 0)
            carry = _Carry()
            for i in range(edge_keys.size):
                clock, page, count = codec.count(buckets.take(i))
                batch = carry.take(clock, page, count, last=i == edge_keys.size - 1, pages=info.pages)
                if batch is None:
                    continue
                num_clocks += batch.clocks.size
                num_pairs += batch.pair_page.size
                accesses += batch.num_accesses
                emit(batch)
            emit.finish()
            if accesses != info.accesses:
                raise TraceFormatError(source, f"changed while being read: {accesses:,} accesses on the second "
                                               f"pass, {info.accesses:,} on the first")
            fh.seek(8)
            fh.write(np.array([num_clocks], "<u8").tobytes())
    return StreamSummary(num_clocks, num_pairs, buckets.spilled, edge_keys.size)


class _Emitter:
    """Writes each batch's entries to the ``.dmat`` and hands the batch to ``on_batch``, in order: here, or
    (``overlap``) in one worker thread, at most one batch in flight; a worker's error is raised here."""

    def __init__(self, fh: BinaryIO, on_batch: Callable[[DmatData], None] | None, overlap: bool) -> None:
        self.fh, self.on_batch = fh, on_batch
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="dmat-write") if overlap else None
        self.pending: Future | None = None

    def _emit(self, batch: DmatData) -> None:
        body_words(batch.clocks, batch.indptr, batch.pair_page, batch.pair_count).tofile(self.fh)
        if self.on_batch is not None:
            self.on_batch(batch)

    def __call__(self, batch: DmatData) -> None:
        if self.pool is None:
            self._emit(batch)
            return
        self.finish()
        self.pending = self.pool.submit(self._emit, batch)

    def finish(self) -> None:
        """Wait for the batch in flight (raising its error)."""
        if self.pending is not None:
            pending, self.pending = self.pending, None
            pending.result()

    def __enter__(self) -> _Emitter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


class _Carry:
    """The pairs of the last clock of a bucket, held back until the next bucket says whether that clock goes
    on (buckets are cut by key, so one clock may span several): each clock becomes one ``.dmat`` entry."""

    def __init__(self) -> None:
        self.held: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def take(self, clock: np.ndarray, page: np.ndarray, count: np.ndarray, last: bool,
             pages: np.ndarray) -> DmatData | None:
        """The entries complete after this bucket's (clock, page, count) pairs, in (clock, page) order."""
        if self.held is not None:
            clock, page, count = (np.concatenate([h, x]) for h, x in zip(self.held, (clock, page, count),
                                                                           strict=True))
            self.held = None
        if not last and clock.size:
            cut = int(np.searchsorted(clock, clock[-1]))  # where the last clock's pairs begin
            self.held = (clock[cut:], page[cut:], count[cut:])
            clock, page, count = clock[:cut], page[:cut], count[:cut]
        if clock.size == 0:
            return None
        return from_pairs(clock, page, count, presorted=True, pages=pages)


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


def _partition(chunk: np.ndarray, codec: KeyCodec, edge_keys: np.ndarray, buckets: _Buckets) -> None:
    """Pass 2 for one chunk: the keys of its filled records, appended to their buckets."""
    rec = chunk.reshape(-1)
    page = rec["addr"] >> np.uint64(16)
    clock = rec["clock"]
    filled = filled_mask(clock, page)
    if not filled.all():
        page, clock = page[filled], clock[filled]
    key = codec.encode(clock, page)
    del page, clock
    if edge_keys.size == 1:
        buckets.add(0, key)
        return
    key, cut = codec.split(key, edge_keys)
    for i in np.flatnonzero(np.diff(cut)):
        buckets.add(int(i), key[cut[i] : cut[i + 1]])
