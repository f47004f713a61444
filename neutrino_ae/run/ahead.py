"""Sections computed ahead, in worker processes, while the notebook shows the ones already done.

The sections are independent and CPU-bound, so on a machine with two cores two of them run at once.
Each worker runs :func:`neutrino_ae.run.runner.run_section`, which writes the section's results and
its cache record; the notebook cell then only reuses them. A worker never reports an error itself: a
section whose worker failed is computed again by its cell, which reports the error as it always does.
A section whose cached results are current is left to its cell, which reads them back.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, wait
from pathlib import Path

from neutrino_ae.bundle.context import Bundle


def default_workers() -> int:
    """Worker processes for computing sections ahead: the machine's cores, at most 2 (two sections at
    once already use the memory of the largest, dmat at paper scale)."""
    return max(1, min(2, os.cpu_count() or 1))


def _compute(name: str, bundle: Bundle, out_root: str, force: bool) -> tuple[float, str | None]:
    """(seconds, None) when the worker computed the section, (0, None) when it reused its cache, and
    (seconds, error) when it failed."""
    from neutrino_ae.logs import log_to_file
    from neutrino_ae.run.publish import public_dir
    from neutrino_ae.run.runner import run_section

    # A spawned worker starts with no handlers: its sections' lines go to the output folder's run.log too.
    log_to_file(public_dir(out_root))
    start = time.perf_counter()
    try:
        res = run_section(name, bundle, out_root, force=force)
    except Exception as exc:  # the cell computes it again and reports it
        return time.perf_counter() - start, f"{type(exc).__name__}: {exc}"
    return (0.0 if res.data.get("cached") else time.perf_counter() - start), None


def _end_with_parent() -> None:
    """In a worker: get SIGTERM when the kernel that started it dies (Linux ``PR_SET_PDEATHSIG``), so a
    kernel killed outright (SIGKILL, the OOM killer) leaves no worker computing into the results."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return


_PR_SET_PDEATHSIG = 1


class Ahead:
    """Futures of the sections being computed ahead; :meth:`wait` gives one section's outcome."""

    def __init__(self, names: list[str], bundle: Bundle, out_root: Path, force: bool, workers: int) -> None:
        self._futures: dict[str, Future] = {}
        workers = min(workers, os.cpu_count() or 1)  # more workers than cores only take turns
        if workers >= 2 and not force:
            # a section whose cached results are current is only read back by its cell: no worker (a
            # process importing pandas and the analyses, about a CPU-second) is started to find that
            from neutrino_ae.run.runner import is_cached

            names = [name for name in names if not is_cached(name, bundle, out_root)]
        if workers < 2 or len(names) < 2:
            return
        # spawn, not fork: a notebook kernel has threads, and forking a threaded process can deadlock.
        pool = ProcessPoolExecutor(max_workers=min(workers, len(names)),
                                   mp_context=multiprocessing.get_context("spawn"), initializer=_end_with_parent)
        for name in names:
            self._futures[name] = pool.submit(_compute, name, bundle, str(out_root), force)
        pool.shutdown(wait=False)  # the queued sections still run; nothing new is submitted

    def done(self) -> int:
        """Sections computed ahead and not yet collected by :meth:`wait`."""
        return sum(f.done() for f in self._futures.values())

    def computing(self, name: str) -> bool:
        return name in self._futures

    def wait(self, name: str, tick: Callable[[], None] | None = None) -> float | None:
        """Seconds the worker took for ``name`` (0 when it found the cached results current); None when
        it did not finish it (not computed ahead, or failed: the caller then computes it itself).
        ``tick`` is called every half second while it waits (the cell's progress line)."""
        future = self._futures.pop(name, None)
        if future is None:
            return None
        while tick is not None and not wait([future], timeout=0.5).done:
            tick()
        try:
            seconds, error = future.result()
        except Exception:  # a worker that died (killed, out of memory): compute in the kernel
            return None
        return None if error else seconds
