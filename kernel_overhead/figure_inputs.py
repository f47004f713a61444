"""What the Table 2 heatmap shows, as JSON parameters (no matplotlib): the command line sends it to a figure
process started before the traces were read (:mod:`neutrino_ae.report.figure_process`); the notebook path
draws it in its own process. Either way the figure is made from exactly what is listed here.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from neutrino_ae.report.figure_process import FigureJob

from .analysis import PAPER_REF
from .fast import Measured

FIGURES = f"{__package__}.figures"  # the folder is imported as its package by path
TITLE = f"{PAPER_REF}: kernel slowdown and extra registers"


def figure_job(m: Measured, out: Path) -> FigureJob:
    """Every cell as the results JSON records it."""
    return FigureJob(m.stem, f"{FIGURES}:heatmap_figure", Path(out), {},
                     {"synthetic": m.bundle.synthetic, "title": TITLE, "cells": [asdict(c) for c in m.cells]})
