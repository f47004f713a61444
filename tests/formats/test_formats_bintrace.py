"""Binary trace reader/writer: round trips, byte-exact layout, and malformed files."""

from __future__ import annotations

import math
import os
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from neutrino_ae.errors import InputError, TraceFormatError
from neutrino_ae.formats import records
from neutrino_ae.formats.bintrace import TraceHeader, open_trace
from neutrino_ae.formats.bintrace_write import SectionSpec, TraceWriter, write_trace
from neutrino_ae.formats.level import Level


def _units(block: tuple[int, int, int], level: str) -> int:
    """Units per block in the probe's own indexing: warps with the floor stride the device uses."""
    n = block[0] * block[1] * block[2]
    return n if level == "thread" else n // 32


def _random_section(rng: np.random.Generator, header: TraceHeader, level: str, size: int) -> np.ndarray:
    return rng.integers(0, 256, size=(header.grid_size, _units(header.block, level), size), dtype=np.uint8)


def test_byte_exact_tiny_v1(tmp_path: Path) -> None:
    header = TraceHeader((2, 1, 1), (64, 1, 1), shared_mem=128)  # 64 threads -> 2 warps
    rec = np.zeros((2, 2, 1), dtype=records.BLOCK_SCHED)
    rec["lstart"] = [[[100], [101]], [[200], [201]]]
    rec["elapse"] = [[[5], [6]], [[7], [8]]]
    rec["smid"] = [[[0], [0]], [[3], [3]]]
    path = write_trace(tmp_path / "t.bin", header, [("warp", rec)], layout="v1")
    expected = struct.pack("<8I", 2, 1, 1, 64, 1, 1, 128, 1) + struct.pack("<QQ", 16, 48)
    for lstart, elapse, smid in [(100, 5, 0), (101, 6, 0), (200, 7, 3), (201, 8, 3)]:
        expected += struct.pack("<QII", lstart, elapse, smid)
    assert path.read_bytes() == expected


@pytest.mark.parametrize("layout", ["v1", "v2"])
def test_partial_warp_blocks_read_with_the_device_stride(tmp_path: Path, layout: str) -> None:
    # 40-thread blocks: the host allocates ceil(40/32) = 2 slots per block, but the probe indexes
    # slot = block * (40 // 32) + tid // 32, so block 0's partial warp lands in block 1's slot 0
    # and the last slots stay zero. Both hook drivers copy back and write the whole allocation.
    header = TraceHeader((2, 1, 1), (40, 1, 1))
    slots = np.zeros(4, dtype=records.BLOCK_SCHED)
    slots["lstart"] = [100, 200, 201, 0]  # slot 1: block 1 warp 0 (or block 0's partial warp: a race)
    slots["smid"] = [1, 3, 3, 0]
    descriptor = struct.pack("<QQ", 16, 48) if layout == "v1" else struct.pack("<IIQ", 16, 32, 48)
    raw = struct.pack("<8I", 2, 1, 1, 40, 1, 1, 0, 1) + descriptor + slots.tobytes()
    path = tmp_path / "t.bin"
    path.write_bytes(raw)
    tr = open_trace(path, levels=["warp"] if layout == "v1" else None)
    sec = tr.sections[0]
    assert (sec.level, sec.units_per_block, sec.partial_warp) == (Level.WARP, 1, True)
    assert tr.records(0, records.BLOCK_SCHED)["lstart"].ravel().tolist() == [100, 200]
    # The writer produces the same bytes from the device-stride records when the race went to
    # block 1 (its slot 0 holds what we read) and the tail slot stayed zero.
    out = write_trace(tmp_path / "w.bin", header, [("warp", tr.records(0, records.BLOCK_SCHED).copy())], layout=layout)
    expected = bytearray(raw)
    expected[48 + 32:] = bytes(32)
    assert out.read_bytes() == bytes(expected)


def test_warp_section_of_blocks_below_a_warp_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.bin"
    path.write_bytes(struct.pack("<8I", 4, 1, 1, 16, 1, 1, 0, 1) + struct.pack("<IIQ", 16, 32, 48) + bytes(64))
    with pytest.raises(TraceFormatError, match=r"16 threads: the probe's per-block warp stride .* one slot"):
        open_trace(path)


