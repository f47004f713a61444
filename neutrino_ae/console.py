"""The terminal a command line writes to, whatever its locale: the one place each entry point (``neutrino-ae``,
the per-figure scripts, ``make report``) makes text safe to print.

* :func:`utf8_mode`: a command started with ASCII file names (``LC_ALL=C PYTHONUTF8=0``) runs again at once in
  Python's UTF-8 mode, so a non-ASCII folder name is the name it is on disk (not surrogates that no UTF-8
  notebook, JSON or CSV can hold), and the notebook kernel and section workers it starts inherit the mode.
* :func:`safe_console`: stdout and stderr escape what their encoding cannot hold (a name that is not UTF-8, a
  non-ASCII name read from a file on an ASCII terminal), never a ``UnicodeEncodeError`` traceback.
"""

from __future__ import annotations

import codecs
import os
import sys

ESCAPE_ERRORS = "neutrino_ae.escape"
#: Set in the environment of the re-executed command: it never re-executes twice.
_REEXEC_ENV = "NEUTRINO_AE_UTF8_REEXEC"


def _escape(exc: UnicodeError) -> tuple[str | bytes, int]:
    """An encoding error handler: a surrogate that stands for a byte of a file name (``surrogateescape``)
    becomes that byte again; any other character the stream cannot hold is written ``\\xe9``-style."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = bytearray()
    for ch in exc.object[exc.start:exc.end]:
        code = ord(ch)
        out += bytes([code - 0xDC00]) if 0xDC80 <= code <= 0xDCFF else ch.encode("ascii", "backslashreplace")
    return bytes(out), exc.end


codecs.register_error(ESCAPE_ERRORS, _escape)


def safe_console() -> None:
    """Make stdout and stderr escape what their encoding cannot hold (:func:`_escape`), in place."""
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) not in (None, ESCAPE_ERRORS):
            try:
                stream.reconfigure(errors=ESCAPE_ERRORS)
            except (AttributeError, ValueError, OSError):
                pass  # not a text stream of ours (a notebook's, a test's capture)


def _utf8_names() -> bool:
    return bool(sys.flags.utf8_mode) or sys.getfilesystemencoding().lower().replace("-", "") == "utf8"


def utf8_mode() -> None:
    """Re-execute this command (``sys.orig_argv``) in UTF-8 mode when its file names are decoded as ASCII
    (``LC_ALL=C`` with ``PYTHONUTF8=0``). Call it first thing, and only from a real command line's entry:
    it replaces the process."""
    if _utf8_names() or os.environ.get(_REEXEC_ENV) or not getattr(sys, "orig_argv", None):
        return
    os.environ.update({"PYTHONUTF8": "1", _REEXEC_ENV: "1"})
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])
