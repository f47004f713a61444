"""Atomic output: write to a temporary sibling, fsync it, then rename, so no half-written file looks
complete and a failed write (a full disk, a file-size limit) leaves the previous file as it was.

A write that fails because the file system is full (``ENOSPC``, ``EDQUOT``) or the file would pass the
size limit (``EFBIG``, ``RLIMIT_FSIZE``) raises :class:`DiskFull` naming the final path: one line,
``disk full: <path> (<reason>)``, and exit code :data:`DISK_FULL_EXIT` on the command line.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from neutrino_ae.errors import InputError, NeutrinoAEError

#: Exit code of a command line that stopped because the disk (or the file-size limit) was full
#: (listed in ``errors.EXIT_CODES``).
DISK_FULL_EXIT = 74  # sysexits.h EX_IOERR
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


class DiskFull(NeutrinoAEError, OSError):
    """No room to write ``path``: the file system is full or the file would pass the size limit.

    An ``OSError`` too (with its ``errno``), so code that handles file-system errors still does."""

    exit_code = DISK_FULL_EXIT

    def __init__(self, path: str | os.PathLike[str], err: int = errno.ENOSPC) -> None:
        super().__init__(err, os.strerror(err), os.fspath(path))

    def __str__(self) -> str:
        return f"disk full: {self.filename} ({self.strerror})"

    def __reduce__(self) -> tuple[Any, ...]:  # crosses process boundaries (section workers)
        return (type(self), (self.filename, self.errno))


def open_no_follow(path: str | os.PathLike[str], flags: int, mode: int = 0o666) -> int:
    """``os.open(path, flags | O_NOFOLLOW | O_CLOEXEC, mode)`` for a file the suite writes by a fixed name
    (a lock, run.log, a temp file): a symbolic link planted at ``path`` is refused with one line
    (:class:`~neutrino_ae.errors.InputError`, exit 2) instead of having its target written, and so is
    anything but a regular file with a single name (a hard link to another file, a FIFO, a device)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(path, "is a symbolic link; refusing to write through it (remove it)") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        os.close(fd)
        what = "a hard link to another file" if stat.S_ISREG(st.st_mode) else "not a regular file"
        raise InputError(path, f"is {what}; refusing to write through it (remove it)")
    return fd


#: (device, inode) of every file this process reads as an input and so must never replace (:func:`protecting`).
_protected: set[tuple[int, int]] = set()


@contextlib.contextmanager
def protecting(paths: Iterable[str | os.PathLike[str]]) -> Iterator[None]:
    """While the block runs, never replace the files of ``paths`` (a command's inputs: files, and every file
    under a folder but the suite's hidden bookkeeping): an atomic write whose final name is one of them, by
    any path, link or hard link, raises :class:`~neutrino_ae.errors.InputError` (exit 2) instead. So a
    command whose output folder holds its input (``exposed_latency.py x/exposed_latency.csv --out x``) never
    writes its results over it."""
    added: set[tuple[int, int]] = set()
    for given in paths:
        if os.path.isdir(given):
            for dirpath, dirs, files in os.walk(given):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                for f in files:
                    if not f.startswith("."):
                        _protect_one(os.path.join(dirpath, f), added)
        else:
            _protect_one(given, added)
    added -= _protected
    _protected.update(added)
    try:
        yield
    finally:
        _protected.difference_update(added)


def _protect_one(path: str | os.PathLike[str], into: set[tuple[int, int]]) -> None:
    with contextlib.suppress(OSError, ValueError):
        st = os.stat(path)
        if stat.S_ISREG(st.st_mode):
            into.add((st.st_dev, st.st_ino))


def _refuse_input(final: Path) -> None:
    if not _protected:
        return
    try:
        st = os.stat(final)
    except (OSError, ValueError):
        return
    if (st.st_dev, st.st_ino) in _protected:
        raise InputError(final, "is an input of this command; refusing to write over it (name an output folder "
                                "that holds none of the inputs)")


def is_disk_full(exc: BaseException) -> bool:
    """True for an OSError that says the disk is full or the file-size limit is reached."""
    return isinstance(exc, OSError) and exc.errno in _FULL


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; it replaces ``path`` only if the block succeeds.

    The temporary name keeps the final suffix (``suffix`` overrides) so tools that pick a format
    from the extension, such as ``matplotlib.savefig``, behave as for the final name.
    """
    final = Path(path)
    _refuse_input(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{final.stem}.tmp-", suffix=final.suffix if suffix is None else suffix, dir=final.parent
    )
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        _fsync(tmp_path)  # the data is on disk before the name points at it
        _refuse_input(final)  # made meanwhile by a link to an input
        os.replace(tmp_path, final)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        if is_disk_full(exc) and not isinstance(exc, DiskFull):
            raise DiskFull(final, exc.errno) from None  # type: ignore[union-attr]
        raise


def _fsync(path: Path) -> None:
    """fsync the temp file, and give it the permissions a plain open() would have (mkstemp makes 0600);
    through a descriptor opened without following a symbolic link put in its place."""
    fd = open_no_follow(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.fchmod(fd, 0o666 & ~_umask())
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "wb", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path`` for writing; rename it over ``path`` on success."""
    if not any(m in mode for m in "wax"):
        raise ValueError(f"atomic_open is for writing, got mode {mode!r}")
    mode = mode.replace("x", "w").replace("a", "w")
    # The temp file mkstemp made (O_EXCL, O_NOFOLLOW) is reopened by name: never through a link put there since.
    with atomic_path(path) as tmp, open(tmp, mode, opener=_no_follow_opener, **kwargs) as fh:
        yield fh
        fh.flush()  # atomic_path fsyncs the file once it is closed


def _no_follow_opener(path: str, flags: int) -> int:
    return open_no_follow(path, flags, 0o600)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    with atomic_open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    return Path(path)


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    return write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(obj: Any) -> Any:
    # numpy scalars and arrays show up in results; convert without importing numpy eagerly.
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
