"""The warp_sched command lines: warp_sched.py (Fig. 13a-d), fig13a.py / fig13b.py (timelines), fig13cd.py (tail)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from neutrino_ae.report.script import add_output_args, emit

from . import pipeline, tailing, timelines
from .analysis import DEFAULT_TAIL_THRESHOLD


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fig. 13a-d from a bundle's warp_sched/ folder")
    parser.add_argument("root", type=Path, help="bundle root or its warp_sched/ folder")
    parser.add_argument("--tail-threshold", type=float, default=DEFAULT_TAIL_THRESHOLD,
                        help="tail = fewer than this share of SMs busy until the end (default 0.9)")
    add_output_args(parser, "results/warp_sched")
    args = parser.parse_args(argv)
    emit(pipeline.warp_sched(args.root, args.out, args.tail_threshold), args.json)
    return 0

def timeline_main(stem: str, argv: Sequence[str] | None = None) -> int:
    """CLI of ``fig13a.py`` / ``fig13b.py``."""
    parser = argparse.ArgumentParser(description=f"Fig. {stem[3:]}: per-SM warp timeline of a warp_sched trace")
    parser.add_argument("trace", type=Path, help="result/*.bin, trace directory, or .npz/.csv table")
    parser.add_argument("--sm", type=int, action="append", help="SM id to draw (repeatable; default: picked)")
    add_output_args(parser, "results/warp_sched")
    args = parser.parse_args(argv)
    fn = timelines.fig13a if stem == "fig13a" else timelines.fig13b
    emit(fn(args.trace, args.out, sms=args.sm), args.json)
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
    emit(tailing.fig13cd(args.trace, args.out, args.tail_threshold, align=args.clock_align), args.json)
    return 0


def fig13a_main(argv: Sequence[str] | None = None) -> int:
    return timeline_main("fig13a", argv)


def fig13b_main(argv: Sequence[str] | None = None) -> int:
    return timeline_main("fig13b", argv)
