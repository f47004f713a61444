"""The sort keys of the streamed sparsifier (:mod:`.stream`): each filled (clock, page) record as
one key whose order is (clock, page) order, so that sorting a bucket of keys and counting equal ones
gives its ``.dmat`` entries.

* **packed** (one uint64): ``(clock - min_clock) << page_bits | page part``, the page part being the
  page number less the first page's (``offset``: the pages' span fits) or the page's rank among the
  trace's distinct pages (``rank``: any span; a binary search per record). Clocks counted from the
  trace's least clock make absolute timestamps (``%globaltimer``-like clocks near 2**60) pack too.
* **wide** (two uint64 words, :data:`WIDE`): when even the rank does not leave the clock span room in 64
  bits (a clock span past 2**40 cycles with millions of pages). Sorted with ``lexsort``: slower, same
  result, and memory bounded the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neutrino_ae.formats.dmat import run_starts

WIDE = np.dtype([("clock", "<u8"), ("page", "<u8")])


@dataclass(frozen=True)
class KeyCodec:
    """How records become keys and keys become (clock, page address) pairs; see the module docstring."""

    mode: str  # "offset", "rank" or "wide"
    clock_base: int  # subtracted from every clock (the least filled clock)
    page_bits: int  # bits of the page part of a packed key
    first_page: int  # page number (address >> 16) subtracted in "offset" mode
    ranks: np.ndarray | None  # "rank" mode: the distinct page numbers, ascending

    @classmethod
    def choose(cls, pages: np.ndarray, min_clock: int, max_clock: int) -> KeyCodec:
        """The cheapest layout that holds every key of a trace with these distinct ``pages`` (addresses,
        ascending) and clocks."""
        numbers = np.asarray(pages, np.uint64) >> np.uint64(16)
        clock_bits = max(0, int(max_clock) - int(min_clock)).bit_length()
        first = int(numbers[0]) if numbers.size else 0
        span_bits = (int(numbers[-1]) - first).bit_length() if numbers.size else 0
        if clock_bits + span_bits <= 64:
            return cls("offset", int(min_clock), span_bits, first, None)
        rank_bits = max(0, numbers.size - 1).bit_length()
        if clock_bits + rank_bits <= 64:
            return cls("rank", int(min_clock), rank_bits, 0, numbers)
        return cls("wide", int(min_clock), 0, 0, None)

    @property
    def dtype(self) -> np.dtype:
        return WIDE if self.mode == "wide" else np.dtype(np.uint64)

    def encode(self, clock: np.ndarray, page: np.ndarray) -> np.ndarray:
        """Keys of filled records: ``clock`` and ``page`` (page numbers) are consumed (changed in place
        where they own their memory)."""
        clock = np.subtract(clock, np.uint64(self.clock_base), dtype=np.uint64)
        if self.mode == "wide":
            keys = np.empty(clock.size, WIDE)
            keys["clock"], keys["page"] = clock, page
            return keys
        if self.mode == "offset":
            part = np.subtract(page, np.uint64(self.first_page), dtype=np.uint64)
        else:
            assert self.ranks is not None
            part = np.searchsorted(self.ranks, page).astype(np.uint64)
        clock <<= np.uint64(self.page_bits)
        clock |= part
        return clock

    def edge_keys(self, edges: np.ndarray) -> np.ndarray:
        """The first key of each bucket whose clock range starts at ``edges`` (ascending clocks)."""
        rel = np.maximum(edges.astype(np.uint64), np.uint64(self.clock_base)) - np.uint64(self.clock_base)
        if self.mode == "wide":
            keys = np.zeros(rel.size, WIDE)
            keys["clock"] = rel
            return keys
        return rel << np.uint64(self.page_bits)

    def sort(self, keys: np.ndarray) -> np.ndarray:
        """``keys`` in (clock, page) order (packed keys in place)."""
        if self.mode != "wide":
            keys.sort()
            return keys
        return keys[np.lexsort((keys["page"], keys["clock"]))]

    def split(self, keys: np.ndarray, edge_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``keys`` sorted by bucket and where each bucket's part starts (``len(edge_keys) + 1`` cuts)."""
        if self.mode != "wide":
            keys.sort()
            return keys, np.r_[0, np.searchsorted(keys, edge_keys[1:]), keys.size]
        bucket = np.searchsorted(edge_keys, keys, side="right")  # lexicographic: (clock, page)
        order = np.argsort(bucket, kind="stable")
        keys, bucket = keys[order], bucket[order]
        return keys, np.searchsorted(bucket, np.arange(1, edge_keys.size + 2))

    def count(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(clock, page address, count) of the distinct keys of a bucket, in (clock, page) order."""
        keys = self.sort(keys)
        if self.mode == "wide":
            clock, page = keys["clock"], keys["page"]
            first = np.flatnonzero(np.r_[True, (clock[1:] != clock[:-1]) | (page[1:] != page[:-1])]) \
                if keys.size else np.zeros(0, np.int64)
            count = np.diff(np.r_[first, keys.size])
            clock, number = clock[first], page[first]
        else:
            first = run_starts(keys)
            if first.size == keys.size:  # every key distinct (a random-access trace): no gather
                count, unique = np.ones(keys.size, np.int64), keys
            else:
                count = np.diff(np.r_[first, keys.size])
                unique = keys[first]
            del keys
            number = unique & np.uint64((1 << self.page_bits) - 1)
            clock = unique >> np.uint64(self.page_bits)
            if self.mode == "offset":
                number += np.uint64(self.first_page)
            else:
                assert self.ranks is not None
                number = self.ranks[number.astype(np.int64)]
        clock += np.uint64(self.clock_base)
        return clock, number << np.uint64(16), count
