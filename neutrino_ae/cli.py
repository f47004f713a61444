"""``neutrino-ae`` / ``python -m neutrino_ae``: sample | fetch | run static|dynamic | compare | export perfetto.

Exit codes (``neutrino_ae.errors.EXIT_CODES``, listed by every ``--help``): 0 success; 1 a claim
DIFFERS, a notebook cell failed (``run``) or values moved (``compare``); 2 bad input or usage
(``error: <one line>`` on stderr, never a traceback); 3 no GPU; 4 network or server failure;
74 disk full; 130 interrupted; 143 terminated (docs/reliability.md).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from neutrino_ae.bundle.manifest import MAX_SEED
from neutrino_ae.cli_export import add_export as _add_export
from neutrino_ae.console import utf8_mode
from neutrino_ae.errors import InputError, NeutrinoAEError, UsageError, exit_codes_text
from neutrino_ae.escape import terminal
from neutrino_ae.logs import add_verbosity_options, configure_from_args
from neutrino_ae.report.command.layout import MAX_SUMMARY_BYTES, PAPER_TRACES, SAMPLE_TRACES
from neutrino_ae.report.command.paths import new_folder_parent, output_folder, outside_bundles, user_path
from neutrino_ae.report.command.script import run_main

log = logging.getLogger(__name__)


def _add_sample(sub: Any) -> None:
    p = sub.add_parser("sample", help="generate the synthetic sample bundle (offline)",
                       description="Generate the synthetic sample bundle (reused if one with the same "
                                   "scale and seed is already there).")
    p.add_argument("--out", default=SAMPLE_TRACES,
                   help=f"bundle root to create (default: {SAMPLE_TRACES}, where the notebooks look for it)")
    p.add_argument("--scale", default="small", choices=["small", "paper"],
                   help="small: seconds, for tests and make run; paper: the paper's sizes")
    p.add_argument("--seed", type=int, default=0, help=f"random seed, 0 to {MAX_SEED} (default: 0)")
    p.add_argument("--force", action="store_true", help="regenerate even if a matching bundle exists")
    p.set_defaults(func=_cmd_sample)


def _add_fetch(sub: Any) -> None:
    from neutrino_ae.bundle.fetch import PAPER_BUNDLE_URL

    p = sub.add_parser("fetch", help="download and extract the paper's trace bundle",
                       description="Download (resumable, verified) and safely extract the paper's trace.zip.")
    p.add_argument("--trace-root", default=PAPER_TRACES,
                   help=f"bundle root (default: {PAPER_TRACES}, where the notebooks look for it)")
    p.add_argument("--url", default=PAPER_BUNDLE_URL, help="archive URL (default: the paper's)")
    p.add_argument("--sha256", default=None,
                   help="expected sha256 of the archive; without it the first download is trusted and "
                        "its digest recorded in bundle.json")
    p.add_argument("--force", action="store_true", help="download and extract again")
    p.add_argument("--keep-zip", action="store_true", help="keep the archive under <trace-root>/.download")
    p.add_argument("--zip", default=None, metavar="TRACE_ZIP",
                   help="a trace.zip downloaded by hand: validated and extracted as a download is, nothing is "
                        "fetched (the same as `run static -p bundle TRACE_ZIP`)")
    p.set_defaults(func=_cmd_fetch)


def _add_run(sub: Any) -> None:
    from neutrino_ae.run.papermill import NOTEBOOKS

    p = sub.add_parser("run", help="execute static.ipynb or dynamic.ipynb with papermill",
                       description="Execute a notebook headless. The executed copy is saved as "
                                   "<output-dir>/<name>.executed.ipynb.")
    p.add_argument("name", choices=NOTEBOOKS)
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="notebook parameter; VALUE is parsed as JSON or a Python literal when possible, "
                        "else kept as a string (-p bundle sample, -p sections '[\"dmat\"]')")
    p.add_argument("--sections", help="comma-separated sections to run (injected as the list `sections`)")
    p.add_argument("--output-dir", help="where results go (default: results/<name> in the repository)")
    p.add_argument("--trace-root", help="bundle root (injected as `trace_root`)")
    p.add_argument("--log-output", action="store_true", help="stream cell output to stderr while running")
    p.add_argument("--notebook", help="run this notebook file instead of the repository's <name>.ipynb")
    p.add_argument("--kernel", help="Jupyter kernel name (default: the notebook's)")
    p.add_argument("--report-only", action="store_true",
                   help="exit 0 even when a claim's verdict is DIFFERS (the verdict is still written)")
    p.add_argument("--allow-skip", action="store_true",
                   help="dynamic: exit 0 even when nothing could be collected (no GPU or no neutrino)")
    p.set_defaults(func=_cmd_run)


def _add_compare(sub: Any) -> None:
    p = sub.add_parser("compare", help="diff two runs' summary.json",
                       description="Compare two summary.json files (or run directories holding them). "
                                   "Exit 1 when a value moved beyond the tolerance or is missing on one side. "
                                   "Integers are compared and shown exactly. A summary.json over "
                                   f"{MAX_SUMMARY_BYTES // 2**20} MiB is refused unread (exit 2); a run's "
                                   "is under 1 MiB.")
    p.add_argument("run_a", metavar="RUN_A")
    p.add_argument("run_b", metavar="RUN_B")
    p.add_argument("--rtol", type=float, default=0.1, help="relative tolerance (default: 0.1)")
    p.add_argument("--atol", type=float, default=0.0, help="absolute tolerance (default: 0)")
    p.set_defaults(func=_cmd_compare)


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's, except that the exit-code list keeps one line per code (continuations indented)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if not text.startswith("exit codes:"):
            return super()._fill_text(text, width, indent)
        head, *codes = text.splitlines()
        lines = [indent + head]
        for line in codes:
            lines += textwrap.wrap(line, width, initial_indent=indent, subsequent_indent=indent + " " * 7)
        return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    # One epilog for every command: the whole list of exit codes (neutrino_ae.errors.EXIT_CODES).
    parser = argparse.ArgumentParser(prog="neutrino-ae", description="Neutrino (OSDI'25) reproduction suite.",
                                     epilog=exit_codes_text(), formatter_class=_HelpFormatter)
    add_verbosity_options(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_sample, _add_fetch, _add_run, _add_compare, _add_export):
        add(sub)
    for p in sub.choices.values():
        p.epilog, p.formatter_class = exit_codes_text(), _HelpFormatter
        add_verbosity_options(p, sub=True)  # -q/-v after the command too
    return parser


def _cmd_sample(args: argparse.Namespace) -> int:
    from neutrino_ae.bundle.fetch import ensure_sample_bundle
    from neutrino_ae.sample import generate_bundle

    if not 0 <= args.seed <= MAX_SEED:
        raise UsageError(f"--seed must be a whole number from 0 to {MAX_SEED}, not {args.seed}")
    output_folder(args.out, "--out")
    root = ensure_sample_bundle(args.out, scale=args.scale, seed=args.seed, force=args.force, generator=generate_bundle)
    _print(root)
    return 0


def _cmd_fetch(args: argparse.Namespace) -> int:
    from neutrino_ae.bundle.fetch import fetch_paper_bundle, use_paper_zip

    output_folder(args.trace_root, "--trace-root")
    if args.zip is not None:
        archive = user_path(args.zip, "--zip", must_exist=True, kind="file")
        root = use_paper_zip(args.trace_root, archive, sha256=args.sha256, force=args.force)
    else:
        root = fetch_paper_bundle(args.trace_root, url=args.url, sha256=args.sha256, force=args.force,
                                  keep_zip=args.keep_zip)
    _print(root)
    return 0


def default_output_dir(name: str) -> Path:
    """Where ``neutrino-ae run <name>`` writes: the notebook's own default (``results/static/``,
    ``results/dynamic/``) in the repository, so Jupyter and the command line share one layout."""
    from neutrino_ae.report.command.layout import notebook_results
    from neutrino_ae.run.papermill import package_repo_root

    return (package_repo_root() or Path.cwd()) / notebook_results(name)


def _cmd_run(args: argparse.Namespace) -> int:
    from neutrino_ae.bundle.fetch import is_zip_choice
    from neutrino_ae.logs import claim, quiet
    from neutrino_ae.run.papermill import find_notebook, parse_parameter, run_notebook
    from neutrino_ae.run.parameters import check_parameters

    params: dict[str, Any] = {name: parse_parameter(value) for name, value in args.parameter}
    # Every value's type and range, before a folder, lock or log exists (a notebook of one's own may
    # have other parameters: only the types of the known ones are checked then).
    check_parameters(args.name, params, known_names=args.notebook is None)
    if args.sections is not None:
        params["sections"] = [s.strip() for s in args.sections.split(",") if s.strip()]
    if args.trace_root is not None:
        params["trace_root"] = args.trace_root
    if is_zip_choice(params.get("bundle")):  # a trace.zip downloaded by hand: the kernel runs elsewhere
        params["bundle"] = str(user_path(params["bundle"], "-p bundle", must_exist=True, kind="file").resolve())
    if isinstance(params.get("trace_root"), str):
        trace_opt = "--trace-root" if args.trace_root is not None else "-p trace_root"
        given = user_path(params["trace_root"], trace_opt, kind="dir")
        new_folder_parent(given, trace_opt)
        params["trace_root"] = str(given.resolve())
    output_dir = args.output_dir or params.pop("output_dir", None)
    if output_dir is None:
        output_dir = default_output_dir(args.name)
    elif isinstance(output_dir, str | os.PathLike):
        option = "--output-dir" if args.output_dir else "-p output_dir"
        outside_bundles(output_folder(output_dir, option), option)
    if isinstance(params.get("trace_root"), str) and isinstance(output_dir, str | os.PathLike):
        _not_published_over(Path(params["trace_root"]), Path(output_dir), trace_opt)
    if args.notebook is not None:
        user_path(args.notebook, "--notebook", kind="file")
    notebook = find_notebook(args.name, args.notebook)
    if args.log_output:
        claim("papermill")  # its cell-output lines, at INFO, on the console
    executed = run_notebook(notebook, output_dir, params, log_output=args.log_output, kernel_name=args.kernel,
                            progress_bar=False if quiet() else None)
    _print(_shown(executed))
    _print_outputs(Path(output_dir))
    return _verdict_status(Path(output_dir), args.report_only, args.allow_skip)


def _not_published_over(trace_root: Path, output_dir: Path, option: str) -> None:
    """Refuse (InputError, exit 2) a trace root at or under a name the run publishes in its output folder (a
    section's folder, a file of its set, its generations): the run's output would be one of its inputs."""
    from neutrino_ae.report.section import registry
    from neutrino_ae.run.publish import FAILED_NAMES, TOP_LEVEL

    try:
        rel = trace_root.resolve().relative_to(output_dir.resolve())
    except (ValueError, OSError):
        return
    if not rel.parts:
        return  # the output folder itself: the notebook refuses an output_dir inside its trace_root
    first = rel.parts[0]
    if first in registry.names() or first in TOP_LEVEL or first in FAILED_NAMES.values() or first.startswith(
            (".neutrino-ae", "static.", "dynamic.")):
        raise InputError(str(trace_root), f"is where the run publishes {first!r} in its output folder {output_dir} "
                                          f"({option}): the output would be one of the inputs; choose a trace "
                                          "root outside it")


def _verdict_status(output_dir: Path, report_only: bool, allow_skip: bool) -> int:
    """Exit status from verdict.json: 1 when a claim DIFFERS (unless --report-only) or when a
    dynamic run collected nothing (unless --allow-skip)."""
    from neutrino_ae.report.claims import (
        DIFFERS,
        VERDICT_NAME,
        counts_line,
        read_verdict,
        trace_dirs_lines,
    )

    found = read_verdict(output_dir)
    if found is None:
        return 0
    import textwrap

    from neutrino_ae.report.claims.view import text_width, verdict_text
    from neutrino_ae.run.verdict import verdict_header

    doc, outcomes = found
    overall = doc.get("overall")
    width = text_width()

    def wrapped(text: str, indent: str = "  ") -> str:
        return "\n".join(textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False,
                                        break_long_words=False)) or text

    # The run ends with the verdict table: every claim, verdict first, expected vs obtained, under the
    # header naming the bundle (its digest) and the run; every line fits the terminal ($COLUMNS, else 100).
    _print("\n" + "\n".join(wrapped(line) for line in verdict_header(doc)))
    _print(f"\n{verdict_text(outcomes, width)}\n")
    read = trace_dirs_lines(doc["trace_dirs"]) if isinstance(doc.get("trace_dirs"), dict) else []
    if read:
        _print("trace dirs read:\n" + "".join(f"{wrapped('  ' + line, '      ')}\n" for line in read))
    for o in outcomes:
        if o.status == DIFFERS:
            _print(wrapped(f"  DIFFERS {o.section}/{o.claim}: {o.text}", "    "))
    _print(wrapped(f"{doc.get('scope')}.", ""))
    _print(f"verdict: {overall} ({counts_line(doc.get('counts', {}))}): {_shown(output_dir / VERDICT_NAME)}")
    if overall == "DIFFERS" and not report_only:
        return 1
    if overall == "NOTHING COLLECTED" and not allow_skip:
        print("error: nothing was collected (pass --allow-skip to accept that)", file=sys.stderr)
        return 1
    return 0


def _print_outputs(output_dir: Path) -> None:
    """Tell a batch user where the results are (only when the notebook wrote a summary)."""
    from neutrino_ae.report.results.summary import SUMMARY_NAME, read_summary
    from neutrino_ae.run.publish import published_set

    if not (output_dir / SUMMARY_NAME).is_file():
        return
    rows = read_summary(output_dir).get("results", [])
    kinds = sorted({str(r.get("bundle_kind")) for r in rows})
    note = " (SYNTHETIC sample data)" if "sample" in kinds else ""
    # Hidden names are no figures: a temp file of an atomic write (``.<stem>.tmp-*.png``), the previous run's set.
    published = published_set(output_dir)  # the generation the folder's links read (run/publish.py)
    pngs = sorted(p for p in published.rglob("*.png")
                  if not any(part.startswith(".") for part in p.relative_to(published).parts))
    _print(f"summary: {_shown(output_dir / SUMMARY_NAME)} ({len(rows)} results, bundle kind "
          f"{', '.join(kinds) or 'n/a'}){note}")
    _print(f"figures: {len(pngs)} PNG files under {_shown(output_dir)}")


def _print(text: object) -> None:
    """Print a line (or lines) of output: names from a bundle, a summary or verdict file shown escaped,
    never as a terminal control sequence (:func:`neutrino_ae.escape.terminal`)."""
    print(terminal(text))


def _shown(path: str | os.PathLike[str]) -> str:
    """``path`` as the run's last lines name it: relative to the working directory when under it
    (``results/static/verdict.json`` after ``make run``), else as given."""
    try:
        # The folder resolved, not the name: a result's name is a link into its published set (run/publish.py).
        p = Path(path)
        return str((p.parent.resolve() / p.name).relative_to(Path.cwd().resolve())) or "."
    except (ValueError, OSError):
        return os.fspath(path)


def _cmd_compare(args: argparse.Namespace) -> int:
    from neutrino_ae.report.results.compare import report

    if args.rtol < 0 or args.atol < 0:
        raise NeutrinoAEError("--rtol and --atol must be >= 0")
    for value, name in ((args.run_a, "RUN_A"), (args.run_b, "RUN_B")):
        user_path(value, name)  # a missing one: resolve_summary says what is missing
    code, text = report(args.run_a, args.run_b, rtol=args.rtol, atol=args.atol)
    _print(text)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``neutrino-ae``; returns the exit code."""
    from neutrino_ae.run import stop

    if argv is None:  # the command line itself (not called from Python): file names as UTF-8, whatever LC_ALL says
        utf8_mode()
    args = build_parser().parse_args(argv)
    configure_from_args(args)
    # SIGTERM / Ctrl-C: `run` stops its kernel and workers, waits, cleans up and exits 143 / 130
    # with one line; the other commands unwind through their own clean-up (run/stop.py).
    restore = stop.install_run_handlers() if args.command == "run" else stop.install_unwinding_handlers()
    try:
        # Each error carries its exit code: 1 for a failed notebook run, 2 for bad input, 74 disk full.
        return run_main(lambda _: int(args.func(args)))
    except stop.Terminated:
        print("error: terminated", file=sys.stderr)
        return 143
    finally:
        restore()


if __name__ == "__main__":
    sys.exit(main())
