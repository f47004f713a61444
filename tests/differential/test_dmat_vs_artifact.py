"""DMAT: our sparsifier and figure against the artifact's own ``neutrino/tools/dmat.cc``, on the same files.

The artifact's ``dmat.cc`` is built from its tarball at test time and run on traces from the independent
writer (``tracegen``). The ``(clock, page) -> count`` map it writes must be the map ours writes, except
for the one documented deviation: zero-filled count slots, which it keeps as a phantom (clock 0,
page 0) cell and we drop and count (docs/DESIGN.md, "Deviations from the artifact's scripts"). Where it
cannot read a file (v2 descriptors, which it reads as v1), ours must still give the writer's map.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from undrawn_analysis import leave_figures_undrawn

import neutrino_ae.formats.dmat.stream as dmat_stream
from dmat import dmat_figure
from dmat.inputs import load_input, write_raw
from neutrino_ae.formats.dmat import drop_unfilled, read_dmat

from .dmat_files import dmat_map, run_artifact
from .tracegen import DMAT, UNFILLED_ONES, DmatCase, dmat_cases, dmat_trace

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def our_dmat(trace: Path, out_dir: Path) -> Path:
    """What ``python dmat/dmat.py <trace>`` writes as the ``.dmat``, without drawing the figure."""
    inp = load_input(trace, out_dir)
    assert inp.raw is not None and inp.sparsified is not None
    write_raw(inp.raw, inp.sparsified)
    return inp.sparsified


def zero_filled(case: DmatCase) -> int:
    r = case.records
    return int(np.count_nonzero((r["addr"] >> np.uint64(16) == 0) & (r["clock"] != np.uint64(UNFILLED_ONES))))


@given(case=dmat_cases(), small_buckets=st.booleans())
@EXAMPLES
def test_same_page_reference_map_as_dmat_cc(case: DmatCase, small_buckets: bool, artifact_dmat: Path,
                                            tmp_path_factory, monkeypatch) -> None:
    tmp = tmp_path_factory.mktemp("dmat")
    path = case.trace.write(tmp / "0.5.bin")
    if small_buckets:  # many clock buckets, spilled to scratch files
        monkeypatch.setattr(dmat_stream, "BUCKET_RECORDS", 64)
        monkeypatch.setattr(dmat_stream, "MEMORY_BYTES", 256)
    our_file = our_dmat(path, tmp / "ours")
    ours, our_pages = dmat_map(our_file)
    expected = case.expected_map()
    # Zero-filled slots: the one deviation (they are not accesses; see the module docstring).
    phantom = expected.pop((0, 0), 0)
    assert phantom == zero_filled(case)
    assert ours == expected
    assert our_pages == {p for _, p in expected}

    art = run_artifact(artifact_dmat, path, tmp / "artifact.dmat")
    if case.trace.layout == "v2":
        # dmat.cc reads the v2 descriptor (uint32 size, uint32 warpDiv) as one uint64 size: it crashes
        # or reads garbage; ours read the writer's map above.
        event("v2: artifact cannot read it")
        return
    assert art.returncode == 0, art.stderr.decode(errors="replace")
    theirs, their_pages = dmat_map(tmp / "artifact.dmat")
    event(f"artifact answers; zero-filled slots: {'yes' if phantom else 'no'}")
    assert theirs.pop((0, 0), 0) == phantom
    assert ours == theirs
    assert our_pages == their_pages - ({0} if phantom else set())
    # The paper bundle's .dmat files come from dmat.cc: ours reads them as the same accesses.
    from_artifact = drop_unfilled(read_dmat(tmp / "artifact.dmat"))
    assert from_artifact.equals(read_dmat(our_file))
    assert from_artifact.unfilled == phantom


def _unfilled_ones_trace(tmp: Path) -> tuple[Path, DmatCase]:
    """The issue's case: 64 blocks x 32 threads, a third of the slots with the all-ones clock."""
    rng = np.random.default_rng(1)
    n = 64 * 32 * 4
    rec = np.zeros(n, DMAT)
    rec["clock"] = rng.integers(0, 3000, n)
    rec["addr"] = 0x7F00_0000_0000 + rng.integers(0, 2**22, n)
    rec["clock"][::3] = UNFILLED_ONES
    case = dmat_trace((64, 1, 1), (32, 1, 1), rec)
    return case.trace.write(tmp / "0.25.bin"), case


