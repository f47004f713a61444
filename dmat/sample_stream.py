"""A paper-scale ``.dmat`` of the sample model written straight from the model, in bounded memory.

At paper scale a figure's kernel makes 0.3-1.1 billion records (GBs of raw trace). The 32 lanes of a
warp share their clock and touch consecutive addresses, so the model is evaluated per (block, warp,
slot) (:func:`.sample_model.warp_accesses`): one item holds the warp's clock, its first lane's
address and how many of its lanes land on that address's 64 KiB page (the rest on the next page).
The items become packed keys ``clock << (page_bits + 6) | page_index << 6 | lanes`` (lanes <= 32),
partitioned by clock into buckets that spill to scratch files beyond a memory budget; each bucket,
in clock order, is sorted, its equal (clock, page) keys summed, and its entries appended to the
``.dmat``. The file holds exactly what the sparsifier makes of the per-thread records
(``formats.dmat.sparsify.sparsify(generate_chunks(...))``; tests/sections/dmat checks it).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from neutrino_ae.atomic import atomic_open
from neutrino_ae.formats.dmat import PAGE_MASK, body_words, from_pairs, run_starts, write_head
from neutrino_ae.formats.dmat.stream import _Buckets
from neutrino_ae.sample.device import Device

from .sample_model import TENSORS, AttnLayout, draw_block_factors, warp_accesses

PAGE = 1 << 16
LANE_BITS = 6  # lanes per item, 0..32
#: Cycles per clock bucket (a power of two: the bucket is ``clock >> CLOCK_SHIFT``).
CLOCK_SHIFT = 14
#: Blocks evaluated at once, and keys held in memory before buckets spill to scratch files.
BLOCKS_PER_STEP = 256
MEMORY_BYTES = 32 << 20

Bar = Callable[[Iterable[Any], int, str], Iterable[Any]]


@dataclass
class StreamedDmat:
    """What the ground truth needs of a streamed ``.dmat``."""

    pages: np.ndarray  # uint64, ascending
    num_clocks: int
    max_clock: int
    accesses_by_tensor: dict[str, int]
    unfilled: int


def _tensor_ranges(layout: AttnLayout) -> dict[str, tuple[int, int]]:
    s = layout.shape
    return {n: (layout.ptrs[n], layout.ptrs[n] + (s.tensor_bytes if n != "lse" else s.lse_bytes)) for n in TENSORS}


def write_model_dmat(path: Path, layout: AttnLayout, device: Device, rng: np.random.Generator,
                     blocks_per_chunk: int, bar: Bar, desc: str) -> StreamedDmat:
    """Write the ``.dmat`` of the model's records for ``layout`` (the random draws are those of
    :func:`.sample_model.generate_chunks` with the same ``rng`` and ``blocks_per_chunk``)."""
    speed, skew = draw_block_factors(layout, rng, blocks_per_chunk)
    ranges = _tensor_ranges(layout)
    first_page = min(lo for lo, _ in ranges.values()) & ~(PAGE - 1)
    last_page = max(hi for _, hi in ranges.values()) - 1 + PAGE  # a split item's next page stays below
    page_bits = max(1, ((last_page - first_page) >> 16).bit_length())
    shift = page_bits + LANE_BITS
    seen = np.zeros(((last_page - first_page) >> 16) + 1, bool)
    unfilled = 0
    with tempfile.TemporaryDirectory(prefix=".dmat-sample-", dir=path.parent) as tmp:
        holder: _Buckets | None = None
        max_bucket = -1
        steps = range(0, layout.blocks, BLOCKS_PER_STEP)
        for first in bar(steps, len(steps), desc):
            ids = np.arange(first, min(first + BLOCKS_PER_STEP, layout.blocks), dtype=np.int64)
            w = warp_accesses(layout, device, speed[ids], skew[ids], ids)
            keys, bucket, empty = _keys(w, first_page, shift, seen)
            unfilled += empty
            if int(w.clock.max()).bit_length() + shift > 64:
                raise ValueError("(clock, page, lanes) keys need more than 64 bits")
            top = int(bucket.max()) if bucket.size else -1
            if holder is None or top > max_bucket:
                holder = _grow(holder, top + 1, Path(tmp))
                max_bucket = top
            order = np.argsort(bucket.astype(np.uint16) if max_bucket < (1 << 16) else bucket, kind="stable")
            keys = keys[order]
            cut = np.r_[0, np.cumsum(np.bincount(bucket, minlength=max_bucket + 1))]
            for i in np.flatnonzero(np.diff(cut)):
                holder.add(int(i), keys[cut[i]:cut[i + 1]])
        pages = (np.flatnonzero(seen).astype(np.uint64) << np.uint64(16)) + np.uint64(first_page)
        return _write(path, holder, max_bucket + 1, pages, shift, first_page, ranges, unfilled)


def _grow(holder: _Buckets | None, n: int, scratch: Path) -> _Buckets:
    """A bucket holder for ``n`` buckets, keeping what ``holder`` holds."""
    new = _Buckets(n, scratch, MEMORY_BYTES)
    if holder is not None:
        holder.spill()
        new.sizes[: len(holder.sizes)] = holder.sizes
        new.spilled = holder.spilled
    return new


def _keys(w: Any, first_page: int, shift: int, seen: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Packed keys of one step's items (split items give a second key for the next page), their clock
    bucket, and the number of unfilled lanes; marks the pages touched in ``seen``."""
    filled = np.broadcast_to(w.filled[None], w.clock.shape)
    stride = np.broadcast_to(w.stride[None, None], w.clock.shape)
    use = filled > 0
    empty = int((32 - w.filled).sum()) * w.clock.shape[0]
    clock, addr0, filled, stride = w.clock[use], w.addr0[use], filled[use], stride[use]
    page = addr0 & PAGE_MASK
    room = (page + np.uint64(PAGE) - addr0).astype(np.int64)
    lo = np.minimum(filled, -(-room // stride))
    hi = filled - lo
    pidx = ((page - np.uint64(first_page)) >> np.uint64(16)).astype(np.int64)
    split = np.flatnonzero(hi > 0)
    ckey = clock << shift
    keys = np.concatenate([ckey | (pidx << LANE_BITS) | lo,
                           ckey[split] | ((pidx[split] + 1) << LANE_BITS) | hi[split]]).astype(np.uint64)
    bucket = np.concatenate([clock, clock[split]]) >> CLOCK_SHIFT
    seen[pidx] = True
    seen[pidx[split] + 1] = True
    return keys, bucket, empty


def _write(path: Path, holder: _Buckets | None, n_buckets: int, pages: np.ndarray, shift: int, first_page: int,
           ranges: dict[str, tuple[int, int]], unfilled: int) -> StreamedDmat:
    num_clocks, max_clock = 0, 0
    by_tensor = dict.fromkeys(ranges, 0)
    page_mask = np.uint64((1 << (shift - LANE_BITS)) - 1)
    with atomic_open(path, "wb") as fh:
        write_head(fh, pages, 0)
        for i in range(n_buckets):
            assert holder is not None
            keys = holder.take(i)
            if keys.size == 0:
                continue
            keys.sort()
            lanes = keys & np.uint64((1 << LANE_BITS) - 1)
            keys >>= np.uint64(LANE_BITS)
            starts = run_starts(keys)
            count = np.add.reduceat(lanes, starts)
            unique = keys[starts]
            clock = unique >> np.uint64(shift - LANE_BITS)
            page = ((unique & page_mask) << np.uint64(16)) + np.uint64(first_page)
            data = from_pairs(clock, page, count, presorted=True, pages=pages)
            body_words(data.clocks, data.indptr, data.pair_page, data.pair_count).tofile(fh)
            num_clocks += data.clocks.size
            max_clock = max(max_clock, int(data.clocks[-1]))
            for name, (lo, hi) in ranges.items():
                sel = (page >= np.uint64(lo - (lo & 0xFFFF))) & (page < np.uint64(hi))
                by_tensor[name] += int(data.pair_count[sel].sum(dtype=np.uint64))
        fh.seek(8)
        fh.write(np.array([num_clocks], "<u8").tobytes())
    return StreamedDmat(pages, num_clocks, max_clock, by_tensor, unfilled)
