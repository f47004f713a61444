"""Figures drawn beside the numbers: a process forked before the trace is read, which imports matplotlib
(and whatever else the figures need) while the caller computes, then draws each figure it is sent, one
process per figure, on the other cores.

A per-figure command line spends most of its time after the artifact's line on importing matplotlib and
on laying out text; neither depends on the numbers. Started right after ``import numpy``, the figure
process has matplotlib loaded by the time the numbers exist, and the figures are then drawn side by side
(the first in the figure process itself, each further one in a process forked from it, which starts with
everything imported; while it waits for the jobs it draws a small figure with text, so the fonts are loaded
once, not again in each forked process). What crosses the pipe is plain data: a JSON header (the builder's
``"module:function"`` name, the output folder and stem, JSON parameters) and the arrays in ``.npy`` form,
read back with ``allow_pickle=False``; the result is a JSON list of the files written or one error line.

A builder is ``fn(arrays: dict[str, np.ndarray], params: dict) -> matplotlib.figure.Figure``, saved with
:func:`neutrino_ae.report.style.save_figure_files`. Where processes cannot fork (or
``NEUTRINO_AE_NO_FORK=1``), :meth:`FigureProcess.start` gives the in-process form: the same calls, each
figure drawn when it is sent.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import signal
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from neutrino_ae.errors import NeutrinoAEError

_LEN = struct.Struct("<Q")


@dataclass
class FigureJob:
    """One figure: ``builder`` (``"package.module:function"``) applied to ``arrays`` and ``params``, saved as
    ``out/stem.*``."""

    stem: str
    builder: str
    out: Path
    arrays: Mapping[str, np.ndarray] = field(default_factory=dict)
    params: Mapping[str, Any] = field(default_factory=dict)


def forking_allowed() -> bool:
    """Whether figures may be drawn in forked processes (``NEUTRINO_AE_NO_FORK=1`` says no)."""
    return hasattr(os, "fork") and os.environ.get("NEUTRINO_AE_NO_FORK", "").strip() in ("", "0")


def draw(job: FigureJob) -> dict[str, Path]:
    """Build and save one figure in this process; its files by name."""
    from neutrino_ae.report.style import save_figure_files

    module, _, name = job.builder.partition(":")
    build = getattr(importlib.import_module(module), name)
    return save_figure_files(build(dict(job.arrays), dict(job.params)), job.out, job.stem)


class FigureProcess:
    """See the module's docstring. Use as a context manager: leaving it without :meth:`join` (an error in
    the caller) ends the figure processes, so no figure is left being written after the command exits."""

    def __init__(self, pid: int | None, jobs_w: int | None, result_r: int | None) -> None:
        self._pid, self._jobs_w, self._result_r = pid, jobs_w, result_r
        self._inline: dict[str, Path] = {}
        self._sent = False

    @classmethod
    def start(cls, warm: Sequence[str] = ()) -> FigureProcess:
        """Fork the figure process, which imports the modules named in ``warm`` (matplotlib and the style
        module always) and waits for :meth:`send`; in-process where forking is not allowed."""
        if not forking_allowed():
            return cls(None, None, None)
        jobs_r, jobs_w = os.pipe()
        result_r, result_w = os.pipe()
        pid = os.fork()
        if pid:
            os.close(jobs_r)
            os.close(result_w)
            return cls(pid, jobs_w, result_r)
        os.close(jobs_w)
        os.close(result_r)
        _serve(jobs_r, result_w, warm)  # never returns

    def send(self, jobs: Sequence[FigureJob]) -> None:
        """Hand over every figure of the command (once); in-process, draw them now."""
        if self._sent:
            raise RuntimeError("FigureProcess.send is called once, with every figure")
        self._sent = True
        if self._pid is None:
            for job in jobs:
                self._inline.update(draw(job))
            return
        buf = io.BytesIO()
        header = [{"stem": j.stem, "builder": j.builder, "out": str(j.out), "params": dict(j.params),
                   "arrays": list(j.arrays)} for j in jobs]
        text = json.dumps(header).encode()
        buf.write(_LEN.pack(len(text)) + text)
        for job in jobs:
            for arr in job.arrays.values():
                np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
        try:
            with os.fdopen(self._jobs_w, "wb") as fh:
                fh.write(buf.getbuffer())
        except BrokenPipeError:
            pass  # the process ended: join() reports how
        self._jobs_w = None

    def join(self) -> dict[str, Path]:
        """Every figure's files by name, once drawn; a figure that failed raises its one line."""
        if self._pid is None:
            return dict(self._inline)
        if self._jobs_w is not None:  # nothing was sent: let the process end
            os.close(self._jobs_w)
            self._jobs_w = None
        doc = _result_of(self._pid, self._result_r, "the figure process")
        self._result_r = self._pid = None
        if "error" in doc:
            raise NeutrinoAEError(f"drawing a figure failed: {doc['error']}")
        return {name: Path(p) for name, p in doc["files"].items()}

    def close(self) -> None:
        """End the figure processes now (an error or a signal in the caller): nothing is drawn after."""
        for fd in (self._jobs_w, self._result_r):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._jobs_w = self._result_r = None
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)  # its own figure processes die with it (_die_with_parent)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, 0)
            self._pid = None

    def __enter__(self) -> FigureProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _serve(jobs_r: int, result_w: int, warm: Sequence[str]) -> None:
    """The figure process: import, wait for the jobs, draw them side by side, report, exit."""
    code = 0
    try:
        _die_with_parent()
        for name in ("matplotlib.figure", "matplotlib.backends.backend_agg", "neutrino_ae.report.style", *warm):
            importlib.import_module(name)
        _warm_text()
        with os.fdopen(jobs_r, "rb") as fh:
            jobs = _read_jobs(io.BytesIO(fh.read()))  # numpy reads .npy data from a seekable file only
        doc = {"files": _draw_side_by_side(jobs)} if jobs else {"files": {}}
    except BaseException as exc:  # noqa: BLE001 - handed to the caller, which raises it as one line
        doc, code = {"error": str(exc) or type(exc).__name__}, 1
    with contextlib.suppress(OSError), os.fdopen(result_w, "w", encoding="utf-8") as out:
        json.dump(doc, out)
    os._exit(code)


