"""An independent writer of Neutrino ``result/*.bin`` traces, and hypothesis strategies over their shapes.

Written from the format facts (shared/docs/neutrino-formats.md and the hook driver ``cuda.c``), with
numpy and nothing from ``neutrino_ae``: a test that feeds these files to both the artifact's scripts
and ours compares two readers, not one reader with the writer it was built beside.

Layout: 8 x uint32 header, one 16-byte descriptor per section (v1: uint64 size, uint64 offset; v2:
uint32 size, uint32 warpDiv, uint64 offset), then each section's data at its offset,
``[block][unit][size bytes]``. A warp-level section is allocated ceil(blockSize/32) warps per
block, as the hook driver does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

UNFILLED_ONES = 0xFFFF_FFFF_FFFF_FFFF  # the artifact dmat.cc's "no record" clock
WARP = 32

BLOCK_SCHED = np.dtype([("lstart", "<u8"), ("elapse", "<u4"), ("smid", "<u4")])
DMAT = np.dtype([("clock", "<u8"), ("addr", "<u8")])


@dataclass
class Section:
    size: int  # bytes per unit (thread or warp)
    level: int  # 1 thread, 32 warp
    data: bytes


@dataclass
class Trace:
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    sections: list[Section] = field(default_factory=list)
    layout: str = "v1"
    gap: int = 0  # bytes of padding between the descriptors and the first section

    @property
    def grid_size(self) -> int:
        return int(np.prod(self.grid))

    @property
    def block_size(self) -> int:
        return int(np.prod(self.block))

    def units_per_block(self, level: int) -> int:
        return -(-self.block_size // level)

    def write(self, path: Path) -> Path:
        header = np.array([*self.grid, *self.block, 0, len(self.sections)], dtype="<u4").tobytes()
        offset = len(header) + 16 * len(self.sections) + self.gap
        descriptors = b""
        for sec in self.sections:
            if self.layout == "v1":
                descriptors += np.array([sec.size, offset], dtype="<u8").tobytes()
            else:
                descriptors += np.array([sec.size, sec.level], dtype="<u4").tobytes()
                descriptors += np.array([offset], dtype="<u8").tobytes()
            offset += len(sec.data)
        path.write_bytes(header + descriptors + bytes(self.gap) + b"".join(s.data for s in self.sections))
        return path


# --------------------------------------------------------------------------------------------------
# block_sched: one warp-level section of (lstart, elapse, smid) per warp


@dataclass
class BlockSchedCase:
    trace: Trace
    lstart: np.ndarray  # per block (its first warp's record)
    elapse: np.ndarray
    smid: np.ndarray


def block_sched_trace(grid: tuple[int, int, int], block: tuple[int, int, int], lstart: np.ndarray,
                      elapse: np.ndarray, smid: np.ndarray, layout: str = "v1") -> BlockSchedCase:
    """Every warp of a block saves the block's values (the leader warp's record is what analyses read);
    warps after the first start a few cycles later, as on a GPU."""
    t = Trace(grid, block, layout=layout)
    warps = t.units_per_block(WARP)
    rec = np.zeros((t.grid_size, warps), dtype=BLOCK_SCHED)
    rec["lstart"] = lstart[:, None] + np.arange(warps, dtype=np.uint64)[None, :] * np.uint64(3)
    rec["elapse"] = elapse[:, None]
    rec["smid"] = smid[:, None]
    t.sections.append(Section(16, WARP, rec.tobytes()))
    return BlockSchedCase(t, lstart, elapse, smid)


@st.composite
def block_sched_cases(draw, *, artifact_readable: bool) -> BlockSchedCase:
    """Shapes of every kind. ``artifact_readable`` limits them to what the artifact's script can read
    (block sizes that are multiples of 32, SM ids 0..n-1); otherwise any shape, incl. 1-thread blocks
    and non-contiguous SM ids."""
    if artifact_readable:
        block = (WARP * draw(st.integers(1, 8)), 1, 1)
    else:
        block = draw(st.sampled_from([(1, 1, 1), (32, 1, 1), (96, 1, 1), (112, 1, 1), (16, 2, 2), (256, 1, 1)]))
    grid = draw(st.sampled_from([(1, 1, 1), (7, 1, 1), (64, 1, 1), (8, 4, 2), (300, 1, 1)]))
    n = int(np.prod(grid))
    sms = draw(st.integers(1, 16))
    if artifact_readable:
        ids = np.arange(sms)
    else:
        ids = np.array(sorted(draw(st.sets(st.integers(0, 131), min_size=sms, max_size=sms))))
    seed = draw(st.integers(0, 2**32 - 1))
    base = draw(st.sampled_from([0, 2**32 - 10_000, 2**40, 2**63, 2**64 - 2**40]))
    rng = np.random.default_rng(seed)
    smid = ids[rng.integers(0, ids.size, n)]
    if artifact_readable:  # the ids that ran a block must be exactly 0..n-1
        smid = np.unique(smid, return_inverse=True)[1]
    elapse = rng.integers(1, 5000, n).astype(np.uint64)
    # Blocks start in roughly index order with jitter, so lists see both "ended before" and "still running".
    lstart = (np.uint64(base) + np.sort(rng.integers(0, 1000 + 50 * n, n)).astype(np.uint64)
              + rng.integers(0, 400, n).astype(np.uint64))
    layout = draw(st.sampled_from(["v1", "v2"]))
    return block_sched_trace(grid, block, lstart, elapse.astype(np.uint32), smid.astype(np.uint32), layout)


# --------------------------------------------------------------------------------------------------
# dmat: one thread-level section of (clock, addr) records, `per_thread` slots per thread


@dataclass
class DmatCase:
    trace: Trace
    records: np.ndarray  # DMAT dtype, [block * thread * slot]

    def expected_map(self) -> dict[tuple[int, int], int]:
        """(clock, page) -> count, skipping the all-ones "no record" slots as the artifact does."""
        r = self.records[self.records["clock"] != np.uint64(UNFILLED_ONES)]
        keys, counts = np.unique(np.stack([r["clock"], r["addr"] & np.uint64(~0xFFFF & UNFILLED_ONES)]),
                                 axis=1, return_counts=True)
        return {(int(c), int(p)): int(n) for (c, p), n in zip(keys.T, counts, strict=True)}


def dmat_trace(grid: tuple[int, int, int], block: tuple[int, int, int], records: np.ndarray,
               layout: str = "v1") -> DmatCase:
    t = Trace(grid, block, layout=layout)
    per_thread = records.size // (t.grid_size * t.block_size)
    t.sections.append(Section(16 * per_thread, 1, records.tobytes()))
    return DmatCase(t, records)


@st.composite
def dmat_cases(draw, *, unfilled: str = "any", layout: str = "any") -> DmatCase:
    """``unfilled``: "none", "ones" (clock ~0, the artifact's marker), "zero" (the hook's zero fill), "any"."""
    block = draw(st.sampled_from([(1, 1, 1), (32, 1, 1), (64, 1, 1), (8, 2, 2), (256, 1, 1)]))
    grid = draw(st.sampled_from([(1, 1, 1), (4, 1, 1), (16, 1, 1), (4, 2, 2)]))
    threads = int(np.prod(grid)) * int(np.prod(block))
    per_thread = draw(st.integers(0, 6))  # 0: an empty section (no thread saved anything)
    seed = draw(st.integers(0, 2**32 - 1))
    clock_base = draw(st.sampled_from([0, 1000, 2**32 - 50, 2**40, 2**64 - 1000]))
    rng = np.random.default_rng(seed)
    n = threads * per_thread
    # A few tensors' worth of pages, with repeated (clock, page) pairs so counts exceed 1.
    tensors = np.array([0x7F00_0000_0000, 0x7F00_4000_0000, 0x7E12_3456_0000], dtype=np.uint64)
    addr = tensors[rng.integers(0, 3, n)] + rng.integers(0, 40, n).astype(np.uint64) * np.uint64(0x10000) \
        + rng.integers(0, 0x10000, n).astype(np.uint64)
    clock = np.uint64(clock_base) + rng.integers(0, 60, n).astype(np.uint64) * np.uint64(7)
    rec = np.zeros(n, dtype=DMAT)
    rec["clock"], rec["addr"] = clock, addr
    kind = draw(st.sampled_from(["none", "ones", "zero"])) if unfilled == "any" else unfilled
    if kind != "none":
        # Trailing slots of some threads unfilled (a count probe sizes every thread for the busiest one).
        view = rec.reshape(threads, per_thread)
        used = rng.integers(0, per_thread + 1, threads)
        empty = np.arange(per_thread)[None, :] >= used[:, None]
        if kind == "ones":
            view["clock"][empty] = np.uint64(UNFILLED_ONES)
            view["addr"][empty] = rng.integers(0, 2**63, int(empty.sum()), dtype=np.uint64)
        else:
            view["clock"][empty] = 0
            view["addr"][empty] = 0
    lay = draw(st.sampled_from(["v1", "v1", "v2"])) if layout == "any" else layout  # v1: what dmat.cc reads
    return dmat_trace(grid, block, rec, lay)