def test_byte_exact_tiny_v2_two_sections(tmp_path: Path) -> None:
    header = TraceHeader((1, 2, 1), (32, 1, 1))
    thread = (np.arange(2 * 32 * 8) % 251).astype(np.uint8).reshape(2, 32, 8)
    warp = np.full((2, 1, 4), 0xAB, dtype=np.uint8)
    path = write_trace(tmp_path / "t.bin", header, [("thread", thread), ("warp", warp)], layout="v2")
    table_end = 32 + 2 * 16
    expected = struct.pack("<8I", 1, 2, 1, 32, 1, 1, 0, 2)
    expected += struct.pack("<IIQ", 8, 1, table_end) + struct.pack("<IIQ", 4, 32, table_end + 2 * 32 * 8)
    expected += thread.tobytes() + warp.tobytes()
    assert path.read_bytes() == expected
    tr = open_trace(path)
    assert tr.layout == "v2"
    assert [s.level for s in tr.sections] == [Level.THREAD, Level.WARP]


@pytest.mark.parametrize("layout", ["v1", "v2"])
@pytest.mark.parametrize("block", [(128, 1, 1), (48, 1, 1), (7, 3, 2), (33, 1, 1), (32, 1, 1)])
def test_round_trip_levels_and_odd_blocks(tmp_path: Path, layout: str, block: tuple[int, int, int]) -> None:
    rng = np.random.default_rng(0)
    header = TraceHeader((3, 2, 1), block)
    warp = _random_section(rng, header, "warp", 16)
    thread = _random_section(rng, header, "thread", 8)
    path = write_trace(tmp_path / "t.bin", header, [("warp", warp), ("thread", thread)], layout=layout)
    tr = open_trace(path, levels=["warp", "thread"] if layout == "v1" else None)
    assert tr.header == header
    assert tr.header.warps_per_block == math.ceil(block[0] * block[1] * block[2] / 32)
    np.testing.assert_array_equal(tr.records(0), warp)
    np.testing.assert_array_equal(tr.records(1), thread)
    # Inference (no hints) agrees with the hints, except for 1-thread blocks where both levels
    # have one unit per block and the layouts are identical.
    inferred = open_trace(path)
    if header.block_size > 1:
        assert [s.level for s in inferred.sections] == [Level.WARP, Level.THREAD]
    np.testing.assert_array_equal(inferred.records(1), thread)


def test_records_with_dtype_and_chunks(tmp_path: Path) -> None:
    header = TraceHeader((10, 1, 1), (64, 1, 1))
    rec = np.zeros((10, 2, 1), dtype=records.BLOCK_SCHED)
    rec["lstart"] = np.arange(20).reshape(10, 2, 1) * 1000
    rec["smid"] = np.arange(20).reshape(10, 2, 1) % 4
    path = write_trace(tmp_path / "t.bin", header, [("warp", rec)])
    tr = open_trace(path, levels=["warp"])
    view = tr.records(0, records.BLOCK_SCHED)
    np.testing.assert_array_equal(view["lstart"], rec["lstart"])
    chunks = list(tr.iter_chunks(0, records.BLOCK_SCHED, chunk_bytes=3 * 2 * 16))
    assert [first for first, _ in chunks] == [0, 3, 6, 9]
    np.testing.assert_array_equal(np.concatenate([c for _, c in chunks])["smid"], rec["smid"])


