"""One writer per bundle root, and no writer while a run reads it: two sample generations into the
same ``trace_root`` (two batch runs started together, each with the default ``traces/sample``) take
turns instead of colliding, and ``sample --force`` or ``fetch --force`` waits for the runs reading the
root (each holds the same lock shared, :func:`hold_for_reading`) instead of replacing files under them.

The lock is an ``flock`` on a file named after the root's absolute path in a folder only this user
can write (:func:`lock_dir`: ``$XDG_RUNTIME_DIR/neutrino-ae``, else ``<tmp>/neutrino-ae-<uid>``), never
beside the root: the root itself is swapped in by a rename, so it cannot hold its own lock, and a
guessable name beside it in a shared folder (``/tmp/.traces.lock``) is one any user could plant a
symbolic link at. The kernel drops the lock when its holder ends, so a killed generation never leaves
a stale lock, and the holder removes the file when it is done: a writer always, a reader when no other
reader holds it (:func:`release_reading`); whoever lets go also removes the files killed holders left
(:func:`_sweep`), so the folder holds about one file per root in use. The second comer waits (saying so
once), then finds the first one's bundle and reuses it; past ``wait_s`` it stops with one line naming
the root and the holder. (Two users generating into one root do not wait for each other; the second
cannot replace the first's bundle anyway.)
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from neutrino_ae.atomic import open_no_follow
from neutrino_ae.bundle.download.transport import note
from neutrino_ae.errors import BundleError, InputError
from neutrino_ae.pidlock import try_lock, try_shared_lock

#: How long a second generation waits for the first by default (``$NEUTRINO_AE_SAMPLE_WAIT_S``).
WAIT_ENV = "NEUTRINO_AE_SAMPLE_WAIT_S"
DEFAULT_WAIT_S = 1800.0
#: A lock file no one holds is swept once it is this old (seconds).
SWEEP_AGE_S = 60.0


def lock_dir() -> Path:
    """This user's folder for bundle-root locks, created 0700; refused (one line) when it is a symbolic
    link, another user's, or writable by others."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    folder = (Path(runtime) / "neutrino-ae" if os.path.isabs(runtime)
              else Path(tempfile.gettempdir()) / f"neutrino-ae-{os.getuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise BundleError(folder, "is not a private folder of yours (a symbolic link, another user's, or writable "
                                  "by others); refusing to keep the sample generation's lock there; remove it")
    return folder


def lock_path(root: Path) -> Path:
    """The lock file of bundle root ``root``: named after its absolute path (its parent resolved)."""
    where = os.path.join(os.path.realpath(root.parent), root.name)
    return lock_dir() / f"root-{hashlib.sha256(os.fsencode(where)).hexdigest()[:32]}.lock"


def default_wait() -> float:
    try:
        return max(0.0, float(os.environ.get(WAIT_ENV, DEFAULT_WAIT_S)))
    except ValueError:
        return DEFAULT_WAIT_S


@contextlib.contextmanager
def hold_target(root: Path, wait_s: float | None = None, progress: bool = True) -> Iterator[None]:
    """Hold the lock of bundle root ``root`` for the block, waiting up to ``wait_s`` seconds
    (default :func:`default_wait`) for another process that holds it."""
    try:
        path = lock_path(root)
        fd = _acquire(root, path, try_lock, "in use by another sample generation, fetch or run ({})", wait_s,
                      progress)
    except OSError:
        yield  # no folder for locks can be made (a read-only runtime folder): generate without one
        return
    try:
        yield
    finally:
        # Removed while still held, so no lock file is left behind; a waiter that opened
        # the old file sees it is gone (_same_file) and takes a new one.
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)
        _sweep(path.parent)


def hold_for_reading(root: Path, wait_s: float | None = None, progress: bool = True) -> int | None:
    """Hold the lock of bundle root ``root`` shared, for a run reading it: other runs read beside it, a
    sample generation or fetch waits until it is released (close the descriptor returned; it is dropped
    when the process ends). Waits up to ``wait_s`` for a writer holding it; None when no folder for locks
    can be made."""
    def take(path: Path) -> int | str:
        fd = try_shared_lock(path)
        return "a writer" if fd is None else fd

    try:
        return _acquire(root, lock_path(root), take, "a sample generation or fetch is writing it", wait_s, progress)
    except OSError:
        return None


def release_reading(fd: int | None, root: Path) -> None:
    """Let go of :func:`hold_for_reading`'s descriptor ``fd`` (None: nothing was held) of root ``root``,
    removing the lock file unless another reader still holds it."""
    if fd is None:
        return
    with contextlib.suppress(OSError):
        _unlink_if_free(fd, lock_path(root))
    os.close(fd)
    with contextlib.suppress(OSError):
        _sweep(lock_dir())


def _unlink_if_free(fd: int, path: Path) -> None:
    """Remove ``path`` when ``fd``, its open descriptor, can lock it exclusively (no one else holds it).
    Removed while locked, as :func:`hold_target` does: a process that opened the file meanwhile finds it
    gone once it has the lock (:func:`_same_file`) and takes a new one."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a shared lock converted: fails while others hold it
    except BlockingIOError:
        return
    if _same_file(fd, path):
        path.unlink()


def _sweep(folder: Path) -> None:
    """Remove the lock files in ``folder`` that no process holds and none touched in the last
    :data:`SWEEP_AGE_S` (left by killed holders, or by versions that kept a reader's file): a new one may
    be about to be locked by a process that does not check, as :func:`_acquire` does, that its file is
    still there. A symbolic link or other odd entry is left alone, never followed."""
    for path in folder.glob("root-*.lock"):
        try:
            fd = open_no_follow(path, os.O_RDWR)
        except (OSError, InputError):
            continue
        try:
            if time.time() - os.fstat(fd).st_mtime >= SWEEP_AGE_S:
                _unlink_if_free(fd, path)
        except OSError:
            pass
        finally:
            os.close(fd)


def _acquire(root: Path, path: Path, take: Callable[[Path], int | str], busy: str, wait_s: float | None,
             progress: bool) -> int:
    """The descriptor of ``path`` locked by ``take`` (which gives the holder's line while another process
    holds it), retrying every 0.1 s for up to ``wait_s`` seconds; ``busy`` (``{}``: the holder) says who
    is in the way. OSError when the lock file cannot be opened."""
    wait_s = default_wait() if wait_s is None else wait_s
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        fd = take(path)
        if isinstance(fd, str):
            why = busy.format(fd)
            if time.monotonic() >= deadline:
                raise BundleError(root, f"{why}; gave up after waiting {wait_s:.0f} s (${WAIT_ENV}); wait for it "
                                        "to finish or choose another trace root") from None
            if not told:
                note(progress, f"{root}: {why}; waiting for it (up to {wait_s:.0f} s)")
                told = True
            time.sleep(0.1)
            continue
        if _same_file(fd, path):
            return fd
        os.close(fd)  # the holder before removed the file after this opened it: take the new one


def _same_file(fd: int, path: Path) -> bool:
    try:
        st, held = path.stat(), os.fstat(fd)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (held.st_dev, held.st_ino)
