"""What the Fig. 11 figure shows, as JSON parameters (numpy only, no matplotlib): the command line sends it to
a figure process started before the folders were read (:mod:`neutrino_ae.report.figure_process`); the
notebook path draws it in its own process. Either way the figure is made from exactly what is listed here.
"""

from __future__ import annotations

from pathlib import Path

from neutrino_ae.report.figure_process import FigureJob

from .fast import SECTION, Measured

FIGURES = f"{__package__}.figures"  # the folder is imported as its package by path


def figure_job(m: Measured, out: Path) -> FigureJob:
    """Each model x probe's peaks, in the table's order."""
    return FigureJob(SECTION, f"{FIGURES}:figure", Path(out), {}, {
        "synthetic": m.bundle.synthetic,
        "entries": [{"model": e.model, "probe": e.probe, "probe_mem_max": e.probe_mem_max,
                     "workload_max": e.workload_max} for e in m.entries],
    })
