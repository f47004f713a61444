"""The Fig. 11 command line: python max_mem/max_mem.py [<root>] [--out DIR] [--json].

The artifact's table comes first, printed and flushed as soon as the numbers exist (:mod:`.fast`: numpy
only); the figure is drawn by a process that imports matplotlib meanwhile
(:mod:`neutrino_ae.report.figure_process`), and the table files and results follow (:mod:`.pipeline`),
pandas imported only then. With ``--json`` stdout is the JSON document alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from neutrino_ae.report.figure_process import FigureProcess
from neutrino_ae.report.script import add_output_args, emit

from .analysis import PAPER_REF
from .fast import measure
from .figure_inputs import FIGURES, figure_job


def build_parser() -> argparse.ArgumentParser:
    default_root = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=f"{PAPER_REF}: maximum probe memory vs. workload memory.")
    parser.add_argument("root", nargs="?", type=Path, default=default_root,
                        help=f"max_mem folder: <model>/<probe>/<sub>/ (default: {default_root})")
    add_output_args(parser, "max_mem")
    return parser

def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # matplotlib is imported in the figure process while this one reads the folders and prints the table.
    with FigureProcess.start(warm=[FIGURES]) as figures:
        m = measure(args.root)
        lines = m.lines()
        if not args.json:
            print("\n".join(lines) + "\n", end="", flush=True)  # one write: never split by the figure process
        figures.send([figure_job(m, args.out)])
        from . import pipeline  # pandas: after the table is out

        result = pipeline.analyze(args.root, args.out, measured=m, figures=figures)
    if args.json:
        emit(result, True)
    else:
        print("\n".join(result.text.split("\n")[len("\n".join(lines).split("\n")):]))
    sys.stdout.flush()
    return 0
