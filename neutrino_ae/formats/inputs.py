"""Opening an input file: the checks every reader makes first, and the record of what was opened.

* :func:`check_input` refuses what is not a regular file (a FIFO or ``/dev/zero`` would hang or
  never end) and, for text formats, files larger than the format can sensibly be (a huge sparse
  file must not be read whole); each refusal is one :class:`InputError` line naming the file.
* Every checked file is noted. Inside :func:`recording` the notes are collected, so the section
  runner fingerprints exactly the files an analysis opened -- no hand-kept list of inputs.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from neutrino_ae.errors import InputError

_opened: ContextVar[dict[str, None] | None] = ContextVar("neutrino_ae_opened_inputs", default=None)

KiB, MiB = 1 << 10, 1 << 20


def note(path: str | os.PathLike[str]) -> None:
    """Record that ``path`` was read (a no-op outside :func:`recording`)."""
    rec = _opened.get()
    if rec is not None:
        rec[str(Path(path).resolve())] = None


@contextlib.contextmanager
def recording() -> Iterator[list[Path]]:
    """Collect the files noted inside the block; the list is filled when the block ends."""
    token = _opened.set({})
    found: list[Path] = []
    try:
        yield found
    finally:
        rec = _opened.get() or {}
        _opened.reset(token)
        found.extend(Path(p) for p in rec)


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
