"""The block_sched command line (``python block_sched/block_sched.py <trace.bin | tracedir> ...``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from neutrino_ae.report.script import add_output_args, emit

from . import pipeline


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=pipeline.__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", type=Path, help="block_sched result .bin files or trace directories")
    parser.add_argument("--section", type=int, default=0, help="section index of the block_sched probe (default 0)")
    add_output_args(parser, "results/block_sched")
    args = parser.parse_args(argv)
    emit(pipeline.block_sched(args.traces, args.out, args.section), args.json)
    return 0
