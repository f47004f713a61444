"""One writer per bundle root: two sample generations into the same ``trace_root`` (two batch
runs started together, each with the default ``traces/sample``) take turns instead of colliding.

The lock is an ``flock`` on ``<parent>/.<root name>.lock`` beside the root (the root itself is
swapped in by a rename, so it cannot hold its own lock); the kernel drops it when its holder ends,
so a killed generation never leaves a stale lock. The second comer waits (saying so once), then
finds the first one's bundle and reuses it; past ``wait_s`` it stops with one line naming the root
and the holder.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from neutrino_ae.bundle.download_transport import note
from neutrino_ae.errors import BundleError

#: How long a second generation waits for the first by default (``$NEUTRINO_AE_SAMPLE_WAIT_S``).
WAIT_ENV = "NEUTRINO_AE_SAMPLE_WAIT_S"
DEFAULT_WAIT_S = 1800.0


def lock_path(root: Path) -> Path:
    return root.parent / f".{root.name}.lock"


def default_wait() -> float:
    try:
        return max(0.0, float(os.environ.get(WAIT_ENV, DEFAULT_WAIT_S)))
    except ValueError:
        return DEFAULT_WAIT_S


@contextlib.contextmanager
def hold_target(root: Path, wait_s: float | None = None, progress: bool = True) -> Iterator[None]:
    """Hold the lock of bundle root ``root`` for the block, waiting up to ``wait_s`` seconds
    (default :func:`default_wait`) for another process that holds it."""
    wait_s = default_wait() if wait_s is None else wait_s
    path = lock_path(root)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield  # a read-only parent: nobody can generate here, so there is nothing to take turns on
        return
    try:
        deadline = time.monotonic() + wait_s
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
                if time.monotonic() >= deadline:
                    raise BundleError(root, f"another sample generation ({holder}) is writing it; gave up "
                                            f"after waiting {wait_s:.0f} s (${WAIT_ENV}); wait for it to finish "
                                            "or choose another trace root") from None
                if not told:
                    note(progress, f"{root}: another sample generation ({holder}) is writing it; waiting for it "
                                   f"(up to {wait_s:.0f} s)")
                    told = True
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # also drops the lock
