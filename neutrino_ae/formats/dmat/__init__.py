"""Sparsified DMAT files (``*.dmat``): :class:`DmatData`, reading and writing, and the unfilled-slot rule.

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

:func:`.sparsify.sparsify` and the streamed sparsifier (:mod:`.stream`) drop both and
:func:`drop_unfilled` removes them from a ``.dmat`` (the artifact's phantom page-0 cell); all report
how many they dropped (``DmatData.unfilled``), and the DMAT figures say so.

A ``.dmat`` body is walked entry by entry (each entry's length is in its head) by :mod:`.walk`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from neutrino_ae.atomic import atomic_open
from neutrino_ae.errors import TraceFormatError
from neutrino_ae.formats.dmat.walk import clocks_of, pairs_kernel, pairs_of, walk_body, walk_some
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
    and j pairs. Where numba is loaded already (a large DMAT figure loads it), one compiled pass writes
    the same words."""
    n_clocks, n_pairs = clocks.size, int(ptr[-1])
    if n_pairs and "numba" in sys.modules and use_numba(n_pairs) and sys.byteorder == "little":
        return _body_kernel(np.ascontiguousarray(clocks, np.uint64), np.ascontiguousarray(ptr, np.int64),
                            np.ascontiguousarray(pair_page, np.uint64), np.ascontiguousarray(pair_count, np.uint32))
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


@jit
def _body_kernel(clocks: np.ndarray, ptr: np.ndarray, pair_page: np.ndarray, pair_count: np.ndarray) -> np.ndarray:
    """:func:`body_words` in one pass (native little-endian words)."""
    n = clocks.size
    words = np.empty(4 * n + 3 * ptr[n], np.uint32)
    low, shift = np.uint64(0xFFFF_FFFF), np.uint64(32)
    w = 0
    for i in range(n):
        c = clocks[i]
        m = np.uint64(ptr[i + 1] - ptr[i])
        words[w] = np.uint32(c & low)
        words[w + 1] = np.uint32(c >> shift)
        words[w + 2] = np.uint32(m & low)
        words[w + 3] = np.uint32(m >> shift)
        w += 4
        for j in range(ptr[i], ptr[i + 1]):
            p = pair_page[j]
            words[w] = np.uint32(p & low)
            words[w + 1] = np.uint32(p >> shift)
            words[w + 2] = pair_count[j]
            w += 3
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
    starts, counts = walk_body(p, body, head.num_clocks)
    indptr = np.r_[0, np.cumsum(counts)].astype(np.int64)
    page, count = pairs_of(body, starts, counts, int(indptr[-1]))
    return DmatData(head.pages, clocks_of(body, starts), indptr, page, count, source=p)


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
            starts, counts, end, ok = walk_some(words, head.num_clocks - done)
            if not ok or (starts.size == 0 and at_end):
                _refuse(head)
            if starts.size == 0:  # one entry larger than the buffer: grow it
                buf = np.concatenate([buf[:held], np.empty(buf.size, np.uint8)])
                continue
            page, count = pairs_kernel(words, starts, counts, int(counts.sum()))
            done += starts.size
            yield DmatData(head.pages, clocks_of(buf[:held], starts), np.r_[0, np.cumsum(counts)].astype(np.int64),
                           page, count, source=head.path)
            rest = held - 4 * end
            buf[:rest] = buf[4 * end : held]
            held = rest


def _refuse(head: DmatHead) -> None:
    """Raise the one-line error of a body that does not walk: :func:`read_dmat`'s, which names the first
    bad entry (or the trailing bytes)."""
    read_dmat(head.path)
    raise TraceFormatError(head.path, "changed while being read")
