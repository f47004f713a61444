"""Opening an input file: the checks every reader makes first, and the record of what was read.

* :func:`check_input` refuses what is not a regular file (a FIFO or ``/dev/zero`` would hang or
  never end) and, for text formats, files larger than the format can sensibly be (a huge sparse
  file must not be read whole); each refusal is one :class:`InputError` line naming the file.
* Inside :func:`recording` every file read and every directory listed is recorded, so the section
  runner fingerprints exactly what an analysis looked at -- no hand-kept list of inputs, and no
  reader (a ``formats`` reader, a section's own lookups, pandas reading a CSV) can be missed:
  besides :func:`check_input`'s note, a process-wide audit hook (:func:`sys.addaudithook`) sees each
  ``open`` for reading and each ``os.listdir`` / ``os.scandir`` (``Path.iterdir``, ``glob``, ``os.walk``).
  What was *not* there cannot be opened, so a file added later is caught through the listings: the
  directories listed, and every directory from the recording's root down to each file read (the
  place of every ``exists()`` probe a reader makes beside what it reads). A file added in any of them
  -- a newer trace folder, a variant in a layout the reader accepts -- changes the fingerprint.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from neutrino_ae.errors import InputError

KiB, MiB = 1 << 10, 1 << 20


@dataclass
class Recorded:
    """What an analysis read inside :func:`recording`, resolved paths in the order first seen."""

    files: list[Path] = field(default_factory=list)  # files read
    listed: list[Path] = field(default_factory=list)  # directories whose entries the result depends on


@dataclass
class _Recorder:
    within: Path | None
    files: dict[Path, None] = field(default_factory=dict)
    listed: dict[Path, None] = field(default_factory=dict)

    def _inside(self, p: Path) -> bool:
        return self.within is None or p == self.within or p.is_relative_to(self.within)

    def file(self, path: str | os.PathLike[str]) -> None:
        p = Path(path).resolve()
        if not self._inside(p) or p in self.files:
            return
        self.files[p] = None
        for d in p.parents:  # every directory down to it: where its reader probed beside it
            if not self._inside(d):
                break
            self.listed.setdefault(d, None)

    def listing(self, path: str | os.PathLike[str]) -> None:
        p = Path(path).resolve()
        if self._inside(p):
            self.listed.setdefault(p, None)


_opened: ContextVar[_Recorder | None] = ContextVar("neutrino_ae_opened_inputs", default=None)
_hooked = False


def note(path: str | os.PathLike[str]) -> None:
    """Record that ``path`` was read (a no-op outside :func:`recording`)."""
    rec = _opened.get()
    if rec is not None:
        rec.file(path)


def _audit(event: str, args: tuple) -> None:
    """The audit hook: files opened for reading and directories listed, while a recording is active."""
    if event not in ("open", "os.listdir", "os.scandir"):
        return
    rec = _opened.get()
    if rec is None:
        return
    try:
        target = args[0] if args else None
        if target is None and event != "open":
            target = "."  # os.listdir() / os.scandir(): the working directory
        if not isinstance(target, (str, bytes, os.PathLike)):
            return  # a file descriptor
        target = os.fsdecode(target)
        if event == "open":
            mode, flags = args[1], args[2]
            reading = ("r" in mode and "+" not in mode) if isinstance(mode, str) else \
                (flags & os.O_ACCMODE) == os.O_RDONLY
            if reading and os.path.isfile(target):
                rec.file(target)
        else:
            rec.listing(target)
    except Exception:  # an audit hook must never break the operation it watches
        return


@contextlib.contextmanager
def recording(within: str | os.PathLike[str] | None = None) -> Iterator[Recorded]:
    """Record what is read inside the block (under ``within`` only, when given: e.g. the bundle root, so
    the code and fonts a library loads on the way are not inputs); filled when the block ends."""
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True
    rec = _Recorder(Path(within).resolve() if within is not None else None)
    token = _opened.set(rec)
    found = Recorded()
    try:
        yield found
    finally:
        _opened.reset(token)
        found.files.extend(rec.files)
        found.listed.extend(rec.listed)


def check_input(path: str | os.PathLike[str], what: str, max_bytes: int | None = None) -> Path:
    """``path`` as a regular file of at most ``max_bytes``, noted as read; else one InputError."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InputError(p, f"no such {what} file") from None
    except NotADirectoryError:
        raise InputError(p, f"no such {what} file (a parent is not a directory)") from None
    except OSError as exc:
        raise InputError(p, f"cannot read the {what} file ({exc.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(p, f"is a directory, expected a {what} file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(p, f"is not a regular file (a FIFO, socket or device?), expected a {what} file")
    if max_bytes is not None and st.st_size > max_bytes:
        raise InputError(p, f"is {st.st_size:,} bytes, more than a {what} file can be ({max_bytes:,}); wrong file?")
    note(p)
    return p


def read_text_input(path: str | os.PathLike[str], what: str, max_bytes: int) -> str:
    """The text of a bounded text input (UTF-8, undecodable bytes replaced)."""
    p = check_input(path, what, max_bytes)
    try:
        return p.read_bytes()[: max_bytes + 1].decode("utf-8", errors="replace")
    except OSError as exc:
        raise InputError(p, f"cannot read the {what} file ({exc.strerror})") from None
