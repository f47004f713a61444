"""The Table 2 command lines: kernel_overhead.py (all rows) and <group>/overhead.py (one group's rows).

The artifact's table comes first, printed and flushed as soon as the numbers exist (:mod:`.fast`: numpy
only); the heatmap is drawn by a process that imports matplotlib meanwhile
(:mod:`neutrino_ae.report.figure_process`), and the tables, HTML and results follow (:mod:`.pipeline`),
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


def build_parser(default_root: Path, prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=f"{PAPER_REF}: kernel slowdown and extra registers "
                                     "from Neutrino benchmark-mode traces.")
    parser.add_argument("root", nargs="?", type=Path, default=default_root,
                        help=f"kernel_overhead folder or one group folder (default: {default_root})")
    add_output_args(parser, "kernel_overhead")
    return parser

def main(argv: Sequence[str] | None = None, groups: Sequence[str] | None = None,
         default_root: Path | None = None, prog: str | None = None) -> int:
    args = build_parser(default_root or Path(__file__).resolve().parent, prog).parse_args(argv)
    # matplotlib is imported in the figure process while this one reads the traces and prints the table.
    with FigureProcess.start(warm=[FIGURES]) as figures:
        m = measure(args.root, groups)
        lines = "\n".join(m.lines())
        if not args.json:
            print(lines + "\n", end="", flush=True)  # one write: never split by the figure process
        figures.send([figure_job(m, args.out)])
        from . import pipeline  # pandas: after the table is out

        result = pipeline.analyze(args.root, args.out, groups=groups, measured=m, figures=figures)
    if args.json:
        emit(result, True)
    else:
        print("\n".join(result.text.split("\n")[len(lines.split("\n")):]))
    sys.stdout.flush()
    return 0

def group_main(group: str, argv: Sequence[str] | None = None) -> int:
    """CLI of the per-group wrappers (``kernel_overhead/<group>/overhead.py``): that group's rows only."""
    here = Path(__file__).resolve().parent / group
    return main(argv, groups=[group], default_root=here, prog=f"{group}/overhead.py")


def cutlass_op_main(argv: Sequence[str] | None = None) -> int:
    return group_main("cutlass_op", argv)


def triton_op_main(argv: Sequence[str] | None = None) -> int:
    return group_main("triton_op", argv)


def pytorch_op_main(argv: Sequence[str] | None = None) -> int:
    return group_main("pytorch_op", argv)
