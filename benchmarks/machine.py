"""The machine a benchmark ran on (CPU, cores, memory, load, software versions), written into every
results file so that two of them can be compared.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import numpy as np


def meminfo_bytes(field: str) -> int | None:
    """``field`` of ``/proc/meminfo`` (``MemTotal``, ``MemAvailable``) in bytes; None where unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def machine_description() -> dict[str, Any]:
    """CPU, cores, memory and software versions: enough to tell whether two result files compare."""
    cpu_model = None
    flags: list[str] = []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and cpu_model is None:
                cpu_model = value.strip()
            if key.strip() == "flags" and not flags:
                flags = value.split()
    except OSError:
        pass
    mem_total = meminfo_bytes("MemTotal")
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    versions = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("pandas", "matplotlib", "nbclient", "papermill"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - a missing optional package is just "absent" here
            versions[mod] = None
    return {
        "cpu_model": cpu_model or platform.processor() or None,
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "avx2": "avx2" in flags,
        "avx512f": "avx512f" in flags,
        "mem_total_bytes": mem_total,
        "platform": platform.platform(),
        "loadavg_at_start": list(os.getloadavg()),
        "versions": versions,
    }
