"""Running ``static.ipynb`` / ``dynamic.ipynb`` headless with papermill.

Parameters the runner injects (the notebooks' ``parameters`` cell should declare them):

* ``output_dir``: absolute path where the run writes ``summary.json`` and its figures/tables;
  the executed notebook is saved there as ``<name>.executed.ipynb``.
* ``trace_root``: absolute path, only when given (``--trace-root`` or ``-p trace_root``).
* ``sections``: list of section names, only when given (``--sections a,b``).
* anything passed with ``-p NAME VALUE``.

Paths given relative on the command line are resolved against the caller's working directory
before injection, because the kernel runs in the repository root (so the notebook's imports of
the per-figure folders work).
"""

from __future__ import annotations

import ast
import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

import neutrino_ae
from neutrino_ae.errors import InputError, NetworkError, NeutrinoAEError
from neutrino_ae.logs import log_to_file
from neutrino_ae.report.layout import checkout_root
from neutrino_ae.report.section import NotebookInputError, NotebookNetworkError
from neutrino_ae.run.lock import hold_output_lock, lend_output_lock

NOTEBOOKS = ("static", "dynamic")
log = logging.getLogger(__name__)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class NotebookError(NeutrinoAEError):
    """A notebook cell raised (or the kernel died); ``executed`` is the saved executed notebook."""

    exit_code = 1  # a failed run, told apart from bad input (2)

    def __init__(self, message: str, executed: Path | None = None) -> None:
        super().__init__(message)
        self.executed = executed


#: The notebooks a wheel build ships inside the package (setup.py), for an install without a checkout.
BUNDLED_NOTEBOOKS = Path(neutrino_ae.__file__).resolve().parent / "_notebooks"


def package_repo_root() -> Path | None:
    """The source checkout holding this package (used in place or installed editable), if it is one."""
    return checkout_root()


def find_notebook(name: str, override: str | os.PathLike[str] | None = None) -> Path:
    """``override`` if given, else ``<repo root>/<name>.ipynb``, else ``./<name>.ipynb``, else the copy
    shipped in the installed package."""
    if override is not None:
        path = Path(override)
        if not path.is_file():
            raise InputError(path, "notebook not found")
        return path.resolve()
    candidates = [r / f"{name}.ipynb" for r in (package_repo_root(), Path.cwd(), BUNDLED_NOTEBOOKS) if r is not None]
    for path in candidates:
        if path.is_file():
            return path.resolve()
    raise InputError(candidates[0], "notebook not found; run from the repository root or pass --notebook")


def kernel_cwd(notebook: Path) -> Path:
    """Where the kernel runs: the repository root when known, else the notebook's folder."""
    root = package_repo_root()
    if root is not None:
        return root
    # The installed package's own copy runs where the user is (its default traces/ and results/
    # folders are relative), never inside site-packages.
    return Path.cwd() if notebook.resolve().parent == BUNDLED_NOTEBOOKS else notebook.parent


def parse_parameter(text: str) -> Any:
    """Like papermill's ``-p`` but richer: JSON, then a Python literal, else the string itself.

    ``'["dmat"]'`` → list, ``3`` → int, ``true``/``True`` → bool, ``null``/``None`` → None,
    ``sample`` → ``"sample"``.
    """
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def run_notebook(notebook: str | os.PathLike[str], output_dir: str | os.PathLike[str],
                 parameters: dict[str, Any] | None = None, cwd: str | os.PathLike[str] | None = None,
                 log_output: bool = False, kernel_name: str | None = None,
                 progress_bar: bool | None = None) -> Path:
    """Execute ``notebook`` with papermill; return ``<output_dir>/<stem>.executed.ipynb``.

    ``output_dir`` (made absolute) is injected as the ``output_dir`` parameter. The executed
    notebook is written under a temporary name and renamed at the end, also when a cell fails
    (then :class:`NotebookError` carries the failing cell's error line).
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    nb = Path(notebook)
    out_dir = Path(output_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    # One run per output folder: this process holds the lock and lends it to its kernel, so a
    # second run fails here before it writes anything (not even its executed notebook).
    hold_output_lock(out_dir)
    lend_output_lock(out_dir)
    log_to_file(out_dir)  # run.log: this process's lines; the kernel appends its sections' (and timings)
    log.info("executing %s -> %s (parameters: %s)", nb.name, out_dir, parameters or "the notebook's defaults")
    final = out_dir / f"{nb.stem}.executed.ipynb"
    running = out_dir / f".{nb.stem}.executed.running.ipynb"
    params = {**(parameters or {}), "output_dir": str(out_dir)}
    if progress_bar is None:
        progress_bar = not log_output and sys.stderr.isatty()
    try:
        papermill.execute_notebook(str(nb), str(running), parameters=params, cwd=str(cwd or kernel_cwd(nb)),
                                   log_output=log_output, kernel_name=kernel_name, progress_bar=progress_bar)
    except PapermillExecutionError as exc:
        _publish(running, final)
        # "[n]" is the In [n] label shown in the executed notebook (which includes papermill's
        # injected-parameters cell); fall back to the cell's position.
        cell = f"[{exc.exec_count}]" if exc.exec_count is not None else f"#{exc.cell_index + 1}"
        err = NotebookError(f"{nb.name}: cell {cell} failed: {exc.ename}: {_first_line(exc.evalue)} "
                            f"(executed notebook: {final})", final)
        if exc.ename == NotebookInputError.__name__:
            err.exit_code = 2  # bad input (a parameter, a user path), not a failed run
        elif exc.ename == NotebookNetworkError.__name__:
            err.exit_code = NetworkError.exit_code  # the download failed: the network or the server
        raise err from None
    except NeutrinoAEError:
        raise
    except Exception as exc:  # noqa: BLE001 - kernel start failures, dead kernels, bad notebook JSON
        saved = _publish(running, final)
        where = f" (executed notebook: {final})" if saved else ""
        raise NotebookError(f"{nb.name}: could not run: {type(exc).__name__}: {_first_line(str(exc))}{where}",
                            final if saved else None) from None
    _verdict_on_top(running, out_dir)
    _publish(running, final)
    log.info("executed notebook: %s", final)
    return final


def _verdict_on_top(executed: Path, out_dir: Path) -> None:
    """Put the run's verdict table (verdict.json) first in the executed notebook, so a reader sees
    whether the run reproduces the paper before scrolling; the last cell shows it again."""
    import nbformat

    from neutrino_ae.report.claims import VERDICT_NAME, counts_line, read_verdict, verdict_table

    if not executed.is_file():
        return
    try:
        found = read_verdict(out_dir)
        if found is None:
            return
        doc, outcomes = found
        nb = nbformat.read(executed, as_version=4)
    except (OSError, ValueError, TypeError):
        return  # the executed notebook is still published as it is
    text = (f"## Verdict: {doc.get('overall')}\n\n{doc.get('scope')}. {counts_line(doc.get('counts', {}))} "
            f"(details at the end and in `{VERDICT_NAME}`).\n\n{verdict_table(outcomes)}\n")
    nb.cells.insert(0, nbformat.v4.new_markdown_cell(text, id="verdict-top"))
    nbformat.write(nb, executed)


def _publish(running: Path, final: Path) -> bool:
    if running.is_file():
        os.replace(running, final)
        return True
    return False


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in _ANSI.sub("", str(text)).splitlines() if ln.strip()]
    return lines[0] if lines else ""
