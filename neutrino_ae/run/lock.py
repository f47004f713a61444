"""One run per output folder: an exclusive lock held while a notebook kernel uses the folder.

Two runs writing one ``output_dir`` would mix their files (an executed notebook from one bundle,
a summary from the other). The lock is an ``flock`` on ``<output_dir>/.neutrino-ae.lock``, held by
the kernel process until it exits, so a crashed run never leaves a stale lock behind. Re-running
the set-up cell in the same kernel keeps the lock it already holds.
"""

from __future__ import annotations

import os
from pathlib import Path

from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.pidlock import holder_line, try_lock

LOCK_NAME = ".neutrino-ae.lock"
#: Set by a process that holds the lock for the kernel it starts (``neutrino-ae run``): "<pid>:<dir>".
HELD_BY_PARENT_ENV = "NEUTRINO_AE_OUTPUT_LOCK"
_held: dict[Path, int] = {}


class OutputInUse(NeutrinoAEError):
    """Another live process holds the output folder."""


def hold_output_lock(output_dir: str | os.PathLike[str]) -> Path:
    """Lock ``output_dir`` for this process (idempotent); raise OutputInUse if another holds it."""
    out = Path(output_dir).resolve()
    if out in _held or _held_by_parent(out):
        return out / LOCK_NAME
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK_NAME
    fd = try_lock(path)
    if isinstance(fd, str):
        raise OutputInUse(f"{out}: in use by another run ({fd}); wait for it or choose another output_dir")
    _held[out] = fd
    return path


def lend_output_lock(out: Path) -> None:
    """Tell the processes this one starts (the notebook kernel) that it holds ``out``'s lock for them."""
    os.environ[HELD_BY_PARENT_ENV] = f"{os.getpid()}:{out}"


def parent_hold() -> tuple[str, Path] | None:
    """``HELD_BY_PARENT_ENV`` ("<pid>:<dir>") as (pid text, folder), unchecked; None when unset or
    without a ":"."""
    pid, sep, where = os.environ.get(HELD_BY_PARENT_ENV, "").partition(":")
    return (pid, Path(where)) if sep else None


def _held_by_parent(out: Path) -> bool:
    """True when the process that started this one locked ``out`` for it (papermill's kernel is a
    child of ``neutrino-ae run``) and still holds it."""
    held = parent_hold()
    if held is None:
        return False
    pid, where = held
    if not pid.isdigit() or where != out or int(pid) != os.getppid():
        return False
    try:
        return (out / LOCK_NAME).read_text().strip() == holder_line(pid)
    except OSError:
        return False


def release_output_lock(output_dir: str | os.PathLike[str]) -> None:
    fd = _held.pop(Path(output_dir).resolve(), None)
    if fd is not None:
        os.close(fd)