def test_streaming_writer_matches_whole_writer(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    header = TraceHeader((5, 1, 1), (50, 1, 1))
    data = _random_section(rng, header, "thread", 16)
    whole = write_trace(tmp_path / "a.bin", header, [("thread", data)], layout="v2")
    with TraceWriter(tmp_path / "b.bin", header, [SectionSpec(Level.THREAD, 16)], layout="v2") as w:
        for start in range(0, 5, 2):
            w.write(data[start:start + 2])
    assert (tmp_path / "b.bin").read_bytes() == whole.read_bytes()


def test_incomplete_streaming_write_leaves_no_file(tmp_path: Path) -> None:
    header = TraceHeader((4, 1, 1), (32, 1, 1))
    with pytest.raises(ValueError, match="incomplete"):
        with TraceWriter(tmp_path / "c.bin", header, [SectionSpec(Level.WARP, 16)]) as w:
            w.write(np.zeros((2, 1, 16), np.uint8))
    assert list(tmp_path.iterdir()) == []


def test_dmat_ragged_counts_drop_empty(tmp_path: Path) -> None:
    header = TraceHeader((2, 1, 1), (3, 1, 1))
    slots = 4
    rec = np.zeros((2, 3, slots), dtype=records.DMAT)  # unfilled slots: the hook driver's zero fill
    fill = [[4, 0, 2], [1, 3, 0]]  # ragged: how many slots each thread filled
    expected = []
    for b in range(2):
        for t in range(3):
            for k in range(fill[b][t]):
                rec[b, t, k] = (10 * b + t + k, 0x1000 * (b + 1) + k)
                expected.append((10 * b + t + k, 0x1000 * (b + 1) + k))
    path = write_trace(tmp_path / "d.bin", header, [("thread", rec)])
    got = records.drop_empty(open_trace(path, levels=["thread"]).records(0, records.DMAT))
    assert [(int(c), int(a)) for c, a in zip(got["clock"], got["addr"], strict=True)] == expected


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    grid=st.tuples(st.integers(1, 4), st.integers(1, 3), st.integers(1, 2)),
    block=st.tuples(st.integers(1, 70), st.integers(1, 3), st.integers(1, 2)),
    sections=st.lists(st.tuples(st.sampled_from(["thread", "warp"]), st.sampled_from([1, 4, 8, 16])),
                      min_size=1, max_size=3),
    layout=st.sampled_from(["v1", "v2"]),
    seed=st.integers(0, 2**16),
)
def test_round_trip_property(tmp_path: Path, grid, block, sections, layout, seed) -> None:
    rng = np.random.default_rng(seed)
    header = TraceHeader(grid, block)
    assume(header.block_size >= 32 or all(lv == "thread" for lv, _ in sections))
    arrays = [(lv, _random_section(rng, header, lv, size)) for lv, size in sections]
    path = write_trace(tmp_path / "p.bin", header, arrays, layout=layout)
    tr = open_trace(path, levels=[lv for lv, _ in sections])
    assert len(tr.sections) == len(sections)
    for i, (_, arr) in enumerate(arrays):
        np.testing.assert_array_equal(tr.records(i), arr)
    # Each section occupies the host's ceil-sized allocation; partial warps leave it zero-padded.
    allocated = [header.grid_size * header.units_per_block(lv) * size for lv, size in sections]
    assert tr.file_size == 32 + 16 * len(sections) + sum(allocated)


# ---------------------------------------------------------------------------------------------- malformed


def _valid(tmp_path: Path, layout: str = "v1") -> Path:
    header = TraceHeader((4, 1, 1), (64, 1, 1))
    return write_trace(tmp_path / "ok.bin", header, [("warp", np.zeros((4, 2, 16), np.uint8))], layout=layout)


def _expect(path: Path, match: str, **kw) -> TraceFormatError:
    with pytest.raises(TraceFormatError, match=match) as info:
        open_trace(path, **kw)
    msg = str(info.value)
    assert msg.startswith(str(path)) and "\n" not in msg
    return info.value


def _header(grid=(4, 1, 1), block=(64, 1, 1), shared=0, nprobes=1) -> bytes:
    return struct.pack("<8I", *grid, *block, shared, nprobes)


def test_missing_file_fifo_and_device_are_input_errors(tmp_path: Path) -> None:
    # Not format violations: the file is absent or not a file at all (a FIFO would block forever).
    with pytest.raises(InputError, match="no such trace file"):
        open_trace(tmp_path / "nope.bin")
    fifo = tmp_path / "fifo.bin"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="is not a regular file"):
        open_trace(fifo)
    with pytest.raises(InputError, match="is not a regular file"):
        open_trace("/dev/zero")


def test_truncated_header(tmp_path: Path) -> None:
    p = tmp_path / "t.bin"
    p.write_bytes(_header()[:20])
    _expect(p, "truncated: 20 bytes")


def test_truncated_descriptor_table(tmp_path: Path) -> None:
    p = tmp_path / "t.bin"
    p.write_bytes(_header(nprobes=2) + struct.pack("<QQ", 16, 64))
    _expect(p, "2 section descriptors need 64")


