"""How much memory this process may still use, for readers that size their chunks to it.

:func:`available_memory` takes the tightest of what applies:

* ``RLIMIT_AS`` (``ulimit -v``): the soft limit less the process's present address space (``VmSize``);
  every allocation, mapped or not, counts against it;
* the cgroup's limit (v2 ``memory.max`` of the process's cgroup and its parents, or v1
  ``memory.limit_in_bytes``) less its usage, reclaimable page cache (``inactive_file``) counted as free;
* the machine's ``MemAvailable`` (``/proc/meminfo``).

A reader that cannot fit raises :class:`~neutrino_ae.errors.ResourceError` through :func:`refuse`:
one line with how much it needs, how much there is and which limit says so.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from pathlib import Path

from neutrino_ae.errors import ResourceError

MB = 1_000_000
_CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class MemoryLimit:
    """Bytes this process may still allocate (``None``: no limit found) and the limit that says so."""

    available: int | None
    source: str
    in_use: int = 0  # what the process already holds that counts against that limit

    def fits(self, need: int) -> bool:
        return self.available is None or need <= self.available


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:  # "max", or garbage
        return None


def _status_kb(field: str, status: str | None = None) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (``VmSize``, ``VmRSS``), in bytes."""
    for line in (status if status is not None else _read(Path("/proc/self/status")) or "").splitlines():
        if line.startswith(field + ":"):
            parts = line.split()
            return int(parts[1]) * 1024 if len(parts) > 1 and parts[1].isdigit() else None
    return None


def _stat_field(text: str | None, field: str) -> int:
    for line in (text or "").splitlines():
        key, _, value = line.partition(" ")
        if key == field and value.strip().isdigit():
            return int(value)
    return 0


def _rlimit_as() -> tuple[int, int] | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    used = _status_kb("VmSize")
    return None if used is None else (max(0, soft - used), used)


def _cgroup_v2() -> int | None:
    """The least headroom of the process's cgroup and its parents (v2)."""
    rel = next((line[3:] for line in (_read(Path("/proc/self/cgroup")) or "").splitlines()
                if line.startswith("0::")), None)
    if rel is None:
        return None
    best = None
    d = _CGROUP_ROOT / rel.strip().lstrip("/")
    while True:
        limit, current = _int(_read(d / "memory.max")), _int(_read(d / "memory.current"))
        if limit is not None and current is not None:
            room = max(0, limit - current + _stat_field(_read(d / "memory.stat"), "inactive_file"))
            best = room if best is None else min(best, room)
        if d == _CGROUP_ROOT or d.parent == d:
            return best
        d = d.parent


def _cgroup_v1() -> int | None:
    d = _CGROUP_ROOT / "memory"
    limit, usage = _int(_read(d / "memory.limit_in_bytes")), _int(_read(d / "memory.usage_in_bytes"))
    if limit is None or usage is None or limit >= 1 << 62:  # "no limit" is a page-rounded 2**63 - 1
        return None
    return max(0, limit - usage + _stat_field(_read(d / "memory.stat"), "total_inactive_file"))


def _mem_available() -> int | None:
    for line in (_read(Path("/proc/meminfo")) or "").splitlines():
        if line.startswith("MemAvailable:"):
            parts = line.split()
            return int(parts[1]) * 1024 if len(parts) > 1 and parts[1].isdigit() else None
    return None


def available_memory() -> MemoryLimit:
    """The tightest of RLIMIT_AS, the cgroup limit and MemAvailable (see the module docstring)."""
    rss = _status_kb("VmRSS") or 0
    found: list[MemoryLimit] = []
    as_room = _rlimit_as()
    if as_room is not None:
        found.append(MemoryLimit(as_room[0], "RLIMIT_AS (ulimit -v)", as_room[1]))
    for room, source in ((_cgroup_v2(), "the cgroup's memory.max"),
                         (_cgroup_v1(), "the cgroup's memory.limit_in_bytes"), (_mem_available(), "MemAvailable")):
        if room is not None:
            found.append(MemoryLimit(room, source, rss))
    if not found:
        return MemoryLimit(None, "no limit found")
    return min(found, key=lambda m: m.available or 0)


def refuse(path: str | os.PathLike[str] | None, what: str, need: int, limit: MemoryLimit,
           at_least: bool = False) -> ResourceError:
    """The one-line error of a reader that needs ``need`` bytes more (``at_least``: or more, the whole not
    yet known) where ``limit`` allows less."""
    if limit.available is None:
        room = "no limit was found"
    else:
        room = (f"{limit.available // MB:,} MB available under {limit.source}, "
                f"{limit.in_use // MB:,} MB already in use")
    about = "at least" if at_least else "about"
    return ResourceError(path, f"not enough memory: {what} needs {about} {-(-need // MB):,} MB more; "
                               f"{room} ({about} {-(-(need + limit.in_use) // MB):,} MB needed in all)")


def ensure_fits(path: str | os.PathLike[str] | None, what: str, need: int) -> None:
    """Refuse, before a reader allocates ``need`` bytes in proportion to a header's counts, when they do not
    fit: one :func:`refuse` line, exit 5, instead of numpy's ``_ArrayMemoryError`` part-way (issue 36). A
    trace the reader has mapped already counts in the address space in use (``ulimit -v``)."""
    limit = available_memory()
    if not limit.fits(need):
        raise refuse(path, what, need, limit)
