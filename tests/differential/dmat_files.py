"""Reading a ``.dmat`` file independently of our reader, and running the artifact's dmat.cc binary."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np


def dmat_map(path: Path) -> tuple[dict[tuple[int, int], int], set[int]]:
    """A ``.dmat`` file as ``{(clock, page): count}`` and its page list, parsed here from the format notes
    (not with our reader), summing repeated entries."""
    raw = path.read_bytes()
    num_pages, num_clocks = np.frombuffer(raw, "<u8", 2)
    pages = set(int(p) for p in np.frombuffer(raw, "<u8", int(num_pages), 16))
    at = 16 + 8 * int(num_pages)
    out: dict[tuple[int, int], int] = {}
    pair = np.dtype([("page", "<u8"), ("count", "<u4")])
    for _ in range(int(num_clocks)):
        clock, n = (int(x) for x in np.frombuffer(raw, "<u8", 2, at))
        at += 16
        for page, count in np.frombuffer(raw, pair, n, at).tolist():
            out[(clock, page)] = out.get((clock, page), 0) + count
        at += 12 * n
    assert at == len(raw), f"{path}: {len(raw) - at} trailing bytes"
    return out, pages


def run_artifact(exe: Path, trace: Path, out: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(exe), str(trace), str(out)], capture_output=True, timeout=120)
