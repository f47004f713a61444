"""Sparsified DMAT files (``*.dmat``) and the sparsifier that makes them from a dmat ``.bin``.

File layout (little-endian)::

    uint64 num_pages, uint64 num_clocks
    num_pages  x uint64 page                                    (unordered)
    num_clocks x { uint64 clock, uint64 n, n x { uint64 page, uint32 count } }   (12-byte packed pairs)

Page = ``addr & ~0xFFFF`` (64 KiB pages). In memory we keep the same content in CSR form:
``clocks[i]`` owns pairs ``indptr[i]:indptr[i+1]`` of ``pair_page``/``pair_count``.

Unfilled slots come in two forms, and :func:`filled_mask` is the one rule for both:

* the hook driver zero-fills the probe buffer, so the slots of the ``count`` datamodel that no
  access filled are (clock 0, address 0) records. Page 0 holds no device memory (addresses below
  64 KiB are never a global allocation), so a page-0 record is unfilled. The artifact's sparsifier
  keeps them all as one phantom cell (clock 0, page 0) in the ``.dmat``;
* the artifact's sparsifier (``tools/dmat.cc``) skips a record whose clock is all ones
  (``clock == ~0``, "no record"); a buffer filled with 0xFF has those.

:func:`sparsify` and the streamed sparsifier drop both and :func:`drop_unfilled` removes them from a
``.dmat`` (the artifact's phantom page-0 cell); all report how many they dropped
(``DmatData.unfilled``), and the DMAT figures say so.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from neutrino_ae.atomic import atomic_open
from neutrino_ae.errors import TraceFormatError
from neutrino_ae.formats.inputs import check_input
from neutrino_ae.jit import jit, use_numba

PAGE_MASK = np.uint64(~np.uint64(0xFFFF))
#: The artifact sparsifier's "no record" clock (``record.clock != ~0`` in ``tools/dmat.cc``).
NO_RECORD_CLOCK = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
PAIR_DTYPE = np.dtype([("page", "<u8"), ("count", "<u4")])  # packed: 12 bytes


@dataclass
class DmatData:
    pages: np.ndarray  # uint64, distinct pages in file order
    clocks: np.ndarray  # uint64, one per clock entry
    indptr: np.ndarray  # int64, len(clocks) + 1
    pair_page: np.ndarray  # uint64
    pair_count: np.ndarray  # uint32
    unfilled: int = 0  # unfilled count slots dropped (zero-filled records, or a page-0 phantom cell)
    source: Path | None = None  # the .dmat file it was read from, named by errors found later

    @property
    def num_accesses(self) -> int:
        return int(self.pair_count.sum(dtype=np.uint64))

    def pair_clock(self) -> np.ndarray:
        """The clock of every (page, count) pair, aligned with ``pair_page``."""
        return np.repeat(self.clocks, np.diff(self.indptr))

    def equals(self, other: DmatData) -> bool:
        """Same content, ignoring the order of pages, of clocks and of pairs within a clock."""
        return _canonical(self) == _canonical(other)


def _canonical(d: DmatData) -> tuple[bytes, bytes]:
    clk = d.pair_clock()
    order = np.lexsort((d.pair_page, clk))
    triples = np.stack([clk[order], d.pair_page[order], d.pair_count[order].astype(np.uint64)])
    return np.sort(d.pages).tobytes(), triples.tobytes()


def page_of(addr: np.ndarray) -> np.ndarray:
    return np.asarray(addr, dtype=np.uint64) & PAGE_MASK


def run_starts(a: np.ndarray) -> np.ndarray:
    """Index where each run of equal values of ``a`` starts."""
    return np.flatnonzero(np.r_[True, a[1:] != a[:-1]]) if a.size else np.zeros(0, np.int64)


def from_pairs(clock: np.ndarray, page: np.ndarray, count: np.ndarray, presorted: bool = False,
               pages: np.ndarray | None = None) -> DmatData:
    """Build a canonical DmatData (clocks ascending, pages ascending) from unique (clock, page) pairs;
    ``presorted``: they already are in (clock, page) order (skips a sort); ``pages``: the page list, when
    known (else the distinct pages of the pairs)."""
    clock = np.asarray(clock, dtype=np.uint64)
    page = np.asarray(page, dtype=np.uint64)
    count = np.asarray(count)
    if not presorted:
        order = np.lexsort((page, clock))
        clock, page, count = clock[order], page[order], count[order]
    if count.size and int(count.max()) > np.iinfo(np.uint32).max:
        raise ValueError("a (clock, page) cell has more than 2**32-1 accesses; the .dmat format cannot hold it")
    starts = run_starts(clock)
    indptr = np.r_[starts, clock.size].astype(np.int64)
    return DmatData(np.unique(page) if pages is None else pages, clock[starts], indptr, page, count.astype(np.uint32))


def filled_mask(clock: np.ndarray, page: np.ndarray) -> np.ndarray:
    """Which (clock, page) records are real accesses: not page 0 (the hook's zero fill) and not the
    all-ones clock (the artifact's "no record" marker). ``page`` may be the page address or number."""
    mask = page != 0
    mask &= clock != NO_RECORD_CLOCK
    return mask


def sparsify(chunks: Iterable[np.ndarray], merge_every: int = 16) -> DmatData:
    """Count accesses per (clock, page) over chunks of DMAT records (any shape, ``records.DMAT``
    dtype). Unfilled slots (:func:`filled_mask`) are dropped and counted in ``unfilled``. Memory is bounded by
    the number of distinct (clock, page) pairs plus one chunk, not by the trace size."""
    acc_keys: list[np.ndarray] = []
    acc_counts: list[np.ndarray] = []
    pending = 0
    merged_clock = np.zeros(0, np.uint64)
    merged_page = np.zeros(0, np.uint64)
    merged_count = np.zeros(0, np.uint64)

    def merge() -> None:
        nonlocal merged_clock, merged_page, merged_count, acc_keys, acc_counts, pending
        if not acc_keys:
            return
        if len(acc_keys) == 1 and merged_clock.size == 0:  # one reduced run: nothing to merge
            (merged_clock, merged_page), merged_count = acc_keys[0], acc_counts[0]
            acc_keys, acc_counts, pending = [], [], 0
            return
        clk = np.concatenate([merged_clock, *(k[0] for k in acc_keys)])
        pg = np.concatenate([merged_page, *(k[1] for k in acc_keys)])
        cnt = np.concatenate([merged_count, *acc_counts])
        merged_clock, merged_page, merged_count = _reduce(clk, pg, cnt)
        acc_keys, acc_counts, pending = [], [], 0

    unfilled = 0
    for chunk in chunks:
        rec = chunk.reshape(-1)
        page = rec["addr"] & PAGE_MASK
        keep = filled_mask(rec["clock"], page)
        kept = int(np.count_nonzero(keep))
        unfilled += rec.size - kept
        if kept < rec.size:
            clock, page = rec["clock"][keep], page[keep]
        else:
            clock = rec["clock"]
        c, p, n = _reduce(clock, page, None)
        acc_keys.append((c, p))
        acc_counts.append(n)
        pending += 1
        if pending >= merge_every:
            merge()
    merge()
    data = from_pairs(merged_clock, merged_page, merged_count, presorted=True)  # _reduce sorts by (clock, page)
    data.unfilled = unfilled
    return data


def drop_unfilled(data: DmatData) -> DmatData:
    """``data`` without unfilled pairs (:func:`filled_mask`: the artifact sparsifier's phantom page-0 cell,
    or an all-ones clock); their accesses are added to ``unfilled``. Returns ``data`` itself when it has none."""
    pair_clock = data.pair_clock()
    keep = filled_mask(pair_clock, data.pair_page)
    if keep.all():
        return data
    bad = ~keep
    clk = pair_clock[keep]
    out = from_pairs(clk, data.pair_page[keep], data.pair_count[keep])
    out.unfilled = data.unfilled + int(data.pair_count[bad].sum(dtype=np.uint64))
    out.source = data.source
    return out


def _reduce(clock: np.ndarray, page: np.ndarray,
            count: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum counts of equal (clock, page) keys (``count=None``: every record counts 1); the result is
    ordered by (clock, page)."""
    if clock.size == 0:
        return clock.astype(np.uint64), page.astype(np.uint64), np.zeros(0, np.uint64)
    packed = _pack(clock, page)
    if packed is None:
        return _reduce_lexsort(clock, page, np.ones(clock.size, np.uint64) if count is None else count)
    # One sort of a packed (clock, page) uint64 key instead of a two-key lexsort: several times
    # faster, and the key order is exactly (clock, page).
    key, shift, page_shift, page_min = packed
    if count is None:
        key.sort()
        idx = run_starts(key)
        n = np.diff(np.r_[idx, key.size]).astype(np.uint64)
    else:
        order = np.argsort(key, kind="stable")  # the runs being merged are sorted: timsort merges them
        key = key[order]
        idx = run_starts(key)
        n = np.add.reduceat(np.asarray(count, np.uint64)[order], idx)
    k = key[idx]
    c = k >> np.uint64(shift)
    p = ((k & np.uint64((1 << shift) - 1)) << np.uint64(page_shift)) + page_min
    return c, p, n.astype(np.uint64)


def _pack(clock: np.ndarray, page: np.ndarray) -> tuple[np.ndarray, int, int, np.uint64] | None:
    """``clock << shift | (page - page_min) >> page_shift`` as uint64, or None when it needs > 64 bits."""
    clock = np.asarray(clock, np.uint64)
    page = np.asarray(page, np.uint64)
    page_min = page.min()
    rel = page - page_min
    # Pages of 64 KiB have 16 zero low bits (page_min too): drop them to save key bits.
    page_shift = 16 if int(np.bitwise_or.reduce(rel)) & 0xFFFF == 0 else 0
    rel >>= np.uint64(page_shift)
    shift = max(1, int(rel.max()).bit_length())
    # shift 64 would be a no-op shift on x86 (count taken mod 64), so it must stay below.
    if shift > 63 or int(clock.max()).bit_length() + shift > 64:
        return None
    return (clock << np.uint64(shift)) | rel, shift, page_shift, page_min


def _reduce_lexsort(clock: np.ndarray, page: np.ndarray,
                    count: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    order = np.lexsort((page, clock))
    c, p, n = clock[order], page[order], count[order]
    first = np.r_[True, (c[1:] != c[:-1]) | (p[1:] != p[:-1])]
    idx = np.flatnonzero(first)
    return c[idx].astype(np.uint64), p[idx].astype(np.uint64), np.add.reduceat(n, idx).astype(np.uint64)


def write_dmat(path: str | os.PathLike[str], data: DmatData, batch_items: int = 1 << 20) -> Path:
    """Write ``data`` atomically in the ``.dmat`` layout.

    The variable-length body is assembled one batch of clocks at a time (about ``batch_items`` heads +
    pairs each), so memory stays bounded for files of any size.
    """
    n_clocks = data.clocks.size
    indptr = np.asarray(data.indptr, dtype=np.int64)
    # Cumulative heads + pairs before clock i: batch edges fall where it crosses multiples of batch_items.
    weight = indptr[:-1] + np.arange(n_clocks, dtype=np.int64) if n_clocks else np.zeros(0, np.int64)
    total = int(indptr[-1]) + n_clocks if n_clocks else 0
    edges = np.unique(np.r_[0, np.searchsorted(weight, np.arange(batch_items, total, batch_items)), n_clocks])
    with atomic_open(path, "wb") as fh:
        write_head(fh, data.pages, n_clocks)
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            lo, hi = int(lo), int(hi)
            base, end = int(indptr[lo]), int(indptr[hi])
            body_words(data.clocks[lo:hi], indptr[lo : hi + 1] - base, data.pair_page[base:end],
                       data.pair_count[base:end]).tofile(fh)
    return Path(path)


def write_head(fh: BinaryIO, pages: np.ndarray, num_clocks: int) -> None:
    """The header and the page list; ``num_clocks`` may be patched later (it is the second word)."""
    fh.write(np.array([pages.size, num_clocks], dtype="<u8").tobytes())
    fh.write(np.asarray(pages, dtype="<u8").tobytes())


def body_words(clocks: np.ndarray, ptr: np.ndarray, pair_page: np.ndarray, pair_count: np.ndarray) -> np.ndarray:
    """The packed body of some clock entries as 4-byte words: per clock a (clock, n) head of 4 words,
    then its pairs of 3 words (page, count); ``ptr`` indexes the pairs of each clock (``ptr[0] == 0``).

    Every item is word-aligned (16 + 12 n bytes per entry), so the body is filled by a few word
    scatters: clock i's head sits after i heads and ``ptr[i]`` pairs, pair j after ``c(j) + 1`` heads
    and j pairs."""
    n_clocks, n_pairs = clocks.size, int(ptr[-1])
    words = np.empty(4 * n_clocks + 3 * n_pairs, dtype="<u4")
    per_clock = np.diff(ptr)
    head = 4 * np.arange(n_clocks, dtype=np.int64) + 3 * ptr[:-1]
    halves = np.asarray(clocks, dtype="<u8").view("<u4")
    words[head], words[head + 1] = halves[0::2], halves[1::2]
    halves = per_clock.astype("<u8").view("<u4")
    words[head + 2], words[head + 3] = halves[0::2], halves[1::2]
    pos = 3 * np.arange(n_pairs, dtype=np.int64)
    pos += np.repeat(4 * np.arange(1, n_clocks + 1, dtype=np.int64), per_clock)
    halves = np.asarray(pair_page, dtype="<u8").view("<u4")
    words[pos], words[pos + 1] = halves[0::2], halves[1::2]
    words[pos + 2] = pair_count
    return words


@dataclass
class DmatHead:
    """A ``.dmat`` file's header and page list, checked against the file's length."""

    path: Path
    pages: np.ndarray  # uint64, file order
    num_clocks: int
    body_offset: int
    size: int


def open_dmat(path: str | os.PathLike[str]) -> DmatHead:
    p = check_input(path, ".dmat")
    size = p.stat().st_size
    with open(p, "rb") as fh:
        head = fh.read(16)
        if len(head) < 16:
            raise TraceFormatError(p, f"truncated: {len(head)} bytes, the .dmat header needs 16")
        num_pages, num_clocks = (int(x) for x in np.frombuffer(head, "<u8"))
        if num_pages > (size - 16) // 8:
            raise TraceFormatError(p, f"impossible header: {num_pages} pages do not fit in {size} bytes")
        pages = np.fromfile(fh, dtype="<u8", count=num_pages).astype(np.uint64)
    pos = 16 + 8 * num_pages
    if num_clocks > (size - pos) // 16:
        raise TraceFormatError(p, f"impossible header: {num_clocks} clock entries do not fit in {size} bytes")
    return DmatHead(p, pages, num_clocks, pos, size)


def read_dmat(path: str | os.PathLike[str]) -> DmatData:
    """Read a ``.dmat`` file, validating every count against the file length."""
    head = open_dmat(path)
    p = head.path
    raw = np.fromfile(p, dtype=np.uint8)
    if raw.size != head.size:
        raise TraceFormatError(p, "changed while being read")
    body = raw[head.body_offset :]
    starts, counts = _walk_body(p, body, head.num_clocks)
    indptr = np.r_[0, np.cumsum(counts)].astype(np.int64)
    page, count = _pairs(body, starts, counts, int(indptr[-1]))
    return DmatData(head.pages, _clocks(body, starts), indptr, page, count, source=p)


#: Bytes of ``.dmat`` body read per batch by :func:`iter_dmat`.
READ_BATCH_BYTES = 16 << 20


def iter_dmat(head: DmatHead, batch_bytes: int | None = None) -> Iterator[DmatData]:
    """The clock entries of a ``.dmat`` file in batches (file order), reading about ``batch_bytes`` of
    it at a time: memory is bounded whatever the file's size. Needs the compiled walk (numba); without
    it, or for a file too small to pay for loading it, the file is read whole by :func:`read_dmat` and
    handed over as one batch. A malformed file raises the same one-line error as :func:`read_dmat`."""
    if not use_numba(head.size // 12):
        yield read_dmat(head.path)
        return
    step = READ_BATCH_BYTES if batch_bytes is None else batch_bytes
    buf = np.empty(max(64, step) // 4 * 4, np.uint8)
    held, done, at_end = 0, 0, False
    with open(head.path, "rb") as fh:
        fh.seek(head.body_offset)
        while True:
            if not at_end:
                want = buf.size - held
                got = fh.readinto(buf[held:].data) or 0
                at_end = got < want
                held += got
            if done == head.num_clocks:
                if held:  # bytes after the last entry
                    _refuse(head)
                return
            words = buf[: held - held % 4].view("<u4")
            starts, counts, end, ok = _walk_some(words, head.num_clocks - done)
            if not ok or (starts.size == 0 and at_end):
                _refuse(head)
            if starts.size == 0:  # one entry larger than the buffer: grow it
                buf = np.concatenate([buf[:held], np.empty(buf.size, np.uint8)])
                continue
            page, count = _pairs_kernel(words, starts, counts, int(counts.sum()))
            done += starts.size
            yield DmatData(head.pages, _clocks(buf[:held], starts), np.r_[0, np.cumsum(counts)].astype(np.int64),
                           page, count, source=head.path)
            rest = held - 4 * end
            buf[:rest] = buf[4 * end : held]
            held = rest


def _refuse(head: DmatHead) -> None:
    """Raise the one-line error of a body that does not walk: :func:`read_dmat`'s, which names the first
    bad entry (or the trailing bytes)."""
    read_dmat(head.path)
    raise TraceFormatError(head.path, "changed while being read")


@jit
def _walk_some(words: np.ndarray, max_entries: int) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """Byte offsets and pair counts of the whole clock entries at the start of ``words`` (at most
    ``max_entries``), and the word where the first incomplete one starts; ``ok`` is False for a count
    of 2**32 pairs or more (no real file has one)."""
    cap = min(max_entries, words.size // 4)
    starts = np.empty(cap, np.int64)
    counts = np.empty(cap, np.int64)
    w = 0
    k = 0
    nw = words.size
    while k < cap and w + 4 <= nw:
        if words[w + 3] != 0:
            return starts[:k], counts[:k], w, False
        n = np.int64(words[w + 2])
        if w + 4 + 3 * n > nw:
            break
        starts[k] = 4 * w
        counts[k] = n
        k += 1
        w += 4 + 3 * n
    return starts[:k], counts[:k], w, True


def _pairs(body: np.ndarray, starts: np.ndarray, counts: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray]:
    """(page, count) of every pair of a walked body: entries start at multiples of 4 bytes, heads are 4
    words and pairs 3, so dropping the head words leaves the pairs packed as rows of 3 words (one
    compiled copy where numba is worth it, else a mask over the words)."""
    if body.size % 4:  # not a whole number of words: the walk has already refused such a body
        raise ValueError("a .dmat body is a whole number of 4-byte words")
    words = body.view("<u4")
    if use_numba(total):
        return _pairs_kernel(words, starts, counts, total)
    keep = np.ones(words.size, dtype=bool)
    keep[((starts >> 2)[:, None] + np.arange(4)).ravel()] = False
    rows = words[keep].reshape(-1, 3)
    page = np.ascontiguousarray(rows[:, :2]).view("<u8").ravel().astype(np.uint64, copy=False)
    return page, rows[:, 2].astype(np.uint32)


def _clocks(body: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The clock of each entry starting at byte offsets ``starts`` of ``body``."""
    return _items(body, "V8", 8)[starts].view("<u8").astype(np.uint64) if starts.size else np.zeros(0, np.uint64)


def _items(body: np.ndarray, dtype: np.dtype | str, size: int) -> np.ndarray:
    """``body`` as items of ``dtype`` starting at every byte (item i = bytes i .. i+size-1)."""
    if body.size < size:
        return np.zeros(0, dtype)
    return np.ndarray((body.size - size + 1,), dtype=dtype, buffer=body, strides=(1,))


_WALK_WINDOW = 1 << 22  # bytes of body examined per round of the chain walk
_PRUNE_ROUNDS = 3


def _walk_body(p: Path, body: np.ndarray, num_clocks: int) -> tuple[np.ndarray, np.ndarray]:
    """(offset in ``body``, pair count) of each of the ``num_clocks`` clock entries: compiled one entry
    at a time where numba is worth it (:func:`_walk_some`), else :func:`_walk_numpy`; a body that does
    not walk cleanly is walked by :func:`_walk_loop`, which names the first bad entry."""
    if use_numba(body.size // 12) and body.size % 4 == 0:
        words = body.view("<u4")
        starts, counts, end, ok = _walk_some(words, num_clocks)
        whole = ok and starts.size == num_clocks and end == words.size
        return (starts, counts) if whole else _walk_loop(p, body, num_clocks)
    return _walk_numpy(p, body, num_clocks)


@jit
def _pairs_kernel(words: np.ndarray, starts: np.ndarray, counts: np.ndarray,
                  total: int) -> tuple[np.ndarray, np.ndarray]:
    page = np.empty(total, np.uint64)
    count = np.empty(total, np.uint32)
    k = 0
    for i in range(starts.size):
        w = starts[i] // 4 + 4
        for _ in range(counts[i]):
            page[k] = np.uint64(words[w]) | (np.uint64(words[w + 1]) << np.uint64(32))
            count[k] = words[w + 2]
            w += 3
            k += 1
    return page, count


def _walk_numpy(p: Path, body: np.ndarray, num_clocks: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_walk_body` in numpy.

    Entry i+1 starts at ``offset_i + 16 + 12 n_i``: a chain that a loop follows one clock at a time.
    Instead, per window of the body, every 4-byte-aligned position (all entry offsets are: 16 + 12 n
    is a multiple of 4) is taken as a possible entry with a successor. Positions whose count does not
    fit, or whose successor's does not (a few rounds), are dropped: entries of a well-formed file
    always survive, and few others do. Pointer doubling over the survivors (successor after 1, 2,
    4, ... steps) lists the chain from the window's first entry in O(log) numpy passes. A file whose
    chain does not come out whole (truncated, impossible count, trailing bytes) is walked by the
    loop, which names the first bad entry."""
    blen = body.size
    found_starts: list[np.ndarray] = []
    found_counts: list[np.ndarray] = []
    done = 0
    off = 0
    huge = np.uint64(blen // 12)  # a larger count cannot fit anywhere in the body
    while done < num_clocks:
        hi = min(off + _WALK_WINDOW, blen - 15)  # candidates need their 16-byte head in the body
        if hi <= off:
            return _walk_loop(p, body, num_clocks)
        size = (hi - off + 3) // 4
        n_raw = _items(body[off + 8 :], "<u8", 8)[: 4 * size : 4].copy()
        # Offsets relative to the window in int32 (counts clamped: anything past the window leaves it).
        n_win = np.minimum(n_raw, np.uint64(_WALK_WINDOW // 12 + 1)).astype(np.int32)
        succ = np.arange(16, 16 + 4 * size, 4, dtype=np.int32)
        succ += 12 * n_win
        nxt = np.minimum(succ >> 2, size)  # candidate index of the successor; ``size``: left the window
        valid = np.ones(size + 1, dtype=bool)
        valid[:size] = n_raw <= huge
        for _ in range(_PRUNE_ROUNDS):
            valid[:size] &= valid[nxt]
        if not valid[0]:
            return _walk_loop(p, body, num_clocks)
        keep = np.flatnonzero(valid[:size])
        m = keep.size
        remap = np.full(size + 1, m, np.int32)
        remap[keep] = np.arange(m, dtype=np.int32)
        # Index m is "left the window or dropped": it maps to itself.
        jump = np.r_[remap[nxt[keep]], m].astype(np.int32)
        need = num_clocks - done
        tables = [jump]
        while tables[-1][0] != m and (1 << len(tables)) <= need:
            tables.append(tables[-1][tables[-1]])
        # The chain from index 0: at each level from the top, insert the 2**k-th successor of every
        # node found so far (it falls between that node and the next, so order is kept).
        chain = np.zeros(1, np.int32)
        for table in reversed(tables[:-1] if tables[-1][0] == m else tables):
            chain = np.column_stack([chain, table[chain]]).ravel()
            chain = chain[chain != m]
        chain = keep[chain[:need]]
        done += chain.size
        last = int(chain[-1])
        # Successors inside the window are within the body; the last one's is checked here.
        n_last = int(n_raw[last])
        at = off + 4 * last
        if n_last > (blen - at - 16) // 12 or (done < num_clocks and nxt[last] != size):
            return _walk_loop(p, body, num_clocks)
        found_starts.append(off + 4 * chain.astype(np.int64))
        found_counts.append(n_raw[chain].astype(np.int64))
        off = at + 16 + 12 * n_last
    if off != blen:
        return _walk_loop(p, body, num_clocks)
    if not found_starts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(found_starts), np.concatenate(found_counts)


def _walk_loop(p: Path, body: np.ndarray, num_clocks: int) -> tuple[np.ndarray, np.ndarray]:
    """The entries walked one at a time; raises for the first bad one (or trailing bytes)."""
    starts = np.empty(num_clocks, np.int64)
    counts = np.empty(num_clocks, np.int64)
    buf = body.tobytes()
    off = 0
    blen = len(buf)
    for i in range(num_clocks):
        if off + 16 > blen:
            raise TraceFormatError(p, f"truncated: clock entry {i} of {num_clocks} starts past the end of the file")
        n = int.from_bytes(buf[off + 8 : off + 16], "little")
        if n > (blen - off - 16) // 12:
            raise TraceFormatError(p, f"truncated: clock entry {i} declares {n} pages, past the end of the file")
        starts[i] = off
        counts[i] = n
        off += 16 + 12 * n
    if off != blen:
        raise TraceFormatError(p, f"{blen - off} trailing bytes after the last clock entry (corrupt file?)")
    return starts, counts
