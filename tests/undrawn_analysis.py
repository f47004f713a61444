"""A section's analysis as the driver computes it, its figures left undrawn.

For tests that read a section's numbers, text lines or results documents and never its figures: the
figures are most of the CPU of an analysis (about a CPU-second each). :func:`leave_figures_undrawn`
replaces the driver's ``draw`` (what ``driver.finish`` calls for each figure drawn in this process)
and the figure process's (what ``driver.main``'s figure process calls, here in-process: none is forked)
with one that draws nothing and names the figure's PNG (``<out>/<stem>.png``, not written), so
``driver.analyze`` / ``analyze_paths`` / ``main`` run as they are otherwise. Use it through ``monkeypatch`` (or
``monkeypatch.context()`` for part of a test) so it is undone after.

:func:`leave_figures_blank` is the same with an empty file where each PNG goes: the results cache
(``neutrino_ae.run.runner``) stamps every output file and reuses a result only while they are all there,
so the tests of the cache, and of a run's summary or verdict made in-process, use that one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from neutrino_ae.report.figures import process
from neutrino_ae.report.section import driver


def undrawn(job) -> dict[str, Path]:
    return {f"{job.stem}.png": Path(job.out) / f"{job.stem}.png"}


def leave_figures_undrawn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "draw", undrawn)
    # the command line's figure process (driver.main) draws with the process module's own ``draw``, and
    # in-process (no fork) it calls that ``draw`` as each figure is sent: no process started only to
    # import matplotlib for figures that are not drawn
    monkeypatch.setattr(process, "draw", undrawn)
    monkeypatch.setenv("NEUTRINO_AE_NO_FORK", "1")


def blank(job) -> dict[str, Path]:
    files = undrawn(job)
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    return files


def leave_figures_blank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "draw", blank)
    monkeypatch.setattr(process, "draw", blank)  # the figure process's (forked: it inherits this)
