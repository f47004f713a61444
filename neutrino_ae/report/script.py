"""Shared plumbing for the per-figure CLIs: output arguments, JSON output, one-line errors."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from neutrino_ae.errors import NeutrinoAEError

# The per-figure command lines write by default under CLI_RESULTS (results/cli/), their own tree
# beside the notebooks' results/static/ and results/dynamic/, so a script run never overwrites a
# notebook's cached section (a folder holding its RECORD is refused).
from neutrino_ae.run.layout import CLI_RESULTS, RECORD

if TYPE_CHECKING:  # the GPU workloads use run_main and must not need pandas
    from neutrino_ae.report.results import SectionResult


def _out_dir(value: str) -> Path:
    """``--out``: any folder except one holding a notebook's cached section results."""
    path = Path(value)
    if (path / RECORD).is_file():
        raise argparse.ArgumentTypeError(
            f"{path} holds a notebook's cached results ({RECORD}); writing there would overwrite them "
            f"behind the notebook's back; choose another folder (default: {CLI_RESULTS}/<section>)")
    return path


def add_output_args(parser: argparse.ArgumentParser, default_out: str = "") -> None:
    """``--out`` and ``--json``. ``default_out`` names the section (``"dmat"``; a path such as
    ``"results/dmat"`` counts by its last part): the default folder is ``results/cli/<section>``."""
    name = Path(default_out).name if default_out not in ("", "results") else ""
    default = CLI_RESULTS / name if name else CLI_RESULTS
    parser.add_argument("--out", type=_out_dir, default=str(default),
                        help=f"output folder for figures and results files (default: {default}); a folder "
                             "with a notebook's cached results is refused")
    parser.add_argument("--json", action="store_true",
                        help="print the machine-readable result as JSON on stdout instead of the summary")


def emit(result: SectionResult, as_json: bool) -> None:
    """Print the result: JSON (``data`` + written files) or the human summary."""
    if as_json:
        doc = {**result.data, "files": {k: str(v) for k, v in result.files.items()}}
        print(json.dumps(doc, indent=2, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
    elif result.text:
        print(result.text)


def os_error_line(exc: OSError) -> str:
    """One line naming the path(s) and the system's reason, e.g. ``out/x: Not a directory``."""
    where = ": ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"{where}: {reason}" if where else reason


def run_main(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    """Run a CLI ``main``; our own errors become ``error: <message>`` on stderr and their exit code (2, or 3
    for a missing GPU)."""
    try:
        return main(argv)
    except NeutrinoAEError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # any file-system failure on a user path: a file in place of a folder,
        # a folder below a file, a read-only or full file system, a FIFO ...
        print(f"error: {os_error_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
