"""The streaming sparsifier (raw dmat records -> .dmat file in bounded memory) against an independent
Counter and against the in-memory sparsifier, with buckets, spills and a page set too wide for a table."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from neutrino_ae.errors import TraceFormatError
from neutrino_ae.formats import records
from neutrino_ae.formats.dmat import DmatData, read_dmat, write_dmat
from neutrino_ae.formats.dmat import stream as dmat_stream
from neutrino_ae.formats.dmat.sparsify import sparsify


def _records(seed: int, n: int, clocks: int = 3000, pages: int = 40) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rec = np.zeros(n, dtype=records.DMAT)
    # Skewed clocks (many records at small clocks) and repeated (clock, page) cells.
    rec["clock"] = (rng.random(n) ** 3 * clocks).astype(np.uint64)
    rec["addr"] = 0x7F00_0000_0000 + rng.integers(0, pages, n) * 0x10000 + rng.integers(0, 0x10000, n)
    rec[rng.random(n) < 0.1] = 0  # unfilled count slots are zero-filled
    return rec


def _chunks(rec: np.ndarray, size: int):
    return lambda: (rec[i:i + size] for i in range(0, rec.size, size))


def _counter(rec: np.ndarray) -> Counter:
    kept = rec[rec["addr"] >> np.uint64(16) != 0]
    return Counter(zip(kept["clock"].tolist(), (kept["addr"] & ~np.uint64(0xFFFF)).tolist(), strict=True))


def _as_counter(d: DmatData) -> Counter:
    return Counter({(int(c), int(p)): int(n) for c, p, n in zip(d.pair_clock(), d.pair_page, d.pair_count,
                                                                 strict=True)})


@pytest.mark.parametrize(("bucket_records", "memory_bytes"), [(1 << 20, 1 << 30), (500, 1 << 30), (500, 4096)])
def test_streamed_file_is_the_in_memory_sparsifiers_byte_for_byte(tmp_path: Path, bucket_records: int,
                                                                   memory_bytes: int) -> None:
    rec = _records(0, 20_000)
    chunks = _chunks(rec, 1_777)
    info = dmat_stream.scan(chunks)
    batches: list[DmatData] = []
    summary = dmat_stream.write_streamed(tmp_path / "s.dmat", chunks, info, batches.append,
                                         bucket_records=bucket_records, memory_bytes=memory_bytes)
    expected = sparsify(chunks())
    assert (tmp_path / "s.dmat").read_bytes() == write_dmat(tmp_path / "m.dmat", expected).read_bytes()
    assert _as_counter(read_dmat(tmp_path / "s.dmat")) == _counter(rec)
    assert info.accesses == sum(_counter(rec).values()) and info.unfilled == int(np.count_nonzero(rec["addr"] == 0))
    assert summary.num_clocks == expected.clocks.size and summary.num_pairs == expected.pair_page.size
    # Batches come in clock order, a clock never split between two, and together they are the whole file.
    assert summary.buckets >= len(batches)
    assert (len(batches) > 1) == (bucket_records < 1 << 20)
    clocks = np.concatenate([b.clocks for b in batches])
    assert np.all(np.diff(clocks.astype(np.int64)) > 0)
    assert sum((_as_counter(b) for b in batches), Counter()) == _counter(rec)
    assert (summary.spilled_bytes > 0) == (memory_bytes < 1 << 20)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.dmat", "s.dmat"]  # no scratch left behind


def test_a_page_span_too_wide_for_a_table_gives_the_same_pages(tmp_path: Path, monkeypatch) -> None:
    rec = _records(1, 5_000)
    rec["addr"][::7] += np.uint64(1 << 40)  # pages a terabyte apart
    chunks = _chunks(rec, 999)
    wide = dmat_stream.scan(chunks)
    monkeypatch.setattr(dmat_stream, "PAGE_TABLE_SPAN", 1 << 10)
    assert np.array_equal(dmat_stream.scan(chunks).pages, wide.pages)
    expected = np.unique(rec["addr"][rec["addr"] >> np.uint64(16) != 0] & ~np.uint64(0xFFFF))
    assert np.array_equal(wide.pages, expected)
    dmat_stream.write_streamed(tmp_path / "w.dmat", chunks, wide)
    assert _as_counter(read_dmat(tmp_path / "w.dmat")) == _counter(rec)


def test_only_unfilled_slots_give_an_empty_file(tmp_path: Path) -> None:
    chunks = _chunks(np.zeros(100, records.DMAT), 30)
    info = dmat_stream.scan(chunks)
    assert (info.accesses, info.unfilled, info.pages.size) == (0, 100, 0)
    dmat_stream.write_streamed(tmp_path / "e.dmat", chunks, info)
    assert (tmp_path / "e.dmat").read_bytes() == bytes(16)


def test_a_trace_that_changes_between_passes_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    rec = _records(2, 3_000)
    info = dmat_stream.scan(_chunks(rec, 500))
    shorter = rec.copy()
    shorter["addr"][:10] = 0
    with pytest.raises(TraceFormatError, match=r"t\.bin: changed while being read"):
        dmat_stream.write_streamed(tmp_path / "c.dmat", _chunks(shorter, 500), info, source=Path("t.bin"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("shape", "mode"), [("timestamps", "offset"), ("wide pages", "rank"), ("both", "wide")])
@pytest.mark.parametrize("bucket_records", [1 << 20, 97])
def test_keys_past_64_bits_still_stream_to_the_same_file(tmp_path: Path, shape: str, mode: str,
                                                         bucket_records: int) -> None:
    """Absolute clocks (near 2**60), pages terabytes apart with clocks far apart, or both: the
    streamed file is still the in-memory sparsifier's, byte for byte, and a clock is one entry however
    many buckets its records fall in."""
    rec = _records(3, 4_000, clocks=40)
    filled = rec["addr"] != 0
    if shape == "timestamps":
        rec["clock"][filled] += np.uint64(1_700_000_000_000_000_000)
    else:
        rec["addr"][1::3] += np.uint64(1 << 46)
        rec["addr"][~filled] = 0
        rec["clock"] <<= np.uint64(34)  # a clock span past 2**39: with 2**31 pages of span, no offset key
        if shape == "both":
            rec["clock"][filled & (np.arange(rec.size) % 2 == 0)] += np.uint64(1 << 61)  # span past 2**60
    chunks = _chunks(rec, 333)
    info = dmat_stream.scan(chunks)
    assert info.codec().mode == mode and info.packs() == (mode != "wide")
    batches: list[DmatData] = []
    summary = dmat_stream.write_streamed(tmp_path / "s.dmat", chunks, info, batches.append,
                                         bucket_records=bucket_records, memory_bytes=4096)
    expected = sparsify(chunks())
    assert (tmp_path / "s.dmat").read_bytes() == write_dmat(tmp_path / "m.dmat", expected).read_bytes()
    assert _as_counter(read_dmat(tmp_path / "s.dmat")) == _counter(rec)
    clocks = np.concatenate([b.clocks for b in batches])
    assert np.all(clocks[1:] > clocks[:-1])  # no clock split between batches
    assert (summary.buckets > 20) == (bucket_records == 97) and summary.num_clocks == expected.clocks.size


def test_scratch_left_by_a_killed_run_is_removed_and_nothing_else(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    dead = int(gone.stdout)
    old = 1_000_000_000  # 2001
    stale = tmp_path / f"{dmat_stream.SCRATCH_PREFIX}{dead}-abc"
    fresh = tmp_path / f"{dmat_stream.SCRATCH_PREFIX}{dead}-def"  # too recent: maybe another host's live run
    mine = tmp_path / f"{dmat_stream.SCRATCH_PREFIX}{os.getpid()}-ghi"  # a live process
    for d in (stale, fresh, mine):
        (d / "bucket00000.u64").parent.mkdir()
        (d / "bucket00000.u64").write_bytes(b"x" * 8)
    for d in (stale, mine):
        os.utime(d, (old, old))
    chunks = _chunks(_records(4, 500), 100)
    dmat_stream.write_streamed(tmp_path / "o.dmat", chunks, dmat_stream.scan(chunks))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["o.dmat", fresh.name, mine.name])