def test_truncated_data(tmp_path: Path) -> None:
    p = _valid(tmp_path)
    p.write_bytes(p.read_bytes()[:-5])
    _expect(p, "truncated", levels=["warp"])
    _expect(p, "truncated")  # and without a level hint (inference)


def test_huge_grid_claim_fails_fast_without_allocation(tmp_path: Path) -> None:
    p = tmp_path / "t.bin"
    # 40 bytes claiming 2**31-1 blocks of 1024 threads with 16 bytes each: ~35 TB.
    p.write_bytes(_header(grid=(2**31 - 1, 1, 1), block=(1024, 1, 1)) + b"\0" * 8)
    _expect(p, "truncated")
    p.write_bytes(_header(grid=(2**31 - 1, 1, 1), block=(1024, 1, 1)) + struct.pack("<QQ", 16, 48))
    tracemalloc.start()
    try:
        _expect(p, "truncated", levels=["thread"])
        _expect(p, "truncated")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # numpy reports to tracemalloc: nothing near the claimed size was allocated


def test_too_many_probes(tmp_path: Path) -> None:
    p = tmp_path / "t.bin"
    p.write_bytes(_header(nprobes=100_000) + b"\0" * 16)
    _expect(p, "numProbes=100000")
    p.write_bytes(_header(nprobes=0))
    _expect(p, "numProbes=0")


def test_section_size_beyond_file(tmp_path: Path) -> None:
    p = tmp_path / "t.bin"
    p.write_bytes(_header() + struct.pack("<QQ", 2**31, 48) + b"\0" * 64)
    _expect(p, "truncated", levels=["warp"])


def test_unknown_layout_word(tmp_path: Path) -> None:
    p = tmp_path / "t.bin"
    p.write_bytes(_header() + struct.pack("<IIQ", 16, 7, 48) + b"\0" * 128)
    _expect(p, "unknown section layout: descriptor 0 has second word 7")


def test_mixed_v1_v2(tmp_path: Path) -> None:
    p = tmp_path / "t.bin"
    body = struct.pack("<QQ", 16, 64) + struct.pack("<IIQ", 16, 32, 192)
    p.write_bytes(_header(nprobes=2) + body + b"\0" * 256)
    _expect(p, "unknown section layout")


def test_offset_overlapping_header(tmp_path: Path) -> None:
    p = tmp_path / "t.bin"
    p.write_bytes(_header() + struct.pack("<QQ", 16, 8) + b"\0" * 128)
    _expect(p, "overlaps the header", levels=["warp"])


def test_sections_overlapping_each_other(tmp_path: Path) -> None:
    p = tmp_path / "t.bin"
    # Two warp sections of 4*2*16=128 bytes, the second starting 64 bytes into the first.
    p.write_bytes(_header(nprobes=2) + struct.pack("<QQ", 16, 64) + struct.pack("<QQ", 16, 128) + b"\0" * 256)
    _expect(p, "overlaps section", levels=["warp", "warp"])


def test_zero_grid_dimension(tmp_path: Path) -> None:
    p = tmp_path / "t.bin"
    p.write_bytes(_header(grid=(4, 0, 1)) + struct.pack("<QQ", 16, 48))
    _expect(p, "zero dimension")


def test_level_hint_conflicts_with_v2(tmp_path: Path) -> None:
    p = _valid(tmp_path, layout="v2")
    _expect(p, "warp-level in the file but thread-level", levels=["thread"])


def test_uninferable_level(tmp_path: Path) -> None:
    p = _valid(tmp_path)
    p.write_bytes(p.read_bytes() + b"\0" * 16)  # region neither warp- nor thread-sized
    _expect(p, "cannot infer the level")


# --------------------------------------------------------------------------------------------------
# v1 files whose size field holds the section's total bytes. Neither Neutrino branch we run
# (artifact 43182f3, main 4a82cd2) writes this -- both store bytes per unit, see
# tests/data/genuine -- but a file that does is still read rather than rejected.


def _hook_driver_bytes(grid: tuple[int, int, int], block: tuple[int, int, int],
                       sections: list[bytes]) -> bytes:
    """A v1 trace laid out as the hook driver writes it: size = total bytes, offsets consecutive."""
    out = struct.pack("<8I", *grid, *block, 0, len(sections))
    offset = 32 + 16 * len(sections)
    for data in sections:
        out += struct.pack("<QQ", len(data), offset)
        offset += len(data)
    return out + b"".join(sections)


