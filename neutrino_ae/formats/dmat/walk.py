"""Walking a ``.dmat`` body: where each clock entry starts and how many (page, count) pairs it holds
(each entry's length is in its head, so entry i+1 is found only through entry i), then the pairs and
clocks gathered from those offsets. Compiled one entry at a time where numba is worth it
(:func:`walk_some`, also what :func:`~.dmat.iter_dmat` walks its batches with), else a chain walk
in numpy; a body that does not walk cleanly is walked by a plain loop that names the first bad entry.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neutrino_ae.errors import TraceFormatError
from neutrino_ae.jit import jit, use_numba


@jit
def walk_some(words: np.ndarray, max_entries: int) -> tuple[np.ndarray, np.ndarray, int, bool]:
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


def pairs_of(body: np.ndarray, starts: np.ndarray, counts: np.ndarray, total: int) -> tuple[np.ndarray, np.ndarray]:
    """(page, count) of every pair of a walked body: entries start at multiples of 4 bytes, heads are 4
    words and pairs 3, so dropping the head words leaves the pairs packed as rows of 3 words (one
    compiled copy where numba is worth it, else a mask over the words)."""
    if body.size % 4:  # not a whole number of words: the walk has already refused such a body
        raise ValueError("a .dmat body is a whole number of 4-byte words")
    words = body.view("<u4")
    if use_numba(total):
        return pairs_kernel(words, starts, counts, total)
    keep = np.ones(words.size, dtype=bool)
    keep[((starts >> 2)[:, None] + np.arange(4)).ravel()] = False
    rows = words[keep].reshape(-1, 3)
    page = np.ascontiguousarray(rows[:, :2]).view("<u8").ravel().astype(np.uint64, copy=False)
    return page, rows[:, 2].astype(np.uint32)


def clocks_of(body: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The clock of each entry starting at byte offsets ``starts`` of ``body``."""
    return _items(body, "V8", 8)[starts].view("<u8").astype(np.uint64) if starts.size else np.zeros(0, np.uint64)


def _items(body: np.ndarray, dtype: np.dtype | str, size: int) -> np.ndarray:
    """``body`` as items of ``dtype`` starting at every byte (item i = bytes i .. i+size-1)."""
    if body.size < size:
        return np.zeros(0, dtype)
    return np.ndarray((body.size - size + 1,), dtype=dtype, buffer=body, strides=(1,))


_WALK_WINDOW = 1 << 22  # bytes of body examined per round of the chain walk
_PRUNE_ROUNDS = 3


def walk_body(p: Path, body: np.ndarray, num_clocks: int) -> tuple[np.ndarray, np.ndarray]:
    """(offset in ``body``, pair count) of each of the ``num_clocks`` clock entries: compiled one entry
    at a time where numba is worth it (:func:`walk_some`), else :func:`_walk_numpy`; a body that does
    not walk cleanly is walked by :func:`_walk_loop`, which names the first bad entry."""
    if use_numba(body.size // 12) and body.size % 4 == 0:
        words = body.view("<u4")
        starts, counts, end, ok = walk_some(words, num_clocks)
        whole = ok and starts.size == num_clocks and end == words.size
        return (starts, counts) if whole else _walk_loop(p, body, num_clocks)
    return _walk_numpy(p, body, num_clocks)


@jit
def pairs_kernel(words: np.ndarray, starts: np.ndarray, counts: np.ndarray,
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
    """:func:`walk_body` in numpy.

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
