"""``toy/counts.txt``: whitespace-separated counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from neutrino_ae.errors import InputError
from neutrino_ae.formats.inputs import read_text_input


def load(source: Any) -> dict[str, Any]:
    path = Path(source.paths[0]) / "counts.txt"
    if not path.is_file():
        raise InputError(path, "missing")
    try:
        counts = np.array(read_text_input(path, "counts", 1 << 20).split(), dtype=np.int64)
    except ValueError:
        raise InputError(path, "holds something that is not a whole number") from None
    if counts.size == 0:
        raise InputError(path, "holds no count")
    return {"counts": counts, "path": path, "truth": source.bundle.ground_truth("toy") or {}}
