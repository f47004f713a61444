"""Figures drawn beside the numbers: a process forked before the trace is read, which imports matplotlib (and
whatever else the figures need) while the caller computes, then draws each figure it is sent, one process per
figure, on the other cores. A figure can be sent as soon as its own numbers exist: the caller sends any number
of times, and each figure starts drawing when it arrives.

A per-figure command line spends most of its time after the artifact's line on importing matplotlib and on
laying out text; neither depends on the numbers. Started right after ``import numpy``, the figure process has
matplotlib loaded by the time the numbers exist, and the figures are then drawn side by side (each in a
process forked from it as it arrives, which starts with everything imported; while it waits for the jobs it
draws a small figure with text, so the fonts are loaded once, not again in each forked process). What crosses
the pipe is plain data: a JSON header (the builder's ``"module:function"`` name, the output folder and stem,
JSON parameters) and the arrays in ``.npy`` form, read back with ``allow_pickle=False``; the result is a JSON
list of the files written or one error line.

A builder is ``fn(arrays: dict[str, np.ndarray], params: dict) -> matplotlib.figure.Figure``, saved with
:func:`neutrino_ae.report.figures.style.save_figure_files`. Where processes cannot fork (or
``NEUTRINO_AE_NO_FORK=1``), :meth:`FigureProcess.start` gives the in-process form: the same calls, each figure
drawn when it is sent.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import json
import os
import queue
import signal
import struct
import threading
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
    from neutrino_ae.report.figures.style import save_figure_files

    module, _, name = job.builder.partition(":")
    build = getattr(importlib.import_module(module), name)
    return save_figure_files(build(dict(job.arrays), dict(job.params)), job.out, job.stem)


class FigureProcess:
    """See the module's docstring. Use as a context manager: leaving it without :meth:`join` (an error in
    the caller) ends the figure processes, so no figure is left being written after the command exits."""

    def __init__(self, pid: int | None, jobs_w: int | None, result_r: int | None) -> None:
        self._pid, self._jobs_w, self._result_r = pid, jobs_w, result_r
        self._inline: dict[str, Path] = {}
        self._joined = False
        self._writer: threading.Thread | None = None
        self._frames: queue.SimpleQueue[memoryview | None] = queue.SimpleQueue()

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
        """Hand these figures over (call again for figures whose numbers come later, until :meth:`join`);
        in-process, draw them now. Never waits for the figure process: a pipe holds 64 KiB, and the figure
        process reads only once matplotlib is imported, so a thread writes while the caller goes on."""
        if self._joined:
            raise RuntimeError("FigureProcess.send after join")
        if self._pid is None:
            for job in jobs:
                self._inline.update(draw(job))
            return
        if not jobs:
            return
        buf = io.BytesIO()
        header = [{"stem": j.stem, "builder": j.builder, "out": str(j.out), "params": dict(j.params),
                   "arrays": list(j.arrays)} for j in jobs]
        text = json.dumps(header).encode()
        buf.write(bytes(_LEN.size) + _LEN.pack(len(text)) + text)  # the frame's length first, filled in below
        for job in jobs:
            for arr in job.arrays.values():
                np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
        frame = buf.getbuffer()
        frame[:_LEN.size] = _LEN.pack(len(frame) - _LEN.size)
        self._frames.put(frame)
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_frames, name="figure-jobs", daemon=True)
            self._writer.start()

    def _write_frames(self) -> None:
        """The writer thread: each frame in the order sent, then EOF (the figure process's cue that every
        figure has been sent); it owns the pipe's write end once started."""
        fd, broken = self._jobs_w, False
        try:
            while (frame := self._frames.get()) is not None:
                if not broken:
                    try:
                        view = memoryview(frame)
                        while view:
                            view = view[os.write(fd, view):]
                    except OSError:  # the process ended: join() reports how
                        broken = True
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _end_jobs(self) -> None:
        """No more jobs: EOF on the pipe (through the writer thread, after what it still has to write)."""
        if self._writer is not None:
            self._frames.put(None)
            self._writer.join()
            self._writer = None
        elif self._jobs_w is not None:
            with contextlib.suppress(OSError):
                os.close(self._jobs_w)
        self._jobs_w = None

    def join(self) -> dict[str, Path]:
        """Every figure's files by name (in the order sent), once drawn; a figure that failed raises its one
        line."""
        self._joined = True
        if self._pid is None:
            return dict(self._inline)
        self._end_jobs()
        doc = _result_of(self._pid, self._result_r, "the figure process")
        self._result_r = self._pid = None
        if "error" in doc:
            raise NeutrinoAEError(f"drawing a figure failed: {doc['error']}")
        return {name: Path(p) for name, p in doc["files"].items()}

    def close(self) -> None:
        """End the figure processes now (an error or a signal in the caller): nothing is drawn after."""
        self._joined = True
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)  # its own figure processes die with it (_die_with_parent)
        self._end_jobs()  # the writer stops at the broken pipe
        if self._result_r is not None:
            with contextlib.suppress(OSError):
                os.close(self._result_r)
            self._result_r = None
        if self._pid is not None:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self._pid, 0)
            self._pid = None

    def __enter__(self) -> FigureProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _serve(jobs_r: int, result_w: int, warm: Sequence[str]) -> None:
    """The figure process: import, then draw each job as it arrives (side by side), report, exit."""
    code = 0
    try:
        _die_with_parent()
        _import_for_figures(warm)
        _warm_text()
        # What is loaded now is shared with every drawing process forked below: out of the collector's
        # reach, a collection there does not walk (and so copy) the whole shared heap.
        gc.freeze()
        doc = {"files": _draw_as_they_come(jobs_r)}
    except BaseException as exc:  # noqa: BLE001 - handed to the caller, which raises it as one line
        doc, code = {"error": str(exc) or type(exc).__name__}, 1
    with contextlib.suppress(OSError), os.fdopen(result_w, "w", encoding="utf-8") as out:
        json.dump(doc, out)
    os._exit(code)


