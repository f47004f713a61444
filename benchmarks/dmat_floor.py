"""The floor of a DMAT command on a raw trace: read the records and bin them into the same (clock, page)
counts, in numpy alone (no ``.dmat`` written, no tensor naming, no figure, no checks).

    python -m benchmarks.dmat_floor <trace.bin>

Prints the number of distinct (clock, page) cells and of accesses. :mod:`benchmarks.speed` times it beside
``dmat/dmat.py`` and the artifact's ``dmat.py`` on the same trace.
"""

from __future__ import annotations

import sys

import numpy as np

from neutrino_ae.formats.bintrace import open_trace
from neutrino_ae.formats.records import DMAT


def cells(path: str) -> tuple[int, int]:
    trace = open_trace(path, levels=["thread"])
    keys = []
    for _, chunk in trace.iter_chunks(0, DMAT, chunk_bytes=64 << 20, reuse=True):
        rec = chunk.reshape(-1)
        page = rec["addr"] >> np.uint64(16)
        filled = page != 0
        keys.append((rec["clock"][filled] << np.uint64(24)) | (page[filled] & np.uint64(0xFFFFFF)))
    key = np.concatenate(keys) if keys else np.zeros(0, np.uint64)
    key.sort()
    distinct = int(np.count_nonzero(key[1:] != key[:-1])) + 1 if key.size else 0
    return distinct, int(key.size)


if __name__ == "__main__":
    n, accesses = cells(sys.argv[1])
    print(f"cells {n} accesses {accesses}")
