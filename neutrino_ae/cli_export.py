"""``neutrino-ae export perfetto <trace> -o out.json``: a block_sched / warp_sched trace as a timeline
for ui.perfetto.dev (the writer: :mod:`neutrino_ae.report.figures.perfetto`)."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from neutrino_ae.errors import InputError
from neutrino_ae.escape import terminal
from neutrino_ae.report.command.paths import not_an_input, outside_bundles

log = logging.getLogger(__name__)


def add_export(sub: Any) -> None:
    """The ``export`` subcommand and its formats (``perfetto``)."""
    from neutrino_ae.report.figures.perfetto import ALIGNS, DEFAULT_MAX_SLICES, LEVELS

    p = sub.add_parser("export", help="write a trace in another tool's format (perfetto)",
                       description="Write a trace in another tool's format.")
    formats = p.add_subparsers(dest="format", required=True, metavar="FORMAT")
    pf = formats.add_parser(
        "perfetto", help="block_sched/warp_sched trace -> Chrome Trace Event JSON (ui.perfetto.dev)",
        description="A block_sched or warp_sched trace (a trace directory, every result in launch order, or one "
                    "result/*.bin) as Chrome Trace Event JSON: one track group per SM, one track per resident slot, "
                    "a slice per block or warp and one per scheduling gap; times in whole clock cycles, 1 us on the "
                    "axis = 1 cycle. Open it in https://ui.perfetto.dev (Open trace file).")
    pf.add_argument("trace", metavar="TRACE", help="trace directory or result/*.bin")
    pf.add_argument("-o", "--out", required=True, help="the JSON file to write (atomically)")
    pf.add_argument("--level", choices=LEVELS, default="auto",
                    help="a slice per block (the first warp's record) or per warp; auto: warp for a warp_sched "
                         "probe, else block")
    pf.add_argument("--clock-align", choices=ALIGNS, default="sm",
                    help="sm: each SM's clock starts at its first start (SM clocks are not synchronised); "
                         "global: raw differences")
    pf.add_argument("--max-slices", type=int, default=DEFAULT_MAX_SLICES,
                    help=f"bound on block/warp slices (default {DEFAULT_MAX_SLICES}); beyond it SMs are summarised, "
                         "the rule is written into the file's otherData.sampling")
    pf.set_defaults(func=cmd_export_perfetto)


def cmd_export_perfetto(args: argparse.Namespace) -> int:
    from neutrino_ae.report.figures.perfetto import export_perfetto

    if args.max_slices < 1:
        raise InputError(None, f"--max-slices must be at least 1, not {args.max_slices}")
    outside_bundles(args.out, "-o")  # never into a trace bundle
    not_an_input(args.out, [args.trace], "-o")  # never over the trace it reads
    done = export_perfetto(args.trace, args.out, level=args.level, align=args.clock_align,
                           max_slices=args.max_slices)
    log.info("%s: %d blocks, %d %s slices, %d SM(s) summarised, %d events", done.path, done.blocks, done.slices,
             done.level, done.summarized_sms, done.events)
    print(terminal(done.path))
    return 0
