"""What a headless run publishes, and the previous run's results kept until it does.

The top of an output folder holds one run's results: ``summary.json``, ``summary.md``,
``verdict.json`` and ``<name>.executed.ipynb``. The kernel writes the first three in its last cell and
``neutrino-ae run`` writes the notebook after it, so a run that is stopped or runs out of disk on
the way could leave a mix of two runs (or none). :class:`Previous` keeps the last run's set (hard
links in ``.neutrino-ae.previous/``, no extra space) and puts it back when the run does not finish;
a run that finishes drops it, and so does one whose cell failed: its notebook says what failed, and
its kernel set the previous summary and verdict aside when it started (run/notebook_setup.py), so
nothing of an earlier run looks like this one's.
:func:`publish_notebook` writes the executed notebook atomically (temp file, fsync, rename) and
never publishes a truncated one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from neutrino_ae.atomic import write_text
from neutrino_ae.errors import NeutrinoAEError

PREVIOUS_DIR = ".neutrino-ae.previous"
TOP_LEVEL = ("summary.json", "summary.md", "verdict.json")


class Previous:
    """The previous run's top-level results of ``out_dir`` (call only while holding its lock)."""

    def __init__(self, out_dir: Path, notebook_name: str) -> None:
        self.out_dir = out_dir
        self.keep = out_dir / PREVIOUS_DIR
        self.names = (*TOP_LEVEL, notebook_name)

    def save(self) -> None:
        """Keep the current set; a set kept by a run that was killed (SIGKILL) is restored first:
        it is the last complete one."""
        if self.keep.is_dir():
            self.restore()
        self.keep.mkdir(exist_ok=True)
        for name in self.names:
            src = self.out_dir / name
            if not src.is_file():
                continue
            try:
                os.link(src, self.keep / name)
            except OSError:
                with contextlib.suppress(OSError):
                    shutil.copy2(src, self.keep / name)  # no hard links here; a full disk keeps nothing

    def restore(self) -> None:
        """Put the kept set back, and remove what this run published in its place."""
        if not self.keep.is_dir():
            return
        kept = {p.name for p in self.keep.iterdir()}
        for name in self.names:
            if name in kept:
                os.replace(self.keep / name, self.out_dir / name)
            else:
                (self.out_dir / name).unlink(missing_ok=True)
        shutil.rmtree(self.keep, ignore_errors=True)

    def drop(self) -> None:
        shutil.rmtree(self.keep, ignore_errors=True)


def publish_notebook(running: Path, final: Path, verdict_cell: object | None = None) -> Path:
    """Write the notebook saved at ``running`` to ``final`` atomically (with ``verdict_cell`` right
    after the title cell, id ``intro``, when given) and remove ``running``. A notebook that does not
    read back whole (the disk filled while papermill saved it) is not published:
    :class:`NeutrinoAEError`, or ``DiskFull`` when there is no room to write it."""
    import nbformat

    try:
        nb = nbformat.read(running, as_version=4)
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError):
            raise
        raise NeutrinoAEError(f"{running}: the executed notebook is incomplete ({exc}); not published") from None
    if verdict_cell is not None:
        at = next((i + 1 for i, c in enumerate(nb.cells) if c.get("id") == "intro"), 0)
        nb.cells.insert(at, verdict_cell)
    write_text(final, nbformat.writes(nb))
    running.unlink(missing_ok=True)
    return final
