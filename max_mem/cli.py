"""The Fig. 11 command line: python max_mem/max_mem.py [<root>] [--out DIR] [--json]."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from neutrino_ae.report.script import add_output_args, emit

from . import pipeline
from .analysis import PAPER_REF


def build_parser() -> argparse.ArgumentParser:
    default_root = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=f"{PAPER_REF}: maximum probe memory vs. workload memory.")
    parser.add_argument("root", nargs="?", type=Path, default=default_root,
                        help=f"max_mem folder: <model>/<probe>/<sub>/ (default: {default_root})")
    add_output_args(parser, "max_mem")
    return parser

def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    emit(pipeline.analyze(args.root, args.out), args.json)
    return 0
