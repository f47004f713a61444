"""Running ``static.ipynb`` / ``dynamic.ipynb`` headless with papermill.

Parameters the runner injects (the notebooks' ``parameters`` cell should declare them):

* ``output_dir``: where the run writes ``summary.json`` and its figures/tables; the executed notebook
  is saved there as ``<name>.executed.ipynb``.
* ``trace_root``: only when given (``--trace-root`` or ``-p trace_root``).

Both are injected relative to the kernel's working folder (the repository root) when they are inside
it, so the executed notebook names no folder of the machine that ran it, and absolute otherwise.
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
from neutrino_ae.atomic import DiskFull, is_disk_full
from neutrino_ae.errors import InputError, NetworkError, NeutrinoAEError
from neutrino_ae.logs import log_to_file
from neutrino_ae.report.command.layout import checkout_root
from neutrino_ae.report.section import NotebookInputError, NotebookNetworkError
from neutrino_ae.run.kernel_sockets import kernel_sockets
from neutrino_ae.run.lock import hold_output_lock, lend_output_lock, release_output_lock
from neutrino_ae.run.publish import Generations, failed_name, public_dir, publish_notebook, unmask_set
from neutrino_ae.run.stop import cleanup_temp_files, mark_run_start, on_stop, stop_descendants

NOTEBOOKS = ("static", "dynamic")
#: Arguments for the kernel papermill starts: its own log at CRITICAL, so neither its start-up warning about
#: the local TCP connection (a kernel on this machine, talking to this process) nor, when a cell failed and a
#: loaded machine made its shutdown slow, jupyter_client's interrupt ("KeyboardInterrupt caught in kernel",
#: an ERROR) is printed beside a run's one error line. What goes wrong in a cell is the cell's error. The
#: same for the kernel's tornado logger: a shutdown racing a failed cell's interrupt could print ipykernel's
#: "Uncaught exception in ZMQStream callback" with its traceback (seen once in 4 full test runs).
KERNEL_ARGUMENTS = ("--IPKernelApp.log_level=CRITICAL",
                    "--IPKernelApp.exec_lines=import logging; logging.getLogger('tornado').setLevel(logging.CRITICAL)")
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

    The kernel writes the run's whole set (notebook, summary, verdict, section folders) into a generation
    of ``output_dir`` of its own (injected as the ``output_dir`` parameter; the paths it prints are shown
    as ``output_dir``'s), published with one rename only when the run finished (run/publish.py). A run
    that fails never replaces the previous run's notebook, summary and verdict. When a cell failed
    (:class:`NotebookError` carries its error line) the failed run's notebook goes beside them as
    ``<stem>.failed.ipynb`` (its summary and verdict, if it wrote
    any, as ``summary.failed.json`` / ``verdict.failed.json``); when the disk fills (:class:`DiskFull`,
    exit 74), the kernel dies or the run is stopped by a signal (run/stop.py), nothing is published.
    Every process the run started has ended when this returns or raises.
    """
    nb = Path(notebook)
    check_address_space()
    check_open_files()
    check_kernel(kernel_name)
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
    running.unlink(missing_ok=True)  # papermill writes it by name: never through a link left there
    # The run writes its whole set into a generation of its own, published by one rename (run/publish.py).
    generations = Generations(out_dir, final.name)
    gen = generations.begin()

    def undo() -> str:  # after a signal stopped every process of the run (run/stop.py)
        running.unlink(missing_ok=True)
        cleanup_temp_files(out_dir)
        generations.abort(gen)
        release_output_lock(out_dir)
        return f"nothing published; {out_dir} keeps the previous run's notebook and summary"

    forget = on_stop(undo)
    mark_run_start()
    try:
        _execute(nb, running, gen, parameters, cwd, log_output, kernel_name, progress_bar)
    except BaseException as exc:
        stop_descendants()
        if isinstance(exc, NotebookError):  # a cell failed: its notebook, summary and verdict go beside
            cleanup_temp_files(out_dir)
            try:
                generations.fail(gen)
            except OSError:
                generations.abort(gen)
        undo()  # the previous run's notebook, summary and verdict stay, byte for byte
        raise
    finally:
        forget()
    stop_descendants(settle=2.0)  # the kernel's helpers (multiprocessing's resource tracker) end by themselves
    # Every writer has ended: what a section worker killed mid-write left (``.<stem>.tmp-*``) goes now,
    # not at the next stop (issue 36).
    cleanup_temp_files(out_dir)
    try:
        unmask_set(gen)
        generations.commit(gen)
    except BaseException:
        generations.abort(gen)
        raise
    _mark_reports_stale(out_dir)
    log.info("executed notebook: %s", final)
    return final


