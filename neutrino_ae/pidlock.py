"""An exclusive, non-blocking ``flock`` on a file that names its holder (``pid N``): the one mechanism
behind the output folder's lock (``run/lock.py``) and the bundle root's (``bundle/target_lock.py``).
The kernel drops the lock when its holder ends, so a killed process never leaves a stale one.
A symbolic link (or a hard link) planted at the lock's name is refused, never followed (its target
would be truncated)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from neutrino_ae.atomic import open_no_follow


def holder_line(pid: int | str) -> str:
    """What a held lock file says: ``pid N``."""
    return f"pid {pid}"


def try_lock(path: Path) -> int | str:
    """Lock ``path`` (created if missing) for this process: the open, locked descriptor with this
    process's :func:`holder_line` written in, or, when another process holds it, that holder's line
    (``"another process"`` if it has not written one yet). ``OSError`` when the file cannot be opened;
    ``InputError`` (one line, exit 2) when ``path`` is a symbolic link or not a plain file."""
    fd = open_no_follow(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "another process"
        os.close(fd)
        return holder
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{holder_line(os.getpid())}\n".encode(), 0)
    return fd


def try_shared_lock(path: Path) -> int | None:
    """A shared ``flock`` on ``path`` (created if missing), beside other shared holders: the open descriptor,
    or None while a process holds it exclusively. Errors as :func:`try_lock`."""
    fd = open_no_follow(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd
