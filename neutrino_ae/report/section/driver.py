"""The section driver: what every paper section does the same way, written once.

A section folder supplies only what is its own, as three entry points of its :class:`Section`
(``"<module>:<function>"`` strings, resolved in the folder's package like ``analyze``):

* ``load(source) -> frames``: read the inputs (``source`` is a :class:`Source`: the run's
  :class:`Bundle` and the input paths, the bundle's own section folder unless a command line named
  others) into whatever the computation takes;
* ``compute(frames) -> Result``: the tables, the numbers (summary key -> value), their ground
  truth by the same keys, the results document and the text the artifact's script printed (or several
  results by name, ``{stem: Result}``, the section's own last: dmat's four figures);
* ``figures(result) -> [Figure]``: what each figure shows, as arrays and JSON parameters for a builder
  ``fn(arrays, params) -> Figure`` in the section's matplotlib module.

This module owns the rest: the command line (``python <section>/<section>.py [inputs] [--out DIR]
[--json]``; a path becomes a Bundle once, here), printing the artifact's lines first, the figure
process (forked at the command's start, so matplotlib is imported while the inputs are read), the
results files, the summary rows (from ``numbers``, with the ground truth matched by key) and the
:class:`SectionResult` the runner caches. :func:`analyze` is the notebooks' entry (the runner calls
:func:`analyzer`: this for a section with ``compute``, else its own ``analyze``), :func:`main` the command
line's (:func:`run_script` runs it for the folder's script; :func:`command` is any section's command line).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neutrino_ae.atomic import protecting
from neutrino_ae.bundle.context import Bundle, bundle_of
from neutrino_ae.errors import InputError
from neutrino_ae.escape import terminal
from neutrino_ae.report.command.paths import missing_reason, not_an_input
from neutrino_ae.report.command.script import add_output_args, emit
from neutrino_ae.report.figures.process import FigureJob, FigureProcess, draw

if TYPE_CHECKING:
    from neutrino_ae.report.results import SectionResult
    from neutrino_ae.report.section import Section


@dataclass(frozen=True)
class Source:
    """What ``load`` reads: the run's bundle, and the inputs (the bundle's ``<section>/`` folder in a
    notebook run; what the command line was given, else its default; :meth:`inputs` pairs each with its own
    bundle, found with the run's); ``options`` are what a script of the folder fixes (e.g. kernel_overhead's
    per-group scripts: ``{"groups": ("triton_op",)}``). ``notebook``:
    the notebooks' run, whose input is the bundle's own folder (block_sched then reads its variants and timing
    too; a command line given that folder reads the traces it names, as the artifact's script did)."""

    bundle: Bundle
    paths: tuple[Path, ...]
    options: Mapping[str, Any] = field(default_factory=dict)
    out: Path | None = None  # the results folder, for a reader that writes as it reads (dmat's sparsified .dmat)
    notebook: bool = False
    bundles: tuple[Bundle, ...] = ()  # each path's own bundle, found at the edge; empty: ``bundle`` for each

    def inputs(self) -> list[tuple[Path, Bundle]]:
        """Each input path with its bundle (a command line's traces may come from several bundles)."""
        return list(zip(self.paths, self.bundles or (self.bundle,) * len(self.paths), strict=True))


@dataclass
class Result:
    """What ``compute`` returns: the contract, one line a field, each optional.

    * ``files``: what is written beside the document, by key: a table (or a function building it, built after
      the lines are printed; a :class:`Table` with a note) as ``<key>.csv`` and ``.md``, text as
      ``(file name, text)``, or a Path ``load`` wrote already (dmat's sparsified ``.dmat``);
    * ``numbers``: summary key -> value, in the summary's order (a :class:`Number` for its own paper reference
      or bundle kind);
    * ``truth``: summary key -> the sample generator's value (absent: none);
    * ``units``: a key's last dotted part -> its unit;
    * ``data``: the results document, ``<stem>.json``; the summary rows go where it holds ``"summary"``;
    * ``lines``: printed as soon as ``compute`` returns (the artifact's result);
    * ``done``: the closing line(s), printed last; ``{key}`` is replaced by the written file of that key;
    * ``input``: the input the document's provenance names;
    * ``plots``: what only ``figures(result)`` reads.
    """

    files: Mapping[str, Any] = field(default_factory=dict)
    numbers: Mapping[str, Any] = field(default_factory=dict)
    truth: Mapping[str, Any] = field(default_factory=dict)
    units: Mapping[str, str] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    lines: Sequence[str] = ()
    done: str = ""
    input: Path | None = None
    plots: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Number:
    """A summary number whose paper reference (warp_sched's Fig. 13d) or bundle kind (a block_sched trace of
    another bundle than the run's) is not the section's."""

    value: Any
    ref: str | None = None
    kind: str | None = None


@dataclass(frozen=True)
class Table:
    """A table of :attr:`Result.files` (or a function building it) with a note under its Markdown copy."""

    table: Any
    note: str = ""


@dataclass
class Figure:
    """One figure: ``builder`` (``"<module>:<function>"`` in the section's package) of ``arrays`` and
    ``params``, saved as ``<out>/<stem>.png`` and ``.svg``; ``key`` names its files in the result
    (default ``figure`` for the stem that is the section's name, else ``figure_<rest of the stem>``; ``""``:
    the files under their own names, ``<stem>.png``)."""

    stem: str
    builder: str
    arrays: Mapping[str, Any] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)
    key: str | None = None


