"""Sparsified DMAT: sparsify against an independent Counter, write/read round trip, malformed files."""

from __future__ import annotations

import struct
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from neutrino_ae import jit
from neutrino_ae.errors import InputError, TraceFormatError
from neutrino_ae.formats import dmat as dmat_mod
from neutrino_ae.formats import records
from neutrino_ae.formats.dmat import DmatData, from_pairs, page_of, read_dmat, write_dmat
from neutrino_ae.formats.dmat import walk as dmat_walk
from neutrino_ae.formats.dmat.sparsify import sparsify


def _records(seed: int = 0, n: int = 400) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rec = np.zeros(n, dtype=records.DMAT)
    rec["clock"] = rng.integers(0, 25, n)
    rec["addr"] = 0x7F00_0000_0000 + rng.integers(0, 6, n) * 0x10000 + rng.integers(0, 0x10000, n)
    rec[rng.random(n) < 0.2] = 0  # unfilled count slots keep the hook driver's zero fill
    return rec


def _counter(rec: np.ndarray) -> Counter:
    return Counter((int(c), int(a) & ~0xFFFF) for c, a in zip(rec["clock"], rec["addr"], strict=True)
                   if int(a) != 0)


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
    empty = sparsify([only_empty, np.zeros(0, records.DMAT)])
    assert empty.num_accesses == 0 and empty.clocks.size == 0 and empty.unfilled == 5
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


def test_missing_or_not_a_regular_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such .dmat file"):
        read_dmat(tmp_path / "none.dmat")
    with pytest.raises(InputError, match="is not a regular file"):
        read_dmat("/dev/zero")


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


def _reference_read(blob: bytes) -> tuple[list, list, list] | str:
    """An independent struct walk of a .dmat body: (clocks, pair counts, pairs), or the error text
    read_dmat must give (after the path)."""
    end = len(blob)
    if end < 16:
        return f"truncated: {end} bytes, the .dmat header needs 16"
    num_pages, num_clocks = struct.unpack_from("<QQ", blob)
    if num_pages > (end - 16) // 8:
        return f"impossible header: {num_pages} pages do not fit in {end} bytes"
    off = 16 + 8 * num_pages
    if num_clocks > (end - off) // 16:
        return f"impossible header: {num_clocks} clock entries do not fit in {end} bytes"
    clocks, counts, pairs = [], [], []
    for i in range(num_clocks):
        if off + 16 > end:
            return f"truncated: clock entry {i} of {num_clocks} starts past the end of the file"
        clock, n = struct.unpack_from("<QQ", blob, off)
        off += 16
        if off + 12 * n > end:
            return f"truncated: clock entry {i} declares {n} pages, past the end of the file"
        clocks.append(clock)
        counts.append(n)
        pairs += [struct.unpack_from("<QI", blob, off + 12 * j) for j in range(n)]
        off += 12 * n
    if off != end:
        return f"{end - off} trailing bytes after the last clock entry (corrupt file?)"
    return clocks, counts, pairs


def _random_dmat(rng: np.random.Generator, n_clocks: int, max_pairs: int) -> bytes:
    """A well-formed file with entries of 0..max_pairs pairs and values that look like counts."""
    out = [struct.pack("<QQ", 1, n_clocks), struct.pack("<Q", 0x10000)]
    for _ in range(n_clocks):
        n = int(rng.integers(0, max_pairs + 1))
        out.append(struct.pack("<QQ", int(rng.integers(0, 2**20)), n))
        for _ in range(n):
            # Small "pages" and counts are the worst case for the speculative walk: they read as counts.
            page = int(rng.integers(0, 64)) if rng.random() < 0.5 else int(rng.integers(0, 2**63)) * 2
            out.append(struct.pack("<QI", page, int(rng.integers(0, 2**32))))
    return b"".join(out)


@pytest.mark.parametrize("walk, window", [("numpy", 16), ("numpy", 64), ("numpy", 1000), ("numpy", 1 << 22),
                                          ("numba", 0)])