def test_cli_on_all_ones_clocks_writes_the_artifacts_map_and_a_figure(artifact_dmat: Path, tmp_path: Path) -> None:
    """Issue 20 item 1: this crashed with an OverflowError traceback after writing a wrong .dmat."""
    path, case = _unfilled_ones_trace(tmp_path)
    cli = subprocess.run([sys.executable, str(REPO / "dmat" / "dmat.py"), str(path), "--out", str(tmp_path / "out"),
                          "--name", "ones"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert cli.returncode == 0, cli.stderr
    assert "Traceback" not in cli.stderr + cli.stdout
    assert cli.stdout.strip().splitlines()[-1] == str(tmp_path / "out" / "ones.png")
    assert (tmp_path / "out" / "ones.png").stat().st_size > 0
    assert run_artifact(artifact_dmat, path, tmp_path / "artifact.dmat").returncode == 0
    assert dmat_map(tmp_path / "out" / "ones.dmat") == dmat_map(tmp_path / "artifact.dmat")
    assert f"{int(np.count_nonzero(case.records['clock'] == np.uint64(UNFILLED_ONES))):,} unfilled" in cli.stdout


def test_one_thread_blocks_without_probe_toml_read_as_thread_level(artifact_dmat: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20 item 3: a bare v1 trace of 1-thread blocks fits either level; dmat is thread-level."""
    rng = np.random.default_rng(3)
    rec = np.zeros(16 * 2, DMAT)
    rec["clock"] = rng.integers(0, 500, rec.size)
    rec["addr"] = 0x7F00_0000_0000 + rng.integers(0, 2**20, rec.size)
    path = dmat_trace((16, 1, 1), (1, 1, 1), rec).trace.write(tmp_path / "0.5.bin")
    leave_figures_undrawn(monkeypatch)  # the .dmat map and the level read are compared, not the figure
    result = dmat_figure(path, tmp_path / "out", "one")
    assert run_artifact(artifact_dmat, path, tmp_path / "artifact.dmat").returncode == 0
    assert dmat_map(tmp_path / "out" / "one.dmat") == dmat_map(tmp_path / "artifact.dmat")
    assert "assumed thread" in result.data["section_level"]
    assert "assumed thread" in result.text


def test_accesses_past_the_artifacts_clock_cutoff_are_drawn_and_reported(tmp_path: Path) -> None:
    """Issue 20 item 5: the artifact's plot drops clock entries >= 5,000,000; ours keeps them and says so."""
    rec = np.zeros(4 * 32 * 2, DMAT)
    rec["clock"] = np.tile([100, 6_000_000], rec.size // 2)
    rec["addr"] = 0x7F00_0001_0000
    path = dmat_trace((4, 1, 1), (32, 1, 1), rec).trace.write(tmp_path / "0.5.bin")
    result = dmat_figure(path, tmp_path / "out", "long")
    cut = result.data["clock_cutoff"]
    assert cut["artifact"] == 5_000_000 and cut["ours"] is None
    assert cut["accesses_past_artifact_cutoff"] == rec.size // 2
    assert result.data["max_clock"] == 6_000_000
    assert "128 accesses past clock 5,000,000" in result.text
    assert int(result.plot.hist.sum()) == rec.size  # drawn, not dropped


@pytest.mark.parametrize("clock_base", [2**64 - 1000, 2**63])
def test_clocks_near_2_64_bin_inside_the_figure(clock_base: int, tmp_path: Path, monkeypatch) -> None:
    """A clock times the bin count wraps uint64 near 2**64; every access must still land in a bin, in order."""
    rec = np.zeros(2 * 32, DMAT)
    rec["clock"] = np.uint64(clock_base) + np.arange(rec.size, dtype=np.uint64)
    rec["addr"] = 0x7F00_0000_0000
    path = dmat_trace((2, 1, 1), (32, 1, 1), rec).trace.write(tmp_path / "0.5.bin")
    leave_figures_undrawn(monkeypatch)  # the figure's binned arrays (result.plot) are read, not its pixels
    result = dmat_figure(path, tmp_path / "out", "near")
    hist = result.plot.hist.sum(axis=(0, 1))
    assert int(hist.sum()) == rec.size
    assert hist[-1] > 0  # the largest clocks in the last bin, not wrapped to the first
    assert read_dmat(tmp_path / "out" / "near.dmat").num_accesses == rec.size
