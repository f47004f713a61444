"""The artifact's own dmat.cc and our DMAT command on DMAT traces the real Neutrino wrote on a real
H200 (tests/data/gpu/h200, see its MANIFEST.md). Both maps are parsed here, byte by byte, and the
expected one is also counted here from the raw records by the format notes (page = addr & ~0xFFFF,
one count per distinct clock and page; zeroed slots are unfilled)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from .dmat_files import dmat_map, run_artifact

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "data" / "gpu" / "h200"
TRACES = sorted(H200.glob("*/dmat*/trace/*/result/*.bin"))
ARTIFACT = [t for t in TRACES if t.parents[4].name == "artifact"]
MAIN = [t for t in TRACES if t.parents[4].name == "main"]


def expected_map(trace: Path) -> tuple[dict[tuple[int, int], int], set[int]]:
    raw = trace.read_bytes()
    second_word = int(np.frombuffer(raw, "<u4", 1, 36)[0])  # 0: v1 descriptor, else v2's warpDiv
    offset = int(np.frombuffer(raw, "<u8", 1, 40)[0])
    rec = np.frombuffer(raw, np.dtype([("clock", "<u8"), ("addr", "<u8")]), offset=offset)
    assert second_word in (0, 1)  # thread level
    filled = rec[rec["clock"] != 0]
    counts = Counter(zip(filled["clock"].tolist(), (filled["addr"] & ~np.uint64(0xFFFF)).tolist(),
                         strict=True))
    return dict(counts), {page for _, page in counts}


def ours(trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[tuple[int, int], int], set[int]]:
    """The map ``python dmat/dmat.py <trace> --out <tmp> --name real`` writes: that script's ``main`` in this
    process (the command as a process is test_dmat_vs_artifact.py's CLI test), its figure drawn here too
    (a forked figure process would import matplotlib afresh for each)."""
    from dmat.dmat import main

    monkeypatch.setenv("NEUTRINO_AE_NO_FORK", "1")
    assert main([str(trace), "--out", str(tmp_path), "--name", "real"]) == 0
    return dmat_map(tmp_path / "real.dmat")


def test_the_real_dmat_traces_are_there():
    assert {(p.parents[4].name, p.parents[3].name) for p in TRACES} == {
        (b, c) for b in ("artifact", "main") for c in ("dmat", "dmat-large")}


@pytest.mark.parametrize("trace", ARTIFACT, ids=lambda p: p.parents[3].name)
def test_on_the_artifacts_real_traces_our_map_is_dmat_cc_s(trace: Path, artifact_dmat: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_artifact(artifact_dmat, trace, tmp_path / "artifact.dmat").returncode == 0
    theirs, pages = dmat_map(tmp_path / "artifact.dmat")
    # dmat.cc also counts the zeroed slots of threads that returned early, as clock 0 on page 0
    theirs_filled = ({k: v for k, v in theirs.items() if k != (0, 0)}, pages - {0})
    assert ours(trace, tmp_path, monkeypatch) == theirs_filled == expected_map(trace)
    assert sum(theirs_filled[0].values()) > 0


@pytest.mark.parametrize("trace", MAIN, ids=lambda p: p.parents[3].name)
def test_on_mains_real_traces_dmat_cc_crashes_and_ours_counts_them(trace: Path, artifact_dmat: Path,
                                                                   tmp_path: Path, monkeypatch) -> None:
    """main's v2 descriptor (uint32 size, uint32 warpDiv) read as v1's uint64 size: dmat.cc takes
    (1 << 32) + size bytes per thread and dies; ours reads the layout."""
    proc = run_artifact(artifact_dmat, trace, tmp_path / "artifact.dmat")
    assert proc.returncode != 0 and b"size: 4294967" in proc.stderr
    assert ours(trace, tmp_path, monkeypatch) == expected_map(trace)
