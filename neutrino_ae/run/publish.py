"""What a headless run publishes, and the previous run's results kept until it does.

The top of an output folder holds one run's results: ``summary.json``, ``summary.md``,
``verdict.json`` and ``<name>.executed.ipynb``. The kernel writes the first three in its last cell and
``neutrino-ae run`` writes the notebook after it, so a run that is stopped or runs out of disk on
the way could leave a mix of two runs (or none). :class:`Previous` keeps the last run's set (hard
links in ``.neutrino-ae.previous/``, no extra space); a run that finishes drops it. A run that fails
(a cell raised, a set-up error, a section failed, the kernel died, the disk filled, a signal) never
replaces it (issue 37): the set is put back byte-identical and what the failed run made of it goes
beside it under failed names (:data:`FAILED_NAMES`: ``<name>.failed.ipynb``, ``summary.failed.json``,
``summary.failed.md``, ``verdict.failed.json``), which the next run that finishes removes.
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
from neutrino_ae.escape import md_code

PREVIOUS_DIR = ".neutrino-ae.previous"
TOP_LEVEL = ("summary.json", "summary.md", "verdict.json")
#: Where a failed run's summary and verdict go (its notebook: :func:`failed_name`).
FAILED_NAMES = {"summary.json": "summary.failed.json", "summary.md": "summary.failed.md",
                "verdict.json": "verdict.failed.json"}
#: The key in a failed run's notebook metadata that says why it failed (``make report`` refuses it).
FAILED_KEY = "neutrino_ae_failed"


def failed_name(notebook_name: str) -> str:
    """``static.executed.ipynb`` -> ``static.failed.ipynb``: where a failed run's notebook goes."""
    return notebook_name.removesuffix(".ipynb").removesuffix(".executed") + ".failed.ipynb"


class Previous:
    """The previous run's top-level results of ``out_dir`` (call only while holding its lock)."""

    def __init__(self, out_dir: Path, notebook_name: str) -> None:
        self.out_dir = out_dir
        self.keep = out_dir / PREVIOUS_DIR
        self.names = (*TOP_LEVEL, notebook_name)
        self.failed = {**FAILED_NAMES, notebook_name: failed_name(notebook_name)}

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
        """The run finished: its set is the folder's; a failed run's files from before are stale."""
        shutil.rmtree(self.keep, ignore_errors=True)
        for name in self.failed.values():
            (self.out_dir / name).unlink(missing_ok=True)

    def set_failed_aside(self) -> list[Path]:
        """The run failed: move what it published of the set (not what it kept of the previous run's)
        to the failed names, replacing an earlier failed run's files; returns the files moved. Then
        :meth:`restore` puts the previous set back."""
        moved = []
        for name, failed in self.failed.items():
            src, target = self.out_dir / name, self.out_dir / failed
            if name == self.names[-1]:
                continue  # the failed notebook is published under its failed name (run/papermill.py)
            if src.is_file() and not _same(src, self.keep / name):
                os.replace(src, target)
                moved.append(target)
            else:
                target.unlink(missing_ok=True)
        return moved


def _same(a: Path, b: Path) -> bool:
    """``a`` is the file kept as ``b`` (a hard link, or a copy with the same bytes)."""
    try:
        return os.path.samefile(a, b) or a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def publish_notebook(running: Path, final: Path, verdict_cell: object | None = None,
                     failed: str | None = None) -> Path:
    """Write the notebook saved at ``running`` to ``final`` atomically (with ``verdict_cell`` right
    after the title cell, id ``intro``, when given) and remove ``running``. ``failed``: the run failed
    with this error line: a banner cell saying so goes first and the notebook's metadata records it
    (:data:`FAILED_KEY`), so no report shows it as a result. A notebook that does not
    read back whole (the disk filled while papermill saved it) is not published:
    :class:`NeutrinoAEError`, or ``DiskFull`` when there is no room to write it."""
    import nbformat

    try:
        nb = nbformat.read(running, as_version=4)
    except (OSError, ValueError) as exc:
        if isinstance(exc, OSError):
            raise
        raise NeutrinoAEError(f"{running}: the executed notebook is incomplete ({exc}); not published") from None
    pm = nb.metadata.get("papermill")
    if isinstance(pm, dict):  # papermill's record of its own paths: the notebook's name, not this machine's folders
        for key in ("input_path", "output_path"):
            if isinstance(pm.get(key), str):
                pm[key] = Path(pm[key]).name if key == "input_path" else final.name
    if verdict_cell is not None:
        at = next((i + 1 for i, c in enumerate(nb.cells) if c.get("id") == "intro"), 0)
        nb.cells.insert(at, verdict_cell)
    if failed is not None:
        nb.metadata[FAILED_KEY] = failed
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(
            f"# RUN FAILED\n\n**This run failed and is not a result:** {md_code(failed)}\n\n"
            "The last good run's notebook, summary and verdict, if any, are unchanged beside this file.\n",
            id="run-failed"))
    write_text(final, nbformat.writes(nb))
    running.unlink(missing_ok=True)
    return final
