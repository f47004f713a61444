"""The compiled DMAT paths (issue 24 item 5) give exactly what the numpy paths give: the binner's cells, clock
spans and cut-off count, and the ``.dmat`` body words; and the dmat command's files are the same either way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dmat.binning import ARTIFACT_CLOCK_CUTOFF, DmatBinner
from neutrino_ae.formats import dmat as dmat_fmt
from neutrino_ae.formats.dmat import body_words, from_pairs

pytest.importorskip("numba")
REPO = Path(__file__).resolve().parents[3]


def _pairs(seed: int = 3) -> tuple[np.ndarray, dmat_fmt.DmatData]:
    rng = np.random.default_rng(seed)
    pages = (np.uint64(0x7F00_0000_0000) + np.arange(300, dtype=np.uint64) * np.uint64(0x30000))
    n = 200_000
    clock = rng.integers(0, 2 * ARTIFACT_CLOCK_CUTOFF, n).astype(np.uint64) // np.uint64(50)
    clock[:1000] += np.uint64(ARTIFACT_CLOCK_CUTOFF)  # some past the artifact's cut-off
    page = pages[rng.integers(0, pages.size, n)]
    key = np.unique(np.stack([clock, page]), axis=1)
    count = rng.integers(1, 9, key.shape[1]).astype(np.uint32)
    return pages, from_pairs(key[0], key[1], count, pages=pages)


def _binned(compiled: bool, data: dmat_fmt.DmatData, pages: np.ndarray) -> DmatBinner:
    labels = np.arange(pages.size) * 4 // pages.size
    b = DmatBinner(pages, labels, ["a", "b", "c", "d", "other"], int(data.clocks.max()), 97, 64,
                   data.num_accesses)
    b.compiled = compiled
    for lo, hi in ((0, 40_000), (40_000, data.clocks.size)):  # two batches
        base, end = int(data.indptr[lo]), int(data.indptr[hi])
        b.add(dmat_fmt.DmatData(pages, data.clocks[lo:hi], data.indptr[lo:hi + 1] - base,
                                data.pair_page[base:end], data.pair_count[base:end]))
    return b


def test_compiled_binning_equals_numpy_binning() -> None:
    pages, data = _pairs()
    fast, slow = _binned(True, data, pages), _binned(False, data, pages)
    assert fast.page_index.table is not None
    assert slow.past_artifact_cutoff > 0
    assert np.array_equal(fast.hist, slow.hist) and fast.hist.sum() == data.num_accesses
    assert fast.past_artifact_cutoff == slow.past_artifact_cutoff
    for name in ("first_clock", "last_clock", "seen"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name


def test_compiled_body_words_equal_numpy_words(monkeypatch: pytest.MonkeyPatch) -> None:
    _, data = _pairs(5)
    expect = body_words(data.clocks, data.indptr, data.pair_page, data.pair_count)  # numba not forced
    import numba  # noqa: F401  (loaded: body_words takes the compiled pass)

    got = body_words(data.clocks, data.indptr, data.pair_page, data.pair_count)
    assert got.dtype == expect.dtype and np.array_equal(got, expect)


def test_the_command_writes_the_same_files_with_and_without_numba(tmp_path: Path) -> None:
    """A raw trace large enough for the compiled binner (16M pairs is too slow for a test: the threshold is
    lowered in a child) gives byte-identical .dmat and PNG files with numba and with NEUTRINO_AE_PURE_NUMPY."""
    from differential.tracegen import DMAT, dmat_trace

    rng = np.random.default_rng(11)
    rec = np.zeros(64 * 128 * 64, DMAT)
    rec["clock"] = np.sort(rng.integers(0, 400_000, rec.size)).astype(np.uint64)
    rec["addr"] = np.uint64(0x7F3A_0000_0000) + rng.integers(0, (64 << 20) // 16, rec.size).astype(np.uint64) * 16
    rec[rng.random(rec.size) < 0.02] = 0
    trace = tmp_path / "r.bin"
    dmat_trace((64, 1, 1), (128, 1, 1), rec).trace.write(trace)
    code = ("import sys, neutrino_ae.jit as j; j.NUMBA_MIN_ITEMS = 1\n"
            "from neutrino_ae.report.section.driver import run_script\n"
            "sys.argv = ['dmat.py', *sys.argv[1:]]; raise SystemExit(run_script('dmat/dmat.py'))")
    outs = []
    for pure in ("0", "1"):
        out = tmp_path / f"out{pure}"
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "NEUTRINO_AE_PURE_NUMPY": pure}
        proc = subprocess.run([sys.executable, "-c", code, str(trace), "--out", str(out)], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        outs.append(out)
    for name in ("r.dmat", "r.png"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
