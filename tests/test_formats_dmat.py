"""Sparsified DMAT: sparsify against an independent Counter, write/read round trip, malformed files."""

from __future__ import annotations

import struct
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from neutrino_ae.errors import TraceFormatError
from neutrino_ae.formats import records
from neutrino_ae.formats.dmat import DmatData, from_pairs, page_of, read_dmat, sparsify, write_dmat


def _records(seed: int = 0, n: int = 400) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rec = np.zeros(n, dtype=records.DMAT)
    rec["clock"] = rng.integers(0, 25, n)
    rec["addr"] = 0x7F00_0000_0000 + rng.integers(0, 6, n) * 0x10000 + rng.integers(0, 0x10000, n)
    rec["clock"][rng.random(n) < 0.2] = records.EMPTY_MARKER  # unfilled count slots
    return rec


def _counter(rec: np.ndarray) -> Counter:
    return Counter((int(c), int(a) & ~0xFFFF) for c, a in zip(rec["clock"], rec["addr"], strict=True)
                   if int(c) != 0xFFFF_FFFF_FFFF_FFFF)


def _as_counter(d: DmatData) -> Counter:
    return Counter({(int(c), int(p)): int(n)
                    for c, p, n in zip(d.pair_clock(), d.pair_page, d.pair_count, strict=True)})


@pytest.mark.parametrize("chunk", [400, 37, 1])
def test_sparsify_matches_counter(chunk: int) -> None:
    rec = _records()
    expected = _counter(rec)
    data = sparsify((rec[i:i + chunk] for i in range(0, rec.size, chunk)), merge_every=3)
    assert _as_counter(data) == expected
    assert data.num_accesses == sum(expected.values())
    assert sorted(int(p) for p in data.pages) == sorted({p for _, p in expected})
    assert list(data.clocks) == sorted(set(data.clocks.tolist()))


def test_write_read_round_trip(tmp_path: Path) -> None:
    data = sparsify([_records(1)])
    back = read_dmat(write_dmat(tmp_path / "a.dmat", data))
    assert back.equals(data)
    assert _as_counter(back) == _as_counter(data)


def test_byte_layout(tmp_path: Path) -> None:
    data = from_pairs(np.array([5, 5, 9]), np.array([0x20000, 0x10000, 0x10000]), np.array([2, 1, 7]))
    raw = write_dmat(tmp_path / "b.dmat", data).read_bytes()
    expected = struct.pack("<QQ", 2, 2) + struct.pack("<QQ", 0x10000, 0x20000)
    expected += struct.pack("<QQ", 5, 2) + struct.pack("<QI", 0x10000, 1) + struct.pack("<QI", 0x20000, 2)
    expected += struct.pack("<QQ", 9, 1) + struct.pack("<QI", 0x10000, 7)
    assert raw == expected


def test_empty_round_trip(tmp_path: Path) -> None:
    only_empty = np.zeros(5, dtype=records.DMAT)
    only_empty["clock"] = records.EMPTY_MARKER
    empty = sparsify([only_empty, np.zeros(0, records.DMAT)])
    assert empty.num_accesses == 0 and empty.clocks.size == 0
    back = read_dmat(write_dmat(tmp_path / "e.dmat", empty))
    assert back.equals(empty)
    assert (tmp_path / "e.dmat").read_bytes() == struct.pack("<QQ", 0, 0)


def test_page_of() -> None:
    assert page_of(np.array([0x12345, 0xFFFF, 0x10000], dtype=np.uint64)).tolist() == [0x10000, 0, 0x10000]


def _bad(tmp_path: Path, blob: bytes, match: str) -> None:
    p = tmp_path / "bad.dmat"
    p.write_bytes(blob)
    with pytest.raises(TraceFormatError, match=match) as info:
        read_dmat(p)
    assert str(info.value).startswith(str(p))


def test_missing(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no such"):
        read_dmat(tmp_path / "none.dmat")


def test_truncated_header(tmp_path: Path) -> None:
    _bad(tmp_path, b"\1\0\0", "truncated")


def test_impossible_page_count(tmp_path: Path) -> None:
    _bad(tmp_path, struct.pack("<QQ", 2**60, 0), "impossible header")


def test_impossible_clock_count(tmp_path: Path) -> None:
    _bad(tmp_path, struct.pack("<QQQ", 1, 2**40, 0x10000), "impossible header")


def test_truncated_body(tmp_path: Path) -> None:
    good = struct.pack("<QQQ", 1, 1, 0x10000) + struct.pack("<QQ", 3, 2) + struct.pack("<QIQI", 0x10000, 1, 0x10000, 2)
    _bad(tmp_path, good[:-4], "truncated")


def test_impossible_pair_count(tmp_path: Path) -> None:
    _bad(tmp_path, struct.pack("<QQQ", 1, 1, 0x10000) + struct.pack("<QQ", 3, 2**50), "declares")


def test_trailing_bytes(tmp_path: Path) -> None:
    good = struct.pack("<QQQ", 1, 1, 0x10000) + struct.pack("<QQ", 3, 1) + struct.pack("<QI", 0x10000, 1)
    _bad(tmp_path, good + b"\0\0\0", "trailing bytes")