def test_chain_walk_matches_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walk: str,
                                      window: int) -> None:
    if walk == "numba":
        if not jit.HAVE_NUMBA:
            pytest.skip("numba not installed (or NEUTRINO_AE_PURE_NUMPY=1)")
        monkeypatch.setattr(jit, "NUMBA_MIN_ITEMS", 0)  # the compiled walk at any size
    else:
        monkeypatch.setattr(jit, "HAVE_NUMBA", False)
        # Small windows make the chain cross many window edges.
        monkeypatch.setattr(dmat_walk, "_WALK_WINDOW", window)
    rng = np.random.default_rng(window)
    p = tmp_path / "w.dmat"
    for trial in range(40):
        blob = _random_dmat(rng, int(rng.integers(0, 60)), int(rng.choice([0, 1, 3, 20])))
        if trial % 2:  # corrupt it: cut, extend, or overwrite one count field with a random value
            kind = trial % 3
            if kind == 0:
                blob = blob[: int(rng.integers(0, len(blob) + 1))]
            elif kind == 1:
                blob += bytes(int(rng.integers(1, 30)))
            else:
                at = 24 + 4 * int(rng.integers(0, max(1, (len(blob) - 32) // 4)))
                blob = blob[:at] + struct.pack("<Q", int(rng.integers(0, 40))) + blob[at + 8 :]
        p.write_bytes(blob)
        expected = _reference_read(blob)
        if isinstance(expected, str):
            with pytest.raises(TraceFormatError) as info:
                read_dmat(p)
            assert str(info.value) == f"{p}: {expected}"
            continue
        got = read_dmat(p)
        clocks, counts, pairs = expected
        assert got.clocks.tolist() == clocks
        assert np.diff(got.indptr).tolist() == counts
        assert list(zip(got.pair_page.tolist(), got.pair_count.tolist(), strict=True)) == pairs


def test_sparsify_counts_unfilled_slots() -> None:
    rec = _records(3)
    data = sparsify([rec[:150], rec[150:]])
    assert data.unfilled == int(np.count_nonzero(rec["addr"] == 0)) > 0
    assert 0 not in data.pair_page.tolist()


def test_drop_unfilled_removes_the_artifact_sparsifiers_phantom_cell() -> None:
    # tools/dmat.cc skips only an all-ones clock, so zero-filled slots land in cell (clock 0, page 0).
    art = from_pairs(np.array([0, 0, 7]), np.array([0, 0x7F00_0001_0000, 0x7F00_0001_0000]), np.array([40, 3, 5]))
    clean = dmat_mod.drop_unfilled(art)
    assert clean.unfilled == 40 and clean.num_accesses == 8
    assert _as_counter(clean) == Counter({(0, 0x7F00_0001_0000): 3, (7, 0x7F00_0001_0000): 5})
    assert dmat_mod.drop_unfilled(clean) is clean


@pytest.mark.parametrize("batch_bytes", [64, 100, 4096, 1 << 20])
def test_batched_read_matches_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_bytes: int) -> None:
    """iter_dmat reads a file a few bytes at a time (entries larger than the buffer included) and gives
    read_dmat's entries, or read_dmat's one-line error."""
    if not jit.HAVE_NUMBA:
        pytest.skip("numba not installed (or NEUTRINO_AE_PURE_NUMPY=1): iter_dmat reads the file whole")
    monkeypatch.setattr(jit, "NUMBA_MIN_ITEMS", 0)
    rng = np.random.default_rng(batch_bytes)
    p = tmp_path / "b.dmat"
    for trial in range(30):
        blob = _random_dmat(rng, int(rng.integers(0, 60)), int(rng.choice([0, 1, 3, 20])))
        if trial % 2:
            blob = blob[: int(rng.integers(0, len(blob) + 1))] if trial % 4 == 1 else blob + bytes(5)
        p.write_bytes(blob)
        expected = _reference_read(blob)
        if isinstance(expected, str):
            with pytest.raises(TraceFormatError) as info:
                list(dmat_mod.iter_dmat(dmat_mod.open_dmat(p), batch_bytes))
            assert str(info.value) == f"{p}: {expected}"
            continue
        batches = list(dmat_mod.iter_dmat(dmat_mod.open_dmat(p), batch_bytes))
        clocks, counts, pairs = expected
        assert [c for b in batches for c in b.clocks.tolist()] == clocks
        assert [n for b in batches for n in np.diff(b.indptr).tolist()] == counts
        assert [pc for b in batches for pc in zip(b.pair_page.tolist(), b.pair_count.tolist(), strict=True)] == pairs
        if batch_bytes == 64 and len(clocks) > 8:
            assert len(batches) > 1
