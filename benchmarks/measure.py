"""Measuring processes for the benchmarks (:mod:`benchmarks.bench`, :mod:`benchmarks.e2e`): a child
spawned from the repo root and reaped with ``os.wait4`` (its own wall seconds, peak RSS and CPU
seconds), killed with everything it started after a timeout; inputs generated in a child so the
parent stays small (a child's ``ru_maxrss`` starts at its parent's peak); the page cache warmed
before timing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]


def warm_page_cache(paths: Sequence[Path]) -> None:
    """Read the files once so both timed runs start from the same (warm) page cache.

    A small reused buffer: the parent must stay small, because a child's ``ru_maxrss`` starts at
    the peak RSS of the process that spawned it (Linux carries the high-water mark over fork/exec).
    """
    buf = bytearray(1 << 20)
    for path in paths:
        with open(path, "rb", buffering=0) as fh:
            while fh.readinto(buf):
                pass


def generate_in_child(module: str, case_name: str, gen_args: Sequence[str], result: Path,
                      lock: AbstractContextManager[Any] | None = None) -> tuple[Path, dict[str, Any]]:
    """Run ``python -m <module> --generate <gen_args> --result <result>`` (under ``lock``, if given);
    return the input directory and metadata it wrote to ``result`` (which is then removed)."""
    cmd = [sys.executable, "-m", module, "--generate", *gen_args, "--result", str(result)]
    try:
        with lock or nullcontext():
            proc = subprocess.run(cmd, cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True)
        if proc.returncode != 0 or not result.exists():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
            raise RuntimeError(f"{case_name}: input generation failed (exit {proc.returncode}):\n  "
                               + "\n  ".join(tail))
        doc = json.loads(result.read_text())
    finally:
        result.unlink(missing_ok=True)
    return Path(doc["input"]), doc["meta"]


def child_env() -> dict[str, str]:
    """This environment with the repo first on ``PYTHONPATH``: a child imports ``benchmarks`` and the package."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def spawn_measured(cmd: Sequence[str], env: dict[str, str], log: Path, timeout_s: float) -> dict[str, Any]:
    """Run ``cmd`` (stdout and stderr into ``log``), killed after ``timeout_s``; reap it with ``os.wait4``.

    Returns its exit code (negative: the signal), wall seconds from spawn to exit (parent clock,
    start-up included), and the peak RSS and CPU seconds of that child alone.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        t0 = time.perf_counter()
        # A new session lets a timeout kill the child together with anything it started (kernels).
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT, env=env,
                                start_new_session=True)
        timer = threading.Timer(timeout_s, lambda: _kill_group(proc.pid))
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        seconds = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    # Linux reports ru_maxrss in KiB: the peak of this child (and of the children it reaped).
    return {"returncode": proc.returncode, "seconds": seconds, "peak_rss_bytes": int(usage.ru_maxrss) * 1024,
            "cpu_seconds": usage.ru_utime + usage.ru_stime}


def child_failure(what: str, returncode: int, output: str, tail_lines: int) -> RuntimeError:
    """The error for a child that failed: why (timed out / exit N) and the last lines of its output."""
    why = "timed out" if returncode in (-signal.SIGKILL, -signal.SIGTERM) else f"exit {returncode}"
    tail = output.strip().splitlines()[-tail_lines:]
    return RuntimeError(f"{what} failed ({why}):\n  " + "\n  ".join(tail))


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
