"""Shared plumbing for the per-figure CLIs: output arguments, JSON output, one-line errors, and the
entry of a section folder's artifact-compatible script.

Run as a file (``python block_sched/block_sched.py <trace>``), such a script has its own folder as
``sys.path[0]``, so ``import block_sched`` would find the script itself rather than the package. The
script therefore imports only this module and names the function to run; the folder is imported as
its package by path (the registry's rule) and nothing edits ``sys.path``::

    # max_mem/max_mem.py: the section driver's run_script calls run_folder_script(__file__, ":SECTION", ...)
    from neutrino_ae.report.section.driver import run_script

    if __name__ == "__main__":
        raise SystemExit(run_script(__file__))
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from neutrino_ae.atomic import DiskFull, is_disk_full
from neutrino_ae.console import safe_console, utf8_mode
from neutrino_ae.errors import NeutrinoAEError, ResourceError
from neutrino_ae.escape import terminal

# The per-figure command lines write by default under CLI_RESULTS (results/cli/), their own tree
# beside the notebooks' results/static/ and results/dynamic/, so a script run never overwrites a
# notebook's cached section (a folder holding its RECORD is refused).
from neutrino_ae.report.command.layout import CLI_RESULTS, RECORD
from neutrino_ae.report.command.paths import output_folder, outside_bundles

if TYPE_CHECKING:  # the GPU workloads use run_main and must not need pandas
    from neutrino_ae.report.results import SectionResult


def _out_dir(value: str) -> Path:
    """``--out``: any folder except one holding a notebook's cached section results, a trace bundle
    or a folder inside one, a source folder of the repository and the other places
    :func:`~neutrino_ae.report.command.paths.output_folder` refuses."""
    path = output_folder(value, "--out")  # its InputError is not argparse's: one line, exit 2
    outside_bundles(path, "--out")
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
        print(terminal(result.text))  # folder and probe names are the bundle's: never a control sequence


def os_error_line(exc: OSError) -> str:
    """One line naming the path(s) and the system's reason, e.g. ``out/x: Not a directory``."""
    where = ": ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"{where}: {reason}" if where else reason


def run_main(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    """Run a CLI ``main``; our own errors become ``error: <message>`` on stderr and their exit code (2, or 3
    for a missing GPU). The terminal escapes what its encoding cannot hold (``console.safe_console``)."""
    safe_console()
    try:
        return main(argv)
    except NeutrinoAEError as exc:
        print(f"error: {terminal(exc, lines=False)}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # any file-system failure on a user path: a file in place of a folder,
        # a folder below a file, a read-only or full file system, a FIFO ...
        if is_disk_full(exc):  # a write outside neutrino_ae.atomic: the same line and code as DiskFull
            print(f"error: {terminal(DiskFull(exc.filename or '?', exc.errno), lines=False)}", file=sys.stderr)
            return DiskFull.exit_code
        print(f"error: {terminal(os_error_line(exc), lines=False)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def run_folder_script(script_file: str, entry: str, argv: Sequence[str] | None = None, up: int = 0,
                      wrap: Callable[[object, Path], Callable[[Sequence[str] | None], int]] | None = None) -> int:
    """Run ``entry`` (``"<module>:<function>"`` in the section package; ``":<name>"`` in the package
    itself) as a CLI ``main``; the section folder is the script's folder, or ``up`` folders above it (for
    scripts in subfolders). ``wrap(obj, folder)`` makes the ``main`` of what ``entry`` names."""
    from neutrino_ae.report.section.registry import (
        import_folder,  # the Section contract: not needed by run_main's users
    )

    if argv is None:  # the script as a command line (not called from Python)
        utf8_mode()
    folder = Path(script_file).resolve().parents[up]
    try:
        import_folder(folder)
        module, _, func = entry.partition(":")
        main = getattr(importlib.import_module(f"{folder.name}.{module}" if module else folder.name), func)
        if wrap is not None:
            main = wrap(main, folder)
    except (MemoryError, ImportError) as exc:  # too little memory to load numpy/matplotlib: one line, exit 5
        if isinstance(exc, ImportError) and not any(s in str(exc).lower() for s in _NO_MEMORY):
            raise
        print(f"error: {terminal(_no_memory_to_start(folder.name, exc), lines=False)}", file=sys.stderr)
        return ResourceError.exit_code
    return run_main(main, argv)


#: How a shared library that cannot be mapped (address space exhausted) fails to import.
_NO_MEMORY = ("failed to map segment", "cannot allocate memory")
#: The address space a section script holds once numpy, pandas and matplotlib are loaded (measured:
#: 229 MB VmSize for ``python dmat/dmat.py``).
START_BYTES = 250_000_000


def _no_memory_to_start(name: str, exc: BaseException) -> str:
    why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    try:
        from neutrino_ae.formats.memory import available_memory

        limit = available_memory()
        room = f"; {limit.source} leaves {limit.available // 1_000_000:,} MB" if limit.available is not None else ""
    except (MemoryError, ImportError):  # too little even to read the limit
        room = ""
    return (f"not enough memory to load the {name} code ({why}): starting it takes about "
            f"{START_BYTES // 1_000_000} MB of address space{room}")
