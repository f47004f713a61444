"""Stopping a headless run cleanly on SIGTERM or Ctrl-C: every process it started is ended and
waited for, then its leftovers are cleaned up, and only then is the output folder's lock released.

``neutrino-ae run`` starts a notebook kernel (in a session of its own, so a terminal's Ctrl-C does
not reach it) and the kernel starts section workers (run/ahead.py). The signal reaches only the
``neutrino-ae`` process; :func:`install_run_handlers` makes it

1. send SIGTERM to every descendant (and to the kernel's process group), wait up to
   :data:`GRACE_S`, then SIGKILL what is left and wait again: the process is a *child subreaper*
   (Linux), so workers orphaned by the kernel's death are still its descendants to wait for;
2. run the cleanup the run registered (:func:`on_stop`): remove the ``*.running*`` notebook and
   temp files, put the previous run's results back, release the lock;
3. print one line and exit 130 (SIGINT) or 143 (SIGTERM), no traceback.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from neutrino_ae.proctree import descendants

#: Seconds the processes of a stopped run get to end on SIGTERM before they are killed.
GRACE_S = 5.0
_PR_SET_CHILD_SUBREAPER = 36
_cleanups: list[Callable[[], str | None]] = []
#: Children this process had before the run started (a library caller's own): never stopped.
_before: set[int] = set()


def become_subreaper() -> bool:
    """Make orphaned descendants children of this process (Linux ``PR_SET_CHILD_SUBREAPER``), so
    they can be waited for; False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _reap(pids: list[int]) -> None:
    """Collect those of ``pids`` that are children of this process and have ended (orphans come
    to a subreaper); a library caller's own children are left to it."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _signal_all(pids: list[int], sig: int) -> None:
    me = os.getpgid(0)
    for pid in pids:
        with contextlib.suppress(OSError):
            pgid = os.getpgid(pid)
            if pgid == pid and pgid != me:
                os.killpg(pgid, sig)  # the kernel leads its own group; its workers are in it
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def mark_run_start() -> None:
    """Note the children this process already has: :func:`stop_descendants` leaves them alone."""
    _before.clear()
    _before.update(descendants())


def stop_descendants(grace: float = GRACE_S, settle: float = 0.0) -> list[int]:
    """End every process the run started (descendants of this process but those noted by
    :func:`mark_run_start`): after ``settle`` s for them to end on their own, SIGTERM, up to
    ``grace`` s, then SIGKILL; wait until none is left (or 5 s more). Returns the pids that were
    running when asked to stop."""
    first = descendants(exclude=_before)
    end_settle = time.monotonic() + settle
    while first and time.monotonic() < end_settle:
        time.sleep(0.02)
        first = descendants(exclude=_before)
    if not first:
        return []
    sig, deadline = signal.SIGTERM, time.monotonic() + grace
    killed_at: float | None = None
    while True:
        left = descendants(exclude=_before)
        _signal_all(left, sig)  # again each round: a process started meanwhile is stopped too
        _reap(left)
        if not descendants(exclude=_before):
            return first
        now = time.monotonic()
        if killed_at is None and now >= deadline:
            sig, killed_at = signal.SIGKILL, now
        elif killed_at is not None and now - killed_at > 5.0:
            return first  # unkillable (uninterruptible I/O): nothing more can be done
        time.sleep(0.02)


def on_stop(cleanup: Callable[[], str | None]) -> Callable[[], None]:
    """Register ``cleanup`` to run after the run's processes ended when the run is stopped by a
    signal; it may return a note for the one line printed. Returns a function that unregisters it."""
    _cleanups.append(cleanup)

    def forget() -> None:
        with contextlib.suppress(ValueError):
            _cleanups.remove(cleanup)
    return forget


def _write_line(text: str) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(OSError):
        os.write(2, (text + "\n").encode(errors="replace"))


def _hard_stop(signum: int, _frame: object) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)  # a second Ctrl-C does not interrupt the clean-up
    stop_descendants(grace=GRACE_S)
    notes = []
    for cleanup in reversed(list(_cleanups)):
        try:
            note = cleanup()
        except Exception as exc:  # noqa: BLE001 - the exit must still happen, with one line
            note = f"clean-up failed: {exc}"
        if note:
            notes.append(note)
    what = "interrupted" if signum == signal.SIGINT else "terminated"
    _write_line(f"error: {what}; " + ("; ".join(notes) if notes else "nothing published"))
    os._exit(128 + signum)


class Terminated(BaseException):
    """Raised in the main thread on SIGTERM by commands that unwind normally (their clean-up is
    in ``finally`` blocks): ``main`` exits 143 with one line."""


def _raise_terminated(_signum: int, _frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated()


def install_run_handlers() -> Callable[[], None]:
    """SIGINT and SIGTERM stop the whole run (see the module doc). For ``neutrino-ae run``.
    Returns a function that puts the previous handlers back."""
    subreaper = become_subreaper()
    restore = _install({signal.SIGINT: _hard_stop, signal.SIGTERM: _hard_stop})

    def undo() -> None:
        restore()
        if subreaper:
            with contextlib.suppress(OSError, AttributeError):
                import ctypes

                ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
    return undo


def install_unwinding_handlers() -> Callable[[], None]:
    """SIGTERM raises :class:`Terminated` (SIGINT keeps raising KeyboardInterrupt): for the
    commands whose own ``finally`` blocks clean up (sample, fetch, compare)."""
    return _install({signal.SIGTERM: _raise_terminated})


def _install(handlers: dict[int, Callable[[int, object], None]]) -> Callable[[], None]:
    """Install ``handlers`` (only the main thread can; elsewhere nothing changes)."""
    try:
        old = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}
    except ValueError:  # not the main thread (a library caller's worker thread)
        return lambda: None
    with contextlib.suppress(AttributeError, OSError, ValueError):
        # A parent that blocked them (a thread of a test runner, a job system) must not keep them from us.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, set(handlers))

    def restore() -> None:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return restore


def cleanup_temp_files(folder: Path) -> int:
    """Remove the temp files of atomic writes (``.<stem>.tmp-*``) under ``folder``: call only while
    holding its lock with every writer stopped. Returns how many were removed."""
    removed = 0
    for path in folder.rglob(".*.tmp-*"):
        with contextlib.suppress(OSError):
            if path.is_file() and not path.is_symlink():
                path.unlink()
                removed += 1
    return removed