def _import_for_figures(warm: Sequence[str]) -> None:
    """matplotlib, the style module and ``warm``, without the property tables of ``set()``'s docstrings.

    For every Artist class it defines, matplotlib writes a docstring for its ``set()`` listing each settable
    property (``matplotlib.artist.kwdoc``): about a third of its import time, spent on text nobody reads in
    a process that only draws. Here ``kwdoc`` gives a one-line pointer while these modules are imported;
    signatures, properties and pixels are untouched."""
    import matplotlib.artist

    full_kwdoc = getattr(matplotlib.artist, "kwdoc", None)
    if full_kwdoc is not None:
        matplotlib.artist.kwdoc = _short_kwdoc
    try:
        for name in ("matplotlib.figure", "matplotlib.backends.backend_agg", "neutrino_ae.report.figures.style", *warm):
            importlib.import_module(name)
    finally:
        if full_kwdoc is not None:
            matplotlib.artist.kwdoc = full_kwdoc


def _short_kwdoc(artist: object) -> str:
    return "Properties: see matplotlib.artist.getp(artist) (left out of this figure process's docstrings)"


def _warm_text() -> None:
    """Draw a small figure with text in the house style before any job arrives: the fonts are loaded and
    their caches filled once here, not again in every process forked to draw a figure."""
    from neutrino_ae.report.figures.style import new_figure, style_context

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


def _read_frame(fh: io.BufferedReader) -> list[FigureJob] | None:
    """The next jobs sent, or None once the caller has sent everything (or stopped before the end of a
    frame: it is ending, and ends this process)."""
    head = fh.read(_LEN.size)
    if len(head) < _LEN.size:
        return None
    size = _LEN.unpack(head)[0]
    body = fh.read(size)
    if len(body) < size:
        return None
    return _read_jobs(io.BytesIO(body))  # numpy reads .npy data from a seekable file only


def _read_jobs(fh: io.BytesIO) -> list[FigureJob]:
    header = json.loads(fh.read(_LEN.unpack(fh.read(_LEN.size))[0]))
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


def _draw_as_they_come(jobs_r: int) -> dict[str, str]:
    """Each job drawn in a process forked as it arrives, so one sent early starts early; every file by name,
    in the order sent, once all have ended (a failure: every failed figure's line, in that order)."""
    children = []
    with os.fdopen(jobs_r, "rb") as fh:
        while (jobs := _read_frame(fh)) is not None:
            children += [_fork_draw(job, jobs_r) for job in jobs]
    errors = []
    files: dict[str, str] = {}
    for pid, r in children:
        doc = _result_of(pid, r, "a figure process")
        if "error" in doc:
            errors.append(doc["error"])
        else:
            files.update(doc["files"])
    if errors:
        raise NeutrinoAEError("; ".join(errors))
    return files


def _fork_draw(job: FigureJob, jobs_r: int) -> tuple[int, int]:
    """A process that draws ``job`` and writes its files (or its one error line) on a pipe: (pid, read end)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        with contextlib.suppress(OSError):
            os.close(jobs_r)  # the caller's EOF and broken pipe are the figure process's alone
        code = 0
        try:
            _die_with_parent()
            gc.disable()  # one figure, then exit: its garbage goes with the process
            doc: dict[str, Any] = {"files": {k: str(v) for k, v in draw(job).items()}}
        except BaseException as exc:  # noqa: BLE001
            doc, code = {"error": f"{job.stem}: {exc}" if str(exc) else f"{job.stem}: {type(exc).__name__}"}, 1
        with os.fdopen(w, "w", encoding="utf-8") as out:
            json.dump(doc, out)
        os._exit(code)
    os.close(w)
    return pid, r
