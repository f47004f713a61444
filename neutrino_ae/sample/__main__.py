"""``python -m neutrino_ae.sample --out traces [--scale small|paper|tiny] [--seed N] [--force]``."""

from __future__ import annotations

import argparse
import sys

from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.escape import terminal
from neutrino_ae.logs import add_verbosity_options, configure_from_args
from neutrino_ae.sample.generate import SCALES, generate_bundle


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m neutrino_ae.sample",
                                 description="Generate a synthetic Neutrino trace bundle from the documented "
                                             "GPU execution model (docs/sample-model.md).")
    ap.add_argument("--out", required=True, help="bundle directory to create")
    ap.add_argument("--scale", choices=SCALES, default="small",
                    help="small (default, <60 MB), paper (paper launch sizes, ~GBs), tiny (tests)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="replace an existing non-empty --out")
    add_verbosity_options(ap)  # -q/--quiet: no progress bar, warnings only; -v: debug lines
    args = ap.parse_args(argv)
    configure_from_args(args)
    try:
        path = generate_bundle(args.out, args.scale, args.seed, progress=not args.quiet, force=args.force)
    except (NeutrinoAEError, ValueError) as e:
        print(f"error: {terminal(e, lines=False)}", file=sys.stderr)
        return 2
    print(terminal(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