def test_v1_total_size_field_is_read_per_unit(tmp_path):
    # grid 3, block 64 -> 2 warps per block: a warp-level block_sched section of 3*2 records of 16 B.
    recs = [(1000 + 10 * u, 7 + u, 5) for u in range(6)]
    data = b"".join(struct.pack("<QII", *r) for r in recs)
    path = tmp_path / "t.bin"
    path.write_bytes(_hook_driver_bytes((3, 1, 1), (64, 1, 1), [data]))
    trace = open_trace(path)
    sec = trace.sections[0]
    assert (sec.level, sec.size, sec.size_field, sec.units_per_block) == (Level.WARP, 16, "total", 2)
    got = trace.records(0, records.BLOCK_SCHED)
    assert got.shape == (3, 2, 1)
    assert got["lstart"].ravel().tolist() == [r[0] for r in recs]
    assert got["elapse"].ravel().tolist() == [r[1] for r in recs]


def test_v1_total_size_two_sections_thread_and_warp(tmp_path):
    # grid 2, block 64: thread section 2*64*8 B (gmem_bytes), warp section 2*2*16 B.
    thread = np.arange(2 * 64 * 2, dtype="<u4").tobytes()
    warp = np.arange(2 * 2 * 4, dtype="<u4").tobytes()
    path = tmp_path / "two.bin"
    path.write_bytes(_hook_driver_bytes((2, 1, 1), (64, 1, 1), [thread, warp]))
    # A thread-level total also splits evenly over warps (1024 B = 128 x 8 = 4 x 256): without
    # probe.toml that section is ambiguous, and the reader says so instead of guessing.
    with pytest.raises(TraceFormatError, match="cannot infer the level of section 0"):
        open_trace(path)
    trace = open_trace(path, levels=["thread", "warp"])
    assert [(s.level, s.size, s.size_field) for s in trace.sections] == [
        (Level.THREAD, 8, "total"), (Level.WARP, 16, "total")]
    assert trace.records(0, records.GMEM_BYTES)["sync_bytes"].ravel().tolist() == list(range(0, 256, 2))


def test_writer_can_write_the_hook_driver_layout(tmp_path):
    header = TraceHeader((3, 1, 1), (64, 1, 1))
    arr = np.zeros((3, 2, 1), records.BLOCK_SCHED)
    arr["lstart"] = np.arange(6).reshape(3, 2, 1)
    path = write_trace(tmp_path / "w.bin", header, [("warp", arr)], v1_size="total")
    expected = _hook_driver_bytes((3, 1, 1), (64, 1, 1), [arr.tobytes()])
    assert path.read_bytes() == expected
    assert (open_trace(path).records(0, records.BLOCK_SCHED) == arr).all()


def test_ambiguous_total_needs_probe_toml_and_takes_it_from_the_trace_dir(tmp_path):
    # grid 1, block 64: a 256-byte total splits evenly over 64 threads (4 B) and over 2 warps (128 B).
    data = bytes(range(256))
    loose = tmp_path / "loose.bin"
    loose.write_bytes(_hook_driver_bytes((1, 1, 1), (64, 1, 1), [data]))
    ambiguous = r"cannot infer the level of section 0: .*a total that splits over thread or warp.*probe\.toml"
    with pytest.raises(TraceFormatError, match=ambiguous):
        open_trace(loose)
    # The same file inside a trace directory: probe.toml says warp:128, so no hint has to be passed.
    result = tmp_path / "Apr24_231539_1" / "result"
    result.mkdir(parents=True)
    (result.parent / "probe.toml").write_text('[p]\nposition = "kernel:start"\ndatamodel = "warp:128"\n'
                                              'before = "mov.u64 %r, 0;"\n')
    (result / "0.5.bin").write_bytes(loose.read_bytes())
    sec = open_trace(result / "0.5.bin").sections[0]
    assert (sec.level, sec.size, sec.size_field) == (Level.WARP, 128, "total")
    assert open_trace(result / "0.5.bin", levels=["thread"]).sections[0].size == 4
