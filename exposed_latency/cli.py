"""The Fig. 12 command line: python exposed_latency/exposed_latency.py [<csv or folder> ...] [--out DIR] [--json].

The artifact's table comes first, printed and flushed as soon as the numbers exist (:mod:`.fast`: numpy
only); the figures are drawn by a process that imports matplotlib meanwhile
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
from .figure_inputs import FIGURES, figure_jobs


def build_parser() -> argparse.ArgumentParser:
    default = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=f"{PAPER_REF}: exposed latency of Nsight Compute vs. Neutrino.")
    parser.add_argument("inputs", nargs="*", type=Path, default=[default],
                        help=f"folder with {{attn,gmm,conv,gemm}}.csv, or CSV files (default: {default})")
    add_output_args(parser, "exposed_latency")
    return parser

def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # matplotlib is imported in the figure process while this one reads the CSVs and prints the table.
    with FigureProcess.start(warm=[FIGURES]) as figures:
        m = measure(args.inputs)
        lines = "\n".join(m.lines())
        if not args.json:
            print(lines + "\n", end="", flush=True)  # one write: never split by the figure process
        figures.send(figure_jobs(m, args.out))
        from . import pipeline  # pandas: after the table is out

        result = pipeline.analyze(args.inputs, args.out, measured=m, figures=figures)
    if args.json:
        emit(result, True)
    else:
        print("\n".join(result.text.split("\n")[len(lines.split("\n")):]))
    sys.stdout.flush()
    return 0
