"""The block_sched command line (``python block_sched/block_sched.py <trace.bin | tracedir> ...``).

The artifact's line(s) come first, printed and flushed as soon as the numbers exist (:mod:`.fast`:
numpy only); the figures, tables and results files follow (:mod:`.pipeline`), the tables as numpy columns
(no pandas), the figures drawn by a process that imports matplotlib meanwhile
(:mod:`neutrino_ae.report.figures.process`): the timeline is sent with the line, the per-SM figure once the
slot-reuse estimator exists.
With ``--json`` stdout is the JSON document alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from neutrino_ae.report.command.script import add_output_args, emit
from neutrino_ae.report.figures.process import FigureProcess

from . import fast
from .estimates import estimate
from .figure_inputs import early_figure_jobs, late_figure_jobs

DESCRIPTION = "Block scheduling cost (paper Sec. 4.5) from ``block_sched`` traces."


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("traces", nargs="+", type=Path, help="block_sched result .bin files or trace directories")
    parser.add_argument("--section", type=int, default=0, help="section index of the block_sched probe (default 0)")
    add_output_args(parser, "results/block_sched")
    args = parser.parse_args(argv)
    # matplotlib is imported in the figure process while this one reads the traces and prints the line.
    with FigureProcess.start(warm=[f"{__package__}.figures"]) as figures:
        first = fast.first_lines(args.traces, args.section)
        if not args.json:
            print("\n".join(f.line for f in first), flush=True)
        est = estimate(args.traces, args.section, first=first)
        figures.send(early_figure_jobs(est, args.out))  # the timeline: drawn while the rest is computed
        figures.send(late_figure_jobs(est, args.out))  # drawn while the results are written
        from . import pipeline

        result = pipeline.block_sched(args.traces, args.out, args.section, estimates=est, figures=figures)
    if args.json:
        emit(result, True)
    else:
        # The summary without the lines printed above (they head it).
        rest = result.text.split("\n")[len(first):]
        if rest:
            print("\n".join(rest))
    sys.stdout.flush()
    return 0
