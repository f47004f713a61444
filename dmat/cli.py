"""The dmat command line: ``python dmat/dmat.py <trace.bin | file.dmat | tracedir> [--out DIR] [--json]``.

The command itself imports numpy and pandas, never matplotlib: a figure process forked before the trace is
read imports it meanwhile and draws the figure (:mod:`neutrino_ae.report.figures.process`)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from neutrino_ae.report.command.script import add_output_args, emit
from neutrino_ae.report.figures.process import FigureProcess

from . import pipeline
from .analysis import DEFAULT_XBINS, DEFAULT_YBINS


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Draw a DMAT plot (Fig. 1 / Fig. 10) from a dmat trace or .dmat")
    parser.add_argument("input", type=Path, help="dmat result .bin, .dmat file, or trace directory")
    parser.add_argument("--name", help="figure name (default: from the path, e.g. fig1)")
    parser.add_argument("--xbins", type=int, default=DEFAULT_XBINS, help="clock bins (default 500)")
    parser.add_argument("--ybins", type=int, default=DEFAULT_YBINS, help="max page rows (default 1024)")
    add_output_args(parser, "results/dmat")
    args = parser.parse_args(argv)
    if args.xbins < 1 or args.ybins < 1:
        parser.error("--xbins and --ybins must be positive")
    # matplotlib is imported by the figure process while this one reads the trace; the figure is drawn
    # there while this one writes the results files.
    with FigureProcess.start(warm=[f"{__package__}.figures"]) as figures:
        result = pipeline.dmat_figure(args.input, args.out, args.name, args.xbins, args.ybins, figures=figures)
    emit(result, args.json)
    return 0