def _mark_reports_stale(out_dir: Path) -> None:
    """``make report``'s pages of an earlier run in ``out_dir`` say so, now that this run's set is published
    (run/report.py); a page that cannot be rewritten is a warning."""
    from neutrino_ae.run.report import mark_stale

    try:
        for page in mark_stale(out_dir):
            log.warning("%s shows an earlier run: marked STALE (rebuild it with `make report`)", page)
    except OSError as exc:
        log.warning("could not mark the report in %s stale: %s", out_dir, exc)


def check_kernel(kernel_name: str | None) -> None:
    """NeutrinoAEError (exit 2, one line) when no Jupyter kernel is installed under ``kernel_name``
    (``--kernel``): refused before anything is written, not a jupyter_client traceback at start-up."""
    if kernel_name is None:
        return
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    manager = KernelSpecManager()
    try:
        manager.get_kernel_spec(kernel_name)
    except NoSuchKernel:
        known = ", ".join(sorted(manager.find_kernel_specs())) or "none"
        raise NeutrinoAEError(f"--kernel {kernel_name!r}: no such Jupyter kernel (installed: {known}); "
                              "see `jupyter kernelspec list`") from None


#: Below this address-space limit (``ulimit -v``) the kernel cannot be relied on: measured with two cores,
#: 150 MB aborts in ZeroMQ, 600 MB leaves the kernel hung after a MemoryError in one of its threads (2 runs
#: of 3), 800 MB kills it; 1 GiB still lost the kernel in 4 of 19 runs (issue 36) and 1 of 5 here on the
#: small sample, 1.5 GiB ran 20 of 20 (2026-11-27). Refused up front, before anything is written
#: (docs/reliability.md).
MIN_ADDRESS_SPACE = 1536 << 20


def check_address_space() -> None:
    """NeutrinoAEError (exit 2) when ``RLIMIT_AS`` is below :data:`MIN_ADDRESS_SPACE`. A limit above
    it that is still too small fails in a cell, with one line (exit 1)."""
    try:
        import resource
    except ImportError:  # not POSIX
        return
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft < MIN_ADDRESS_SPACE:
        raise NeutrinoAEError(f"the address-space limit (ulimit -v) is {soft >> 20} MiB; a notebook run needs at "
                              f"least {MIN_ADDRESS_SPACE >> 20} MiB (below it the kernel can hang or die); "
                              "raise the limit")


#: Below this open-file limit (``ulimit -n``) a run fails inside the kernel or ZeroMQ: measured on the small
#: sample with two workers (2026-11-27), 32 kills the kernel at start-up, 64 runs out of descriptors reading
#: bundle.json, 96 and 128 run; so 256. Raised to it where the hard limit allows, refused up front otherwise.
MIN_OPEN_FILES = 256


def check_open_files() -> None:
    """Raise the soft ``RLIMIT_NOFILE`` to :data:`MIN_OPEN_FILES` when it is below and the hard limit allows
    (the kernel and workers inherit it); NeutrinoAEError (exit 2, the limit needed) when it does not."""
    try:
        import resource
    except ImportError:  # not POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= MIN_OPEN_FILES:
        return
    if hard == resource.RLIM_INFINITY or hard >= MIN_OPEN_FILES:
        resource.setrlimit(resource.RLIMIT_NOFILE, (MIN_OPEN_FILES, hard))
        return
    raise NeutrinoAEError(f"the open-file limit (ulimit -n) is {soft}; a notebook run needs at least {MIN_OPEN_FILES} "
                          "(below it the kernel or its sockets fail); raise it")


