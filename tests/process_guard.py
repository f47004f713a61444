"""``make check`` (``pytest --in-process``) runs only the tests that start no process, so that no test can
slip into it by accident: every way Python starts one (subprocess, multiprocessing, os.fork, os.posix_spawn,
os.system) is replaced by a call that records the attempt and raises, and the test that made it fails with
:data:`MESSAGE` even where its code caught the error (tests/conftest.py)."""

from __future__ import annotations

import _posixsubprocess
import os
import platform
import subprocess
from collections.abc import Callable
from typing import Any

MESSAGE = ("this test starts a process ({}), which `make check` (pytest --in-process) does not allow: mark it "
           "`@pytest.mark.process` (or list it in tests/process_tests.py), and `make test` runs it")


class ProcessStarted(RuntimeError):
    """A test under ``--in-process`` tried to start a process."""


#: The attempts since the last :func:`take_attempts` (what started, in words).
_attempts: list[str] = []


def _refuse(what: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        _attempts.append(what)
        raise ProcessStarted(MESSAGE.format(what))

    return refuse


def install() -> None:
    """Refuse every process start in this process from now on (a pytest process runs one mode)."""
    # What the first use in a process starts once, whoever triggers it: `uname -p` (pytest-xdist's worker asks
    # for the processor), and `fc-list` where matplotlib has no font cache yet (a fresh machine, a read-only
    # home): done here, before the refusal, so that no test fails for being the first.
    platform.processor()
    import matplotlib.font_manager  # noqa: F401
    subprocess._fork_exec = _refuse("subprocess")  # type: ignore[attr-defined]
    _posixsubprocess.fork_exec = _refuse("multiprocessing")
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            setattr(os, name, _refuse(f"os.{name}"))


def take_attempts() -> list[str]:
    """The attempts recorded since the last call (and forget them)."""
    taken = list(_attempts)
    _attempts.clear()
    return taken
