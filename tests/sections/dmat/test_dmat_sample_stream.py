"""The paper-scale ``.dmat`` writer (``dmat/sample_stream.py``: the model evaluated per warp, keys
bucketed by clock and spilled to scratch files) writes the very file the sparsifier makes of the
model's per-thread records, for every figure's kernel, whatever the bucket and memory sizes."""

from __future__ import annotations

import numpy as np
import pytest

from dmat import FIGURES, sample, sample_model, sample_stream
from neutrino_ae.formats.dmat import write_dmat
from neutrino_ae.formats.dmat.sparsify import sparsify
from neutrino_ae.sample.device import Device


def _no_bar(it, total, desc):
    return it


@pytest.mark.parametrize("fig", list(FIGURES))
@pytest.mark.parametrize("small_buckets", [False, True])
def test_streamed_dmat_is_the_sparsified_per_thread_records(tmp_path, monkeypatch, fig, small_buckets):
    if small_buckets:  # many clock buckets, a spill every few keys, steps that split the chunks of draws
        monkeypatch.setattr(sample_stream, "CLOCK_SHIFT", 9)
        monkeypatch.setattr(sample_stream, "MEMORY_BYTES", 1 << 12)
        monkeypatch.setattr(sample_stream, "BLOCKS_PER_STEP", 5)
    lay = sample._layout(fig, sample_model.AttnShape(1, 3, 256, 64), 301122)
    per_thread = sparsify(sample_model.generate_chunks(lay, Device(), np.random.default_rng(7), 3))
    write_dmat(tmp_path / "sparsified.dmat", per_thread)
    got = sample_stream.write_model_dmat(tmp_path / "streamed.dmat", lay, Device(), np.random.default_rng(7), 3,
                                         _no_bar, fig)
    assert (tmp_path / "streamed.dmat").read_bytes() == (tmp_path / "sparsified.dmat").read_bytes()
    want = sample._summary(lay, per_thread)
    assert got.unfilled == per_thread.unfilled
    assert got.num_clocks == want.num_clocks and got.max_clock == want.max_clock
    assert got.accesses_by_tensor == want.accesses_by_tensor
    assert np.array_equal(got.pages, want.pages)
    assert not list(tmp_path.glob(".dmat-sample-*"))  # scratch removed