def _execute(nb: Path, running: Path, gen: Path, parameters: dict[str, Any] | None,
             cwd: str | os.PathLike[str] | None, log_output: bool, kernel_name: str | None,
             progress_bar: bool | None) -> Path:
    """Run the notebook with ``gen`` (the run's generation, run/publish.py) as its ``output_dir``; its executed
    notebook goes into ``gen`` (under its failed name when a cell failed)."""
    out_dir = gen
    final = out_dir / f"{nb.stem}.executed.ipynb"
    import papermill
    from papermill.exceptions import PapermillExecutionError

    run_cwd = Path(cwd or kernel_cwd(nb)).resolve()
    params = {**(parameters or {}), "output_dir": injected_path(out_dir, run_cwd)}
    if isinstance(params.get("trace_root"), str) and os.path.isabs(params["trace_root"]):
        params["trace_root"] = injected_path(Path(params["trace_root"]), run_cwd)
    if progress_bar is None:
        progress_bar = not log_output and sys.stderr.isatty()
    try:
        # request_save_on_cell_execute=False: papermill writes the running notebook once, at the end (or at
        # the failed cell), not at every cell's start and end: those ~50 writes of a notebook growing to
        # every figure's PNG cost a run about a CPU-second, and nobody reads the hidden file before the end.
        with kernel_sockets() as sockets:  # no TCP port for another process to take first
            papermill.execute_notebook(str(nb), str(running), parameters=params, cwd=str(run_cwd),
                                       log_output=log_output, kernel_name=kernel_name, progress_bar=progress_bar,
                                       request_save_on_cell_execute=False, extra_arguments=list(KERNEL_ARGUMENTS),
                                       **sockets)
    except PapermillExecutionError as exc:
        if exc.ename in _DISK_FULL_NAMES:
            raise DiskFull(_first_line(exc.evalue).removeprefix("disk full: ").rsplit(" (", 1)[0]) from None
        # A cell failed: the run's own notebook says where, under its failed name beside the previous
        # run's results, which stay (run_notebook puts them back).
        # "[n]" is the In [n] label shown in the executed notebook (which includes papermill's
        # injected-parameters cell); fall back to the cell's position.
        cell = f"[{exc.exec_count}]" if exc.exec_count is not None else f"#{exc.cell_index + 1}"
        line = f"{nb.name}: cell {cell} failed: {exc.ename}: {_first_line(exc.evalue)}"
        failed = out_dir / failed_name(final.name)
        saved = _publish(running, failed, line, gen)
        failed = public_dir(gen) / failed.name  # where it is once published
        where = (f"failed run's notebook: {failed}; the previous run's results are unchanged" if saved
                 else "the failed run's notebook could not be saved")
        err = NotebookError(f"{line} ({where})", failed if saved else None)
        if exc.ename == NotebookInputError.__name__:
            err.exit_code = 2  # bad input (a parameter, a user path), not a failed run
        elif exc.ename == NotebookNetworkError.__name__:
            err.exit_code = NetworkError.exit_code  # the download failed: the network or the server
        raise err from None
    except NeutrinoAEError:
        raise
    except OSError as exc:
        if is_disk_full(exc):  # papermill saving the running notebook
            raise DiskFull(exc.filename or running, exc.errno) from None
        return _could_not_run(nb, running, public_dir(gen) / final.name, exc)
    except Exception as exc:  # noqa: BLE001 - kernel start failures, dead kernels, bad notebook JSON
        return _could_not_run(nb, running, public_dir(gen) / final.name, exc)
    publish_notebook(running, final, _verdict_cell(out_dir), gen=gen)
    return final


_DISK_FULL_NAMES = ("DiskFull", "NotebookDiskFull")


def injected_path(path: Path, cwd: Path) -> str:
    """An absolute ``path`` as the injected-parameters cell shows it: relative to the kernel's working
    folder (the checkout) when inside it, so the executed notebook names no folder of this machine;
    absolute otherwise (the kernel needs it)."""
    try:
        rel = Path(path).resolve().relative_to(cwd)
    except ValueError:
        return str(path)
    return rel.as_posix() if rel.parts else str(path)


def _could_not_run(nb: Path, running: Path, final: Path, exc: Exception) -> Path:
    """The kernel could not start or died: no notebook is published (the previous run's stays)."""
    running.unlink(missing_ok=True)
    raise NotebookError(f"{nb.name}: could not run: {type(exc).__name__}: {_first_line(str(exc))}; "
                        f"nothing published ({final.parent} keeps the previous run's results)") from None


def _verdict_cell(out_dir: Path) -> Any:
    """The run's verdict (:func:`~neutrino_ae.run.verdict.verdict_headline`) as a cell for right under the
    notebook's title, so a reader sees whether the run reproduces the paper before scrolling."""
    import nbformat

    from neutrino_ae.run.verdict import verdict_headline

    text = verdict_headline(out_dir)
    return None if text is None else nbformat.v4.new_markdown_cell(text, id="verdict-top")


def _publish(running: Path, failed: Path, line: str, gen: Path) -> bool:
    """Publish the notebook of a failed run under its failed name if it reads back whole."""
    if not running.is_file():
        return False
    try:
        publish_notebook(running, failed, failed=line, gen=gen)
    except (NeutrinoAEError, OSError):
        running.unlink(missing_ok=True)
        return False
    return True


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in _ANSI.sub("", str(text)).splitlines() if ln.strip()]
    return lines[0] if lines else ""