def number_rows(section: Section, bundle: Bundle, result: Result) -> list[dict[str, Any]]:
    """One summary row per number, in ``numbers``' order, with its unit and ground truth."""
    from neutrino_ae.report.results.summary import summary_row

    rows = []
    for key, given in result.numbers.items():
        n = given if isinstance(given, Number) else Number(given)
        rows.append(summary_row(section.name, key, n.value, result.units.get(key.rsplit(".", 1)[-1]),
                                n.ref or section.paper_ref, n.kind or bundle.kind, result.truth.get(key)))
    return rows


def value(number: Any) -> Any:
    """A number of :attr:`Result.numbers` as a plain value (a :class:`Number`'s ``value``)."""
    return number.value if isinstance(number, Number) else number


def _jobs(section: Section, figures: Sequence[Figure], out: Path) -> list[FigureJob]:
    package = section.package or section.name
    return [FigureJob(f.stem, f"{package}.{f.builder}", out, f.arrays, f.params) for f in figures]


def _figure_files(section: Section, figures: Sequence[Figure], drawn: Mapping[str, Path]) -> dict[str, Path]:
    """Each figure's PNG under its key, the other files under ``<key>.<suffix>``, in the order sent."""
    files: dict[str, Path] = {}
    for f in figures:
        mine = {name: p for name, p in drawn.items() if name.startswith(f"{f.stem}.")}
        if f.key == "":
            files.update(mine)
            continue
        key = f.key or ("figure" if f.stem == section.name else f"figure_{f.stem[len(section.name) + 1:]}")
        mine = list(mine.values())
        files.update({key: mine[0], **{f"{key}.{p.suffix[1:]}": p for p in mine[1:]}})
    return files


def compute(section: Section, source: Source) -> dict[str, Result]:
    """``load`` then ``compute`` of ``section`` on ``source``: its results by stem, the section's own last."""
    results = section.entry("compute")(section.entry("load")(source))
    return dict(results) if isinstance(results, Mapping) else {section.name: results}


def closing(done: str, files: Mapping[str, Path]) -> str:
    """``done`` with each ``{key}`` that names a written file replaced by its path (any other text kept as is:
    a trace's label or a tensor's name in it is data, never a format field)."""
    return _FIELD.sub(lambda m: str(files[m[1]]) if m[1] in files else m[0], done)


_FIELD = re.compile(r"\{([^{}]+)\}")


