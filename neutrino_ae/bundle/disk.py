"""Free-space checks shared by the download and the extraction, their read/write block size, and
byte counts for people."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from neutrino_ae.errors import BundleError

# Slack on disk checks: filesystems need some room for metadata, and running a disk to exactly
# zero breaks everything else on the machine.
DISK_SLACK = 64 << 20
# Bytes read or written at a time by the download and the extraction.
CHUNK = 1 << 20


def free_bytes(directory: Path) -> int:
    """Free bytes on the file system holding ``directory`` (tests replace this)."""
    return shutil.disk_usage(directory).free


def check_disk(directory: Path, needed: int, what: str | os.PathLike[str]) -> None:
    """BundleError naming ``what`` unless ``directory`` has ``needed`` bytes free (plus slack)."""
    free = free_bytes(directory)
    if needed + DISK_SLACK > free:
        raise BundleError(what, f"needs {human(needed)} of disk but {directory} has only {human(free)} "
                                "free; free some space or choose another --trace-root")


def human(n: float) -> str:
    """``1536`` -> ``1.5 KiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"
