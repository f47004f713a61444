"""The Fig. 12 command line: python exposed_latency/exposed_latency.py [<csv or folder> ...] [--out DIR] [--json]."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from neutrino_ae.report.script import add_output_args, emit

from . import pipeline
from .analysis import PAPER_REF


def build_parser() -> argparse.ArgumentParser:
    default = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=f"{PAPER_REF}: exposed latency of Nsight Compute vs. Neutrino.")
    parser.add_argument("inputs", nargs="*", type=Path, default=[default],
                        help=f"folder with {{attn,gmm,conv,gemm}}.csv, or CSV files (default: {default})")
    add_output_args(parser, "exposed_latency")
    return parser

def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    emit(pipeline.analyze(args.inputs, args.out), args.json)
    return 0
