"""One writer per bundle root: two sample generations into the same ``trace_root`` (two batch
runs started together, each with the default ``traces/sample``) take turns instead of colliding.

The lock is an ``flock`` on ``<parent>/.<root name>.lock`` beside the root (the root itself is
swapped in by a rename, so it cannot hold its own lock); the kernel drops it when its holder ends,
so a killed generation never leaves a stale lock, and the holder removes the file when it is
done. The second comer waits (saying so once), then finds the first one's bundle and reuses it;
past ``wait_s`` it stops with one line naming the root and the holder.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from neutrino_ae.bundle.download_transport import note
from neutrino_ae.errors import BundleError
from neutrino_ae.pidlock import try_lock

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
    except OSError:
        yield  # no parent to write in: nobody can generate here, so there is nothing to take turns on
        return
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            fd = try_lock(path)
        except OSError:
            yield  # a read-only parent, as above
            return
        if isinstance(fd, str):
            holder = fd
            if time.monotonic() >= deadline:
                raise BundleError(root, f"another sample generation ({holder}) is writing it; gave up "
                                        f"after waiting {wait_s:.0f} s (${WAIT_ENV}); wait for it to finish "
                                        "or choose another trace root") from None
            if not told:
                note(progress, f"{root}: another sample generation ({holder}) is writing it; waiting for it "
                               f"(up to {wait_s:.0f} s)")
                told = True
            time.sleep(0.1)
            continue
        if _same_file(fd, path):
            break
        os.close(fd)  # the holder before removed the file after this opened it: take the new one
    try:
        yield
    finally:
        # Removed while still held, so no lock file is left beside the bundle; a waiter that opened
        # the old file sees it is gone (_same_file) and takes a new one.
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        st, held = path.stat(), os.fstat(fd)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)
