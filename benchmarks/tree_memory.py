"""Peak memory of a whole process tree, sampled while it runs.

``ru_maxrss`` from ``wait4`` is the largest single process of a tree, not the tree's total: a command that
forks figure processes (``block_sched/block_sched.py``) would look as small as its largest process. This
samples, every ``interval`` seconds, the sum over the tree (the process and every descendant, found
through ``/proc/<pid>/task/<tid>/children``) of each process's PSS (``/proc/<pid>/smaps_rollup``: its
private pages plus its share of pages it shares, such as the pages a forked child still shares with its
parent), and keeps the largest sum. A peak shorter than the interval can be missed; Linux only (None
elsewhere).
"""

from __future__ import annotations

import threading
from pathlib import Path


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            out += [int(c) for c in (task / "children").read_text().split()]
    except OSError:
        pass
    return out


def _pss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def tree_pss_bytes(root: int) -> int:
    """The summed PSS of ``root`` and its descendants now."""
    total, todo, seen = 0, [root], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += _pss_bytes(pid)
        todo += _children(pid)
    return total


class TreeMemory:
    """``with TreeMemory(pid) as mem: ...``; then ``mem.peak_bytes`` (None where /proc has no smaps_rollup)."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self.pid, self.interval = pid, interval
        self.peak_bytes: int | None = 0 if Path("/proc/self/smaps_rollup").exists() else None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_bytes = max(self.peak_bytes or 0, tree_pss_bytes(self.pid))
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeMemory:
        if self.peak_bytes is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
