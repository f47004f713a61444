"""What killed runs leave behind (extraction staging folders, atomic-write temp files), and the
rule that removes them at the next start without touching the files of a run still going."""

from __future__ import annotations

import os
import re
import shutil
import socket
import time
from pathlib import Path

# Leftovers of a killed run that carry no owner (atomic-write temp files, staging folders of
# older versions) are removed once this old; nothing of ours lives that long unowned.
STALE_AFTER_S = 30 * 60.0
# A staging folder whose owner pid is alive is kept, except past this age: no extraction takes
# a day, so by then the pid has been reused by an unrelated process.
STALE_OWNED_AFTER_S = 24 * 3600.0

_HOST = re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname())[:40] or "host"
# .extract-<pid>-<host>-<random>: mkdtemp's random part has no "-", the sanitised host neither.
_STAGING = re.compile(r"^\.extract-(\d+)-([A-Za-z0-9._]+)-[^-]+$")


def staging_prefix(pid: int | None = None) -> str:
    """Name prefix of an extraction staging folder: owner pid and host, for :func:`clean_stale_temp`."""
    return f".extract-{os.getpid() if pid is None else pid}-{_HOST}-"


def clean_stale_temp(directory: str | os.PathLike[str], tmp_of: tuple[str, ...] = (),
                     staging: bool = True) -> list[Path]:
    """Remove what killed runs left in ``directory`` (top level only); return what was removed.

    * ``.extract-*`` staging folders (unless ``staging`` is False): one named after a process of
      this host that no longer exists goes at once; one whose owner lives (a concurrent run,
      however long it takes) stays until ``STALE_OWNED_AFTER_S`` (pid reuse); one of another
      host or without an owner (older versions) goes once ``STALE_AFTER_S`` old.
    * temp files of atomic writes (:mod:`neutrino_ae.atomic`: ``.<stem>.tmp-*``, no owner
      recorded) of the files named in ``tmp_of`` only, so nobody else's ``.tmp-`` file is
      touched; they go once ``STALE_AFTER_S`` old, while a live write takes well under a second.

    ``.part`` downloads are not leftovers: the next run resumes them.
    """
    tmp_prefixes = tuple(f".{Path(name).stem}.tmp-" for name in tmp_of)
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        name = entry.name
        try:
            if staging and name.startswith(".extract-") and entry.is_dir(follow_symlinks=False):
                m = _STAGING.match(name)
                age = now - entry.stat(follow_symlinks=False).st_mtime
                if m and m.group(2) == _HOST and os.name == "posix":
                    stale = not _pid_alive(int(m.group(1))) or age > STALE_OWNED_AFTER_S
                else:
                    stale = age > STALE_AFTER_S
                if stale:
                    shutil.rmtree(entry.path, ignore_errors=True)
                    removed.append(Path(entry.path))
            elif tmp_prefixes and name.startswith(tmp_prefixes) and entry.is_file(follow_symlinks=False):
                if now - entry.stat(follow_symlinks=False).st_mtime > STALE_AFTER_S:
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
        except OSError:
            continue  # vanished meanwhile, or not ours to remove: leave it
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0 sends nothing; it only asks whether the process exists
    except ProcessLookupError:
        return False
    except (OverflowError, ValueError):
        return False  # no process can have this number
    except OSError:
        return True  # EPERM: it exists but belongs to someone else
    return True