def finish(section: Section, source: Source, results: Mapping[str, Result], out: str | Path,
           figures: FigureProcess | None = None) -> SectionResult:
    """Figures, results files, summary rows: the :class:`SectionResult` of ``results`` (by stem, the section's own
    last: its rows are the summary, its lines and closing line the text; each result is written as
    ``<stem>.json`` with its files, and the rows of each go where its ``data`` holds ``"summary"``, in place, so a
    later result's ``data`` holding that document sees them). ``figures``: a figure process to send the figures
    to (without it they are drawn here)."""
    from neutrino_ae.report.results import SectionResult
    from neutrino_ae.report.results.columns import FrameMap

    out = Path(out)
    wanted = [section.entry("figures")(r) for r in results.values()]
    jobs = _jobs(section, [f for w in wanted for f in w], out)
    if figures is not None:
        figures.send(jobs)
        drawn = None
    else:
        drawn = {k: v for job in jobs for k, v in draw(job).items()}
    own = list(results.values())[-1]
    tables: dict[str, Any] = {}
    written: list[tuple[dict[str, Path], dict[str, Path]]] = []  # per result: files given, files written here
    for stem, result in results.items():
        rows = number_rows(section, source.bundle, result)
        if "summary" in result.data:
            result.data["summary"] = rows
        summary = rows if result is own else []
        written.append(_write(source, result, stem, out, tables))
    drawn = figures.join() if drawn is None else drawn
    files: dict[str, Path] = {}
    for mine, (given, wrote) in zip(wanted, written, strict=True):
        files.update(_figure_files(section, mine, drawn))
        files.update(given)
        files.update(wrote)
    done = closing(own.done, files)
    text = "\n".join([*own.lines, *([done] if done else [])])
    return SectionResult(section.name, own.data, files, FrameMap(tables), summary, text)  # Columns read as DataFrames


def _write(source: Source, result: Result, stem: str, out: Path,
           tables: dict[str, Any]) -> tuple[dict[str, Path], dict[str, Path]]:
    """``result``'s document ``<stem>.json`` and files; its tables added to ``tables``. The files given (text
    written here, a Path load wrote) and those written from the document and tables, by key."""
    from neutrino_ae.atomic import write_text
    from neutrino_ae.report.results import write_results

    given: dict[str, Path] = {}
    mine: dict[str, Any] = {}
    notes: dict[str, str] = {}
    for key, item in result.files.items():
        if isinstance(item, Path):
            given[key] = item
        elif isinstance(item, tuple):
            given[key] = write_text(out / item[0], item[1])
        else:
            if isinstance(item, Table):
                item, notes[key] = item.table, item.note
            mine[key] = item() if callable(item) else item
    files = write_results(out, stem, result.data, input_path=result.input, tables=mine, bundle=source.bundle)
    for table, note in notes.items():
        md = files[f"{table}.md"]
        write_text(md, md.read_text(encoding="utf-8") + note)
    tables.update(mine)
    return given, files


def analyze(section: Section, bundle: Bundle, out: str | Path) -> SectionResult:
    """The notebooks' entry: ``section`` on the run's bundle (its ``<section>/`` folder)."""
    source = Source(bundle, (bundle.path(section.name),), out=Path(out), notebook=True)
    return finish(section, source, compute(section, source), out)


def source_of(paths: Sequence[str | Path], options: Mapping[str, Any] | None = None,
              out: str | Path | None = None) -> Source:
    """The command line's inputs, each with its bundle, found once here (the run's is the first's; a path the
    file system cannot use -- a symbolic link loop, a name too long -- is refused here, in one line, before any
    is read)."""
    paths = tuple(Path(p) for p in paths)
    for p in paths:
        if not p.exists() and (why := missing_reason(p, "")):
            raise InputError(p, why)
    bundles = tuple(bundle_of(p) for p in paths)  # one read per bundle root: bundle_of caches it
    return Source(bundles[0], paths, options or {}, Path(out) if out is not None else None, bundles=bundles)


def analyzer(section: Section) -> Callable[..., SectionResult]:
    """``analyze(bundle, out)`` of ``section``: the driver's for a section with ``compute``, else its own."""
    return partial(analyze, section) if section.compute else section.entry("analyze")


def command(section: Section) -> Callable[[Sequence[str] | None], int]:
    """``main(argv)`` of ``section``'s command line."""
    return partial(main, section)


def analyze_paths(section: Section, paths: Sequence[str | Path], out: str | Path,
                  options: Mapping[str, Any] | None = None) -> SectionResult:
    """What the command line computes and writes for ``paths`` (their bundle found from the first), without
    printing; the figures drawn in this process."""
    source = source_of(paths, options, out)
    return finish(section, source, compute(section, source), out)


