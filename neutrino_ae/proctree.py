"""The processes a process started, all of them: found by walking parent links (``/proc``, psutil elsewhere),
and ended together.

A command the suite runs with a time limit (the ``neutrino`` CLI, a collection script, a tool it queries) may
start children of its own, and those may leave its process group or session (``setsid``, a nested command
started with ``start_new_session``). Killing only the direct child, or only its group, leaves them running
with parent 1 after a timeout; :func:`end_tree` ends the child, its group and every descendant it has.
``run/stop.py`` stops a whole run the same way.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time


def _parents() -> dict[int, int]:
    """pid -> parent pid of every live (not zombie) process, from /proc (psutil elsewhere)."""
    found: dict[int, int] = {}
    if os.path.isdir("/proc/self"):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    stat = fh.read()
            except OSError:
                continue  # gone meanwhile
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses; split after the last ")".
            fields = stat[stat.rfind(b")") + 2:].split()
            if len(fields) > 1 and (fields[0] != b"Z" or _threads_left(entry)):
                found[int(entry)] = int(fields[1])
        return found
    try:
        import psutil
    except ImportError:
        return found
    for proc in psutil.process_iter(["ppid", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE:
            found[proc.pid] = proc.info["ppid"]
    return found


def _threads_left(pid: str) -> bool:
    """A zombie thread-group leader whose other threads still run (a killed multi-threaded process
    tearing down): not ended yet."""
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def descendants(pid: int | None = None, exclude: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """Live (not zombie) descendants of ``pid`` (default: this process), parents first, leaving out
    the children in ``exclude`` and theirs."""
    root = os.getpid() if pid is None else pid
    parents = _parents()
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    out: list[int] = []
    todo = [c for c in children.get(root, []) if c not in exclude]
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def end_tree(proc: subprocess.Popen, grace: float = 0.0) -> None:
    """End ``proc`` (started with ``start_new_session=True``), its process group and every descendant, and
    wait for ``proc``. Descendants are found before anything is signalled (a child killed first would orphan
    its own) and again each round, every one seen signalled until none is left: SIGTERM, up to ``grace`` s,
    then SIGKILL (at once when ``grace`` is 0)."""
    sig = signal.SIGTERM if grace > 0 else signal.SIGKILL
    deadline = time.monotonic() + grace
    seen: set[int] = set()
    for _ in range(500):  # 10 s at most: a process in uninterruptible I/O cannot be helped
        parents = _parents()
        children: dict[int, list[int]] = {}
        for child, parent in parents.items():
            children.setdefault(parent, []).append(child)
        todo = [proc.pid, *seen]
        while todo:  # everything below the child and below any process of it seen before (orphans too)
            for child in children.get(todo.pop(), []):
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, sig)  # the child's group: what it started and did not move elsewhere
        for pid in [proc.pid, *seen]:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        if proc.poll() is not None and not any(pid in parents for pid in seen):
            break
        if sig == signal.SIGTERM and time.monotonic() >= deadline:
            sig = signal.SIGKILL
        time.sleep(0.02)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)




def run_bounded(argv: list[str], timeout: float, **kwargs: object) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, timeout=timeout, **kwargs)`` in a session of its own, whose timeout (or a stop
    of the caller) ends the command with every process it started (:func:`end_tree`), not only the command:
    a browser's renderer and GPU processes, a wrapper's children. Raises ``subprocess.TimeoutExpired``."""
    proc = subprocess.Popen(argv, start_new_session=True, **kwargs)  # type: ignore[call-overload]
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        end_tree(proc)
        with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
            proc.communicate(timeout=5)
        raise
    except BaseException:
        end_tree(proc)
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)