def _warm_text() -> None:
    """Draw a small figure with text in the house style before any job arrives: the fonts are loaded and
    their caches filled once here, not again in every process forked to draw a figure."""
    from neutrino_ae.report.style import new_figure, style_context

    with style_context():
        fig = new_figure(2.0, 1.0)
        ax = fig.add_subplot(1, 1, 1)
        ax.set_title("warm 0.5x")
        ax.set_xlabel("cycles")
        fig.text(0.5, 0.01, "synthetic", fontsize=8)
        fig.canvas.draw()


def _die_with_parent() -> None:
    """Default signal handling, and (Linux) a SIGKILL when the forking process ends, however it ends: a
    command killed by a signal leaves no figure being drawn behind it. A Ctrl-C reaches the whole process
    group: these processes end on it without a traceback, and the command says "interrupted"."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(1)


def _read_jobs(fh: io.BytesIO) -> list[FigureJob]:
    head = fh.read(_LEN.size)
    if len(head) < _LEN.size:
        return []  # the caller stopped before sending: nothing to draw
    header = json.loads(fh.read(_LEN.unpack(head)[0]))
    return [FigureJob(h["stem"], h["builder"], Path(h["out"]),
                      {name: np.lib.format.read_array(fh, allow_pickle=False) for name in h["arrays"]},
                      h["params"]) for h in header]


def _result_of(pid: int, read_fd: int, who: str) -> dict[str, Any]:
    """What a figure process wrote on its pipe once it has ended (``files`` or ``error``); how it ended when it
    wrote nothing readable."""
    with os.fdopen(read_fd, encoding="utf-8") as fh:
        text = fh.read()
    _, status = os.waitpid(pid, 0)
    try:
        return json.loads(text)
    except ValueError:
        return {"error": f"{who} ended with status {os.waitstatus_to_exitcode(status)}"}


def _draw_side_by_side(jobs: Sequence[FigureJob]) -> dict[str, str]:
    """The first figure here, each other one in a process forked from this one; every file by name."""
    children = []
    for job in jobs[1:]:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            code = 0
            try:
                _die_with_parent()
                doc: dict[str, Any] = {"files": {k: str(v) for k, v in draw(job).items()}}
            except BaseException as exc:  # noqa: BLE001
                doc, code = {"error": f"{job.stem}: {exc}" if str(exc) else f"{job.stem}: {type(exc).__name__}"}, 1
            with os.fdopen(w, "w", encoding="utf-8") as out:
                json.dump(doc, out)
            os._exit(code)
        os.close(w)
        children.append((pid, r))
    errors = []
    files: dict[str, str] = {}
    try:
        files.update((k, str(v)) for k, v in draw(jobs[0]).items())
    except Exception as exc:  # noqa: BLE001 - reported with the others once they have ended
        errors.append(f"{jobs[0].stem}: {exc}" if str(exc) else f"{jobs[0].stem}: {type(exc).__name__}")
    for pid, r in children:
        doc = _result_of(pid, r, "a figure process")
        if "error" in doc:
            errors.append(doc["error"])
        else:
            files.update(doc["files"])
    if errors:
        raise NeutrinoAEError("; ".join(errors))
    return files