def build_parser(section: Section, default: Path | None = None, prog: str | None = None,
                 flags: Mapping[str, Mapping[str, Any]] | None = None) -> argparse.ArgumentParser:
    """``[inputs] [flags] [--out DIR] [--json]``: ``Section.command`` says what the inputs are; ``default``: the
    inputs without any (the section's folder); ``flags``: a script's own options, ``{"--name": argparse
    keywords}``. ``Section.command_inputs`` ending in ``...``: several inputs; ``Section.command_default``
    False: no default, an input must be named."""
    default = default or section.folder or Path.cwd()
    parser = argparse.ArgumentParser(prog=prog, description=f"{section.paper_ref}: {section.title}.")
    many = section.command_inputs.endswith("...")
    metavar = section.command_inputs.split()[0]
    if not section.command_default:  # an input must be named
        parser.add_argument("inputs", nargs="+" if many else None, type=Path, metavar=metavar, help=section.command)
    else:
        parser.add_argument("inputs", nargs="*" if many else "?", type=Path, default=[default] if many else default,
                            metavar=metavar, help=f"{section.command} (default: {default})")
    for flag, spec in (flags or {}).items():
        parser.add_argument(flag, **spec)
    add_output_args(parser, section.name)
    return parser


def positive(message: str) -> type[argparse.Action]:
    """A flag's ``action`` (:func:`build_parser`'s ``flags``) that refuses a value below 1 as a usage error,
    ``message`` after the usage line (exit 2), as soon as it is parsed."""

    class Positive(argparse.Action):
        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                     option_string: str | None = None) -> None:
            if values < 1:
                parser.error(message)
            setattr(namespace, self.dest, values)

    return Positive


def main(section: Section, argv: Sequence[str] | None = None, options: Mapping[str, Any] | None = None,
         default: Path | None = None, prog: str | None = None,
         flags: Mapping[str, Mapping[str, Any]] | None = None) -> int:
    """The per-figure command line: the inputs' bundle found once, the artifact's lines printed as soon as
    the numbers exist (the figure process imports matplotlib meanwhile), then figures and results.
    ``options``, ``default``, ``prog``: a script's fixed options, default input and name; ``flags``: its own
    command-line options (:func:`build_parser`), given to ``load`` in ``Source.options`` by their names."""
    args = build_parser(section, default, prog, flags).parse_args(argv)
    paths = tuple(args.inputs) if isinstance(args.inputs, list) else (args.inputs,)
    not_an_input(args.out, [p for p in paths if p is not None], "--out")  # never into what it reads
    given = {k: v for k, v in vars(args).items() if k not in ("inputs", "out", "json")}
    options = {**(options or {}), **given}
    # The section's own modules are imported before the fork: the figure process inherits them, and the command
    # does not import them while the figure process imports matplotlib (on a loaded machine, both wait for a CPU).
    section.entry("load"), section.entry("compute")
    # Nor a result written over an input beside it (the figure process, forked here, inherits the protection).
    with protecting(p for p in paths if p is not None), \
            FigureProcess.start(warm=[f"{section.package or section.name}.figures"]) as figures:
        source = source_of(paths, options, args.out)
        results = compute(section, source)
        own = list(results.values())[-1]
        if not args.json and own.lines:
            print(terminal("\n".join(own.lines)) + "\n", end="", flush=True)  # one write: never split by a figure's
        done = finish(section, source, results, args.out, figures)
    if args.json:
        emit(done, True)
    elif own.done:
        head = "\n".join(own.lines)  # printed already; what follows it is the closing line(s)
        print(terminal(done.text[len(head) + 1:] if head else done.text))  # a folder name: never a control sequence
    sys.stdout.flush()
    return 0


def run_script(script_file: str, argv: Sequence[str] | None = None, up: int = 0,
               options: Mapping[str, Any] | None = None, flags: Mapping[str, Mapping[str, Any]] | None = None) -> int:
    """A section folder's artifact-compatible script (``python max_mem/max_mem.py ...``): :func:`main` of
    the folder's ``SECTION``, with one-line errors and exit codes
    (:func:`neutrino_ae.report.command.script.run_folder_script`). A script ``up`` folders below the section's
    (kernel_overhead's ``triton_op/overhead.py``) reads its own folder by default and is named by it;
    ``options`` go to ``load`` (``Source.options``), with the ``flags`` the script takes (:func:`main`)."""
    import dataclasses

    from neutrino_ae.report.command.script import run_folder_script

    here = Path(script_file).resolve()
    default = here.parent if up else None
    prog = "/".join(here.parts[-1 - up:]) if up else None

    def wrap(section: Any, folder: Path) -> Any:
        return partial(main, dataclasses.replace(section, package=folder.name, folder=folder), options=options,
                       default=default, prog=prog, flags=flags)

    return run_folder_script(script_file, ":SECTION", argv, up, wrap)
