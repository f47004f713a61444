"""A section's analysis as the command line computes it, its figures left undrawn.

For tests that read a section's numbers, text lines or results documents and never its figures: the
figures are most of the CPU of an analysis (about a CPU-second each). :func:`analyze_undrawn` is
``driver.analyze_paths`` with the figure jobs handed to :class:`Undrawn` in place of a figure process
(``driver.finish``'s ``figures``), which records them and draws nothing; each figure's file is named
(``<out>/<stem>.png``) but not written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from neutrino_ae.report.section import driver


class Undrawn:
    """Stands in for a figure process: keeps the jobs sent, draws none."""

    def __init__(self) -> None:
        self.jobs: list = []

    def send(self, jobs) -> None:
        self.jobs.extend(jobs)

    def join(self) -> dict[str, Path]:
        return {f"{job.stem}.png": Path(job.out) / f"{job.stem}.png" for job in self.jobs}


def analyze_undrawn(section, paths: Sequence[str | Path], out: str | Path,
                    options: Mapping[str, Any] | None = None):
    source = driver.source_of(paths, options, out)
    return driver.finish(section, source, driver.compute(section, source), out, figures=Undrawn())
