"""The suite's logging: where its messages go, and its progress bars.

Modules log with ``logging.getLogger(__name__)``; this module owns the handlers:

* **console** (stderr): INFO by default on the command line, WARNING with ``-q``, DEBUG with ``-v``
  (:func:`add_verbosity_options`, :func:`configure_console`). In a notebook kernel only warnings
  reach the cell output (the progress chatter goes to the log file).
* **run.log** (:data:`LOG_NAME`), every level, beside a run's results (:func:`log_to_file`): the
  notebooks' set-up cell, their worker processes and ``neutrino-ae run`` append to
  ``<output_dir>/run.log``. A symbolic link planted there is refused, never appended to; a name the
  encoding cannot hold is written escaped, never a "Logging error".
* **progress bars** (tqdm, stderr) for long steps (:func:`progress`): shown when the console shows
  INFO and stderr is a terminal; ``$NEUTRINO_AE_PROGRESS=1`` shows them anyway, ``0`` never.

Only the package's loggers and the section folders' (:func:`claim`) pass INFO and DEBUG on;
third-party libraries keep Python's default (warnings only), so ``-v`` is not drowned in theirs.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from neutrino_ae.escape import terminal

PACKAGE_LOGGER = "neutrino_ae"
LOG_NAME = "run.log"
PROGRESS_ENV = "NEUTRINO_AE_PROGRESS"
FILE_FORMAT = "%(asctime)s %(levelname)-7s %(processName)s %(name)s: %(message)s"

_console: logging.Handler | None = None
_file: logging.FileHandler | None = None
_quiet = False  # -q was given: no progress bars at all


def claim(*names: str) -> None:
    """Let the loggers ``names`` (and their children) pass every level on to the handlers."""
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)


claim(PACKAGE_LOGGER)


class _TextFormatter(logging.Formatter):
    """A log line as text: a bundle's names and a tool's output in it never carry a control sequence
    (:func:`~neutrino_ae.escape.terminal`), on the console or in run.log (which a terminal shows too)."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal(super().format(record))


class _ConsoleFormatter(_TextFormatter):
    """``message`` for INFO and below, ``warning: message`` / ``error: message`` above."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return text if record.levelno <= logging.INFO else f"{record.levelname.lower()}: {text}"


class _RunLogHandler(logging.FileHandler):
    """run.log, opened for appending without following a symbolic link at its name
    (:func:`~neutrino_ae.atomic.open_no_follow`: one ``InputError`` line instead), and with what UTF-8
    cannot hold (a non-UTF-8 folder name, as surrogates) written escaped rather than failing."""

    def _open(self) -> Any:
        from neutrino_ae.atomic import open_no_follow

        fd = open_no_follow(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        return open(fd, "a", encoding=self.encoding, errors="backslashreplace")


class _ConsoleHandler(logging.StreamHandler):
    """A stream handler that lets a running tqdm bar step aside: the line is printed above the bar
    (``tqdm.write``), not through it."""

    def emit(self, record: logging.LogRecord) -> None:
        tqdm_module = sys.modules.get("tqdm")
        if tqdm_module is None or not getattr(tqdm_module.tqdm, "_instances", None):
            super().emit(record)
            return
        try:
            tqdm_module.tqdm.write(self.format(record), file=self.stream)
            self.flush()
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)


def console_level(quiet: int = 0, verbose: int = 0) -> int:
    """The console level the ``-q``/``-v`` counts ask for (INFO without either)."""
    if quiet:
        return logging.WARNING
    return logging.DEBUG if verbose else logging.INFO


def configure_console(level: int = logging.INFO, stream: Any = None) -> logging.Handler:
    """Send the suite's messages of ``level`` and above to ``stream`` (stderr); replaces the handler an
    earlier call installed, so calling it twice does not print everything twice."""
    global _console
    root = logging.getLogger()
    if _console is not None:
        root.removeHandler(_console)
    handler = _ConsoleHandler(stream if stream is not None else sys.stderr)
    handler.setLevel(level)
    handler.setFormatter(_ConsoleFormatter("%(message)s"))
    root.addHandler(handler)
    _console = handler
    return handler


def log_to_file(folder: str | os.PathLike[str]) -> Path:
    """Append every level to ``<folder>/run.log`` (the run's log beside its results). One log file
    per process: a later call for another folder moves the handler there. Installs a console
    handler for warnings when there is none yet (a notebook kernel), so warnings still show."""
    global _file
    path = Path(folder).resolve() / LOG_NAME  # the folder resolved, never a link at run.log itself
    if _console is None:
        configure_console(logging.WARNING)
    root = logging.getLogger()
    if _file is not None:
        if Path(_file.baseFilename) == path:
            return path
        root.removeHandler(_file)
        _file.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = _RunLogHandler(path, mode="a", encoding="utf-8", delay=False)
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(_TextFormatter(FILE_FORMAT))
    root.addHandler(handler)
    _file = handler
    return path


def log_file() -> Path | None:
    """The run.log this process writes to, if any."""
    return Path(_file.baseFilename) if _file is not None else None


def quiet() -> bool:
    """Whether the user asked for warnings only (``-q``): then no progress bar is drawn, not even a
    download's (a notebook kernel's console also shows only warnings, but keeps the download bar)."""
    return _quiet


def progress_enabled() -> bool:
    """Whether :func:`progress` draws its bar: ``$NEUTRINO_AE_PROGRESS`` (1/0) when set, else when the
    console shows INFO and stderr is a terminal."""
    forced = os.environ.get(PROGRESS_ENV, "").strip()
    if quiet():
        return False  # -q: no progress, whatever the terminal
    if forced in ("0", "1"):
        return forced == "1"
    shows_info = _console is not None and _console.level <= logging.INFO
    return shows_info and hasattr(sys.stderr, "isatty") and sys.stderr.isatty()


def progress(iterable: Iterable[Any] | None = None, *, total: int | float | None = None, desc: str = "",
             unit: str = "it", leave: bool = False, **kwargs: Any) -> Any:
    """A tqdm bar on stderr over ``iterable`` (or updated by hand), drawn when :func:`progress_enabled`;
    otherwise a disabled bar that costs nothing."""
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, leave=leave, file=sys.stderr,
                disable=not progress_enabled(), **kwargs)


def add_verbosity_options(parser: argparse.ArgumentParser, *, sub: bool = False) -> None:
    """``-q/--quiet`` and ``-v/--verbose`` on ``parser``; ``sub``: a subcommand's parser, whose
    defaults must not overwrite what was given before the subcommand (``neutrino-ae -q run ...``)."""
    default: Any = argparse.SUPPRESS if sub else 0
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="count", default=default,
                       help="only warnings and errors on stderr; no progress bars")
    group.add_argument("-v", "--verbose", action="count", default=default,
                       help="debug messages on stderr too (run.log always has every level)")


def configure_from_args(args: argparse.Namespace) -> int:
    """Install the console handler the parsed ``-q``/``-v`` ask for; returns the level."""
    global _quiet
    level = console_level(getattr(args, "quiet", 0), getattr(args, "verbose", 0))
    configure_console(level)
    _quiet = level > logging.INFO
    return level


def reset() -> None:
    """Remove the handlers this module installed (tests; a long-lived process starting over)."""
    global _console, _file, _quiet
    root = logging.getLogger()
    for handler in (_console, _file):
        if handler is not None:
            root.removeHandler(handler)
            handler.close()
    _console = _file = None
    _quiet = False
