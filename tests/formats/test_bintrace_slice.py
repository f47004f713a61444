"""A slice of a trace is a valid trace holding exactly the original's first blocks, every section."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neutrino_ae.formats.bintrace import TraceHeader, open_trace
from neutrino_ae.formats.bintrace_slice import blocks_within, copy_or_slice, slice_trace
from neutrino_ae.formats.bintrace_write import write_trace


def _trace(path, grid, block, layout, seed=0):
    rng = np.random.default_rng(seed)
    h = TraceHeader(grid, block, 48)
    n = h.grid_size
    warp = rng.integers(0, 2**63, size=(n, h.device_units_per_block("warp"), 2), dtype=np.uint64)
    thread = rng.integers(0, 2**32, size=(n, h.block_size, 3), dtype=np.uint32)
    write_trace(path, h, [("warp", warp), ("thread", thread)], layout=layout)
    return warp, thread


@settings(max_examples=25, deadline=None)
@given(gx=st.integers(1, 9), gy=st.integers(1, 3), threads=st.sampled_from([32, 48, 96, 128]),
       layout=st.sampled_from(["v1", "v2"]), keep=st.integers(1, 40))
def test_slice_keeps_the_first_blocks_of_every_section(tmp_path_factory, gx, gy, threads, layout, keep):
    d = tmp_path_factory.mktemp("slice")
    warp, thread = _trace(d / "t.bin", (gx, gy, 1), (threads, 1, 1), layout)
    levels = ["warp", "thread"]
    out = slice_trace(d / "t.bin", d / "s.bin", keep, trace=open_trace(d / "t.bin", levels=levels))
    k = min(keep, gx * gy)
    s = open_trace(out, levels=levels)
    assert s.header.grid == (k, 1, 1)
    assert s.header.block == (threads, 1, 1) and s.header.shared_mem == 48
    assert s.layout == layout
    np.testing.assert_array_equal(s.records(0, "<u8"), warp[:k])
    np.testing.assert_array_equal(s.records(1, "<u4"), thread[:k])


def test_copy_or_slice_copies_small_files_and_cuts_large_ones(tmp_path):
    _trace(tmp_path / "t.bin", (100, 1, 1), (64, 1, 1), "v2")
    size = (tmp_path / "t.bin").stat().st_size
    _, kept, total = copy_or_slice(tmp_path / "t.bin", tmp_path / "copy.bin", size)
    assert (kept, total) == (100, 100)
    assert (tmp_path / "copy.bin").read_bytes() == (tmp_path / "t.bin").read_bytes()
    tr = open_trace(tmp_path / "t.bin")
    per_block = 2 * 16 + 64 * 12  # two warps x 16 B + 64 threads x 12 B
    assert blocks_within(tr, 10 * per_block + 5) == 10
    out, kept, total = copy_or_slice(tmp_path / "t.bin", tmp_path / "cut.bin", 10 * per_block + 5)
    assert (kept, total) == (10, 100)
    assert open_trace(out).header.grid == (10, 1, 1)


def test_a_block_larger_than_the_budget_still_gives_one_block(tmp_path):
    _trace(tmp_path / "t.bin", (4, 1, 1), (64, 1, 1), "v1")
    _, kept, _ = copy_or_slice(tmp_path / "t.bin", tmp_path / "cut.bin", 100)
    assert kept == 1


def test_a_corrupt_trace_is_refused_with_its_name(tmp_path):
    (tmp_path / "bad.bin").write_bytes(b"\x01" * 12)
    with pytest.raises(Exception, match="bad.bin"):
        slice_trace(tmp_path / "bad.bin", tmp_path / "s.bin", 1)
    assert not (tmp_path / "s.bin").exists()
