"""What both notebooks' set-up cells share: their parameters checked (a bad one stops the cell with
one ``NotebookInputError`` line) and the output folder claimed for the run."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.logs import log_to_file
from neutrino_ae.report.command.paths import output_folder, user_path
from neutrino_ae.report.section import NotebookInputError, NotebookStop, registry
from neutrino_ae.run.lock import hold_output_lock
from neutrino_ae.run.parameters import problem
from neutrino_ae.run.publish import public_dir
from neutrino_ae.run.verdict import retire_verdict


class NotebookDiskFull(NotebookStop):
    """The disk (or the file-size limit) filled during the run: ``disk full: <path> (<reason>)``.
    ``neutrino-ae run`` exits 74 for it and keeps the previous run's results."""


def check(ok: bool, message: str) -> None:
    """Stop the cell with ``message`` unless ``ok``."""
    if not ok:
        raise NotebookInputError(message)


def check_types(notebook: str, **values: Any) -> None:
    """Stop the cell at the first value that is not of its parameter's type or range (the rules
    ``neutrino-ae run`` checks ``-p`` with: :mod:`neutrino_ae.run.parameters`)."""
    for name, value in values.items():
        why = problem(notebook, name, value)
        check(why is None, str(why))


def flag(name: str, value: Any) -> bool:
    check(isinstance(value, bool), f"{name} must be True or False, not {value!r}")
    return bool(value)


def _list_text(value: Any) -> Any:
    """A list written as text, as ``papermill -p sections '["dmat"]'`` passes it (papermill's ``-p``
    keeps anything that is not a number or a bool as a string): ``'["dmat"]'``, ``"['dmat', 'max_mem']"``
    and ``"(dmat, max_mem)"`` become the list they spell; anything else is returned unchanged."""
    if not isinstance(value, str) or not value.strip().startswith(("[", "(")):
        return value
    text = value.strip()
    for parse in (json.loads, ast.literal_eval):
        try:
            parsed = parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        return list(parsed) if isinstance(parsed, list | tuple) else value
    inner = text[1:-1] if text[-1:] in ("]", ")") else text[1:]
    return [v.strip().strip("'\"") for v in inner.split(",") if v.strip()]  # YAML-ish [dmat, max_mem]


def section_names(value: Any) -> list[str]:
    """The ``sections`` parameter (None: all; a list, a comma-separated string, or a list written as
    text, ``'["dmat"]'``) as registered names."""
    value = _list_text(value)
    check(value is None or isinstance(value, str) or (isinstance(value, list | tuple)
                                                        and all(isinstance(v, str) for v in value)),
          f"sections must be a list of section names or a comma-separated string, not {value!r}")
    try:
        names = registry.parse_names(value)
    except NeutrinoAEError as exc:
        raise NotebookInputError(str(exc)) from None
    check(bool(names), f"sections names no section ({value!r}); valid: {', '.join(registry.names())}")
    return names


def separate(output_dir: Path, trace_root: Path) -> None:
    """Refuse an unusable ``trace_root`` or ``output_dir`` (a symbolic-link loop, a source folder of the
    repository: :mod:`neutrino_ae.report.command.paths`) and an ``output_dir`` inside ``trace_root``."""
    try:
        user_path(trace_root, "trace_root", kind="dir")
        output_folder(output_dir, "output_dir")
    except NeutrinoAEError as exc:
        raise NotebookInputError(str(exc)) from None
    out, traces = output_dir.resolve(), trace_root.resolve()
    check(not out.is_relative_to(traces),
          f"output_dir {output_dir} is inside trace_root {trace_root}: results would mix with the traces; "
          "choose an output_dir outside it")


def prepare_output(output_dir: Path) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Lock the output folder for this run, start its ``run.log`` (every level; the cells show only
    warnings) and drop a summary and verdict a previous run left: a new run's results must never sit
    beside an old summary or verdict that looks complete. Returns the previous verdict (None if there
    was none) and summary, which a partial run merges into (``run/verdict.py``)."""
    # Run by `neutrino-ae run`, the kernel writes into a generation of the output folder (run/publish.py);
    # the lock and run.log are the folder's own.
    folder = public_dir(output_dir)
    try:
        hold_output_lock(folder)
    except OSError as exc:
        raise NotebookInputError(f"output_dir {output_dir}: {exc.strerror or exc}") from None
    except NeutrinoAEError as exc:
        raise NotebookInputError(str(exc)) from None
    try:
        log_to_file(folder)
    except OSError as exc:
        raise NotebookInputError(f"output_dir {output_dir}: {exc.strerror or exc}") from None
    except NeutrinoAEError as exc:  # run.log is a symbolic link
        raise NotebookInputError(str(exc)) from None
    (output_dir / "summary.md").unlink(missing_ok=True)
    return retire_verdict(output_dir), retire_verdict(output_dir, "summary.json")

