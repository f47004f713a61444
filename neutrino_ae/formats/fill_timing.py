"""``block_sched/timing/events.json``: Sec. 4.5's zero-fill and its two fixes, timed without a probe.

Written by ``block_sched/ptx_workload.py timing`` (CUDA events around repeated calls on a GPU, or the
emulated driver's time model) and by the sample generator (each kernel's modelled makespan); read by
the Sec. 4.5 analysis for the fixes' speed-ups. One JSON object::

    {"device": "...", "source": "...", "ms": {"raw": 0.21, "memset": 0.05, "persistent": 0.09}, ...}

``ms`` holds the mean milliseconds of one call per way of filling; other keys are kept as they are.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_text
from neutrino_ae.errors import TraceFormatError
from neutrino_ae.formats.inputs import read_text_input

#: the ways of zeroing the tensor, the first being the baseline the others are compared with
FILLS = ("raw", "memset", "persistent")
MAX_BYTES = 64 * 1024


def write_fill_timing(path: str | os.PathLike[str], ms: dict[str, float], **fields: Any) -> Path:
    return write_text(path, json.dumps({**fields, "ms": ms}, indent=1) + "\n")


def read_fill_timing(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The file's object, with ``ms`` checked: a positive finite number for ``raw`` and each fix present."""
    text = read_text_input(path, "fill timing", MAX_BYTES)
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise TraceFormatError(path, f"is not valid JSON ({exc})") from None
    ms = doc.get("ms") if isinstance(doc, dict) else None
    if not isinstance(ms, dict) or "raw" not in ms:
        raise TraceFormatError(path, 'has no "ms" object with a "raw" time')
    for name, value in ms.items():
        if name not in FILLS:
            raise TraceFormatError(path, f'"ms" names an unknown fill {name!r} (known: {", ".join(FILLS)})')
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
            raise TraceFormatError(path, f'"ms.{name}" must be a positive number of milliseconds, not {value!r}')
    return doc


def speedups(doc: dict[str, Any]) -> dict[str, float]:
    """Each fix's speed-up over the raw fill: raw ms / fix ms."""
    ms = doc["ms"]
    return {name: ms["raw"] / ms[name] for name in FILLS[1:] if name in ms}
