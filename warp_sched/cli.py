"""The warp_sched command lines: warp_sched.py (Fig. 13a-d), fig13a.py / fig13b.py (timelines), fig13cd.py (tail).

fig13a/b/cd print the artifact's line(s) first, flushed as soon as the numbers exist (:mod:`.fast`: numpy
only); the figures are drawn by a process that imports matplotlib meanwhile
(:mod:`neutrino_ae.report.figure_process`), and the tables and results follow (:mod:`.timelines`,
:mod:`.tailing`), pandas imported only then. With ``--json`` stdout is the JSON document alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from neutrino_ae.report.figure_process import FigureProcess
from neutrino_ae.report.script import add_output_args, emit

from .analysis import DEFAULT_TAIL_THRESHOLD
from .fast import tail_numbers, timeline_numbers
from .figure_inputs import FIGURES, tail_jobs, timeline_job

if TYPE_CHECKING:
    from neutrino_ae.report.results import SectionResult  # pandas: not on the way to the line


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fig. 13a-d from a bundle's warp_sched/ folder")
    parser.add_argument("root", type=Path, help="bundle root or its warp_sched/ folder")
    parser.add_argument("--tail-threshold", type=float, default=DEFAULT_TAIL_THRESHOLD,
                        help="tail = fewer than this share of SMs busy until the end (default 0.9)")
    add_output_args(parser, "results/warp_sched")
    args = parser.parse_args(argv)
    from . import pipeline

    emit(pipeline.warp_sched(args.root, args.out, args.tail_threshold), args.json)
    return 0

def timeline_main(stem: str, argv: Sequence[str] | None = None) -> int:
    """CLI of ``fig13a.py`` / ``fig13b.py``."""
    parser = argparse.ArgumentParser(description=f"Fig. {stem[3:]}: per-SM warp timeline of a warp_sched trace")
    parser.add_argument("trace", type=Path, help="result/*.bin, trace directory, or .npz/.csv table")
    parser.add_argument("--sm", type=int, action="append", help="SM id to draw (repeatable; default: picked)")
    add_output_args(parser, "results/warp_sched")
    args = parser.parse_args(argv)
    # matplotlib is imported in the figure process while this one reads the trace and prints the line.
    with FigureProcess.start(warm=[FIGURES]) as figures:
        n = timeline_numbers(args.trace, stem, sms=args.sm)
        if not args.json:
            _print_lines([n.line])
        figures.send([timeline_job(n, args.out)])
        from .timelines import timeline_result  # pandas: after the line is out

        result = timeline_result(n, args.out, figures)
    _emit_rest(result, args.json, 1)
    return 0

def tail_main(argv: Sequence[str] | None = None) -> int:
    """CLI of ``fig13cd.py``."""
    parser = argparse.ArgumentParser(description="Fig. 13c/13d: active warps, busy SMs and the tail")
    parser.add_argument("trace", type=Path, help="result/*.bin, trace directory, or .npz/.csv table (no .pkl)")
    parser.add_argument("--clock-align", choices=("sm", "global"), default="sm",
                        help="align each SM's clock on its first warp (default; SM clocks are not synchronised) "
                             "or keep raw differences")
    parser.add_argument("--tail-threshold", type=float, default=DEFAULT_TAIL_THRESHOLD,
                        help="tail = fewer than this share of SMs busy until the end (default 0.9)")
    add_output_args(parser, "results/warp_sched")
    args = parser.parse_args(argv)
    with FigureProcess.start(warm=[FIGURES]) as figures:
        n = tail_numbers(args.trace, args.tail_threshold, align=args.clock_align)
        if not args.json:
            _print_lines(n.lines)
        figures.send(tail_jobs(n, args.out))
        from .tailing import tail_result  # pandas: after the lines are out

        result = tail_result(n, args.out, figures)
    _emit_rest(result, args.json, len(n.lines))
    return 0


def _print_lines(lines: Sequence[str]) -> None:
    """The artifact's lines, flushed in one write (never split by the figure process's output)."""
    print("\n".join(lines) + "\n", end="", flush=True)


def _emit_rest(result: SectionResult, as_json: bool, printed: int) -> None:
    """The JSON document, or the summary without the ``printed`` lines that head it (printed already)."""
    if as_json:
        emit(result, True)
    else:
        rest = result.text.split("\n")[printed:]
        if rest:
            print("\n".join(rest))
    sys.stdout.flush()


def fig13a_main(argv: Sequence[str] | None = None) -> int:
    return timeline_main("fig13a", argv)


def fig13b_main(argv: Sequence[str] | None = None) -> int:
    return timeline_main("fig13b", argv)
