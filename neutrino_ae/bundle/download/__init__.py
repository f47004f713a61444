"""Resumable, bounded, verified HTTP download (what fetch uses for the paper's ``trace.zip``).

* **Resume.** Bytes land in ``<dest>.part``; a retry asks for the rest with an HTTP ``Range``
  header and ``If-Range`` (the ETag or Last-Modified of the version we hold the start of), so a
  file replaced on the server comes back whole (200) instead of as a mix of two versions.
  ``<dest>.part.json`` records which URL, version and size a ``.part`` belongs to; a ``.part``
  without that record or of another URL is discarded. A server that ignores ``Range`` (answers
  200) makes us start again from byte 0; a ``416`` for a ``.part`` that already holds the whole
  file counts as complete.
* **Retries** with exponential backoff on dropped connections, read timeouts and 5xx/429. A
  host that cannot be reached at all (connection refused, DNS failure, connect timeout) gets
  only ``CONNECT_RETRIES`` quick retries, so an offline machine fails in seconds, not minutes.
  401/403/404/410 fail at once.
* **Bounded**, whatever the server does: never more bytes than it first announced (a later
  different total is an error) nor than ``max_bytes``; at most ``max_attempts`` attempts even
  when each one makes progress; a connection slower than ``MIN_RATE`` is dropped; an overall
  ``deadline_s``; and, until the server has answered once, ``answer_deadline_s`` for all
  attempts together (a host that accepts connections but never answers is given up in under a
  minute, with a progress line saying so, instead of read timeouts times retries).
* **Integrity.** The sha256 is computed while streaming. With an expected digest a mismatch
  deletes the ``.part`` and raises; without one the digest is *trusted on first use* and
  recorded (``<dest>.sha256``). A ``validate`` callback may reject the complete file before
  anything is recorded (fetch passes the zip validation).
* **Disk.** Free space is checked against ``Content-Length`` before every attempt (resumes
  included), and looked at again every MiB when the size is not announced.
* **Progress** that stays readable in papermill logs (:mod:`.transport`).

This module runs the attempts and verifies the result; one attempt is :mod:`.transport`,
the ``.part`` and its record :mod:`.resume`, the bounds :mod:`.limits`.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_text
from neutrino_ae.bundle.download import limits
from neutrino_ae.bundle.download.limits import (
    CONNECT_BACKOFF_S,
    CONNECT_RETRIES,
    DOWNLOAD_DEADLINE_S,
    MAX_ATTEMPTS,
    MAX_BACKOFF_S,
    MAX_DOWNLOAD_BYTES,
    Budget,
)
from neutrino_ae.bundle.download.resume import Part, sha256_of
from neutrino_ae.bundle.download.transport import Retryable, attempt, note
from neutrino_ae.bundle.leftovers import clean_stale_temp
from neutrino_ae.errors import BundleError, NetworkError

# Default of ``answer_deadline_s``: limits.ANSWER_DEADLINE_S as it is when called, not when imported
# (tests shorten it); None stays "no answer deadline".
_ANSWER_DEADLINE: Any = object()

_sleep = time.sleep  # tests replace this to keep retries instant


def download(url: str, dest: str | os.PathLike[str], sha256: str | None = None, retries: int = 5,
             backoff: float = 1.0, timeout: float | tuple[float, float] = (10.0, 60.0),
             progress: bool = True, *, max_bytes: int = MAX_DOWNLOAD_BYTES, max_attempts: int = MAX_ATTEMPTS,
             deadline_s: float | None = DOWNLOAD_DEADLINE_S, answer_deadline_s: float | None = _ANSWER_DEADLINE,
             validate: Callable[[Path], None] | None = None) -> Path:
    """Download ``url`` to ``dest`` (resuming ``<dest>.part``), verify it, and return ``dest``.

    ``sha256``: expected hex digest; ``None`` trusts the first download and records its digest in
    ``<dest>.sha256`` (``sha256sum`` format). ``retries`` bounds consecutive failed attempts that
    made no progress (an attempt that grew the ``.part`` resets the count); backoff doubles from
    ``backoff`` seconds up to 30 s. ``timeout`` is requests' (connect, read) timeout.
    Whatever the server does, the download ends: after ``max_attempts`` attempts in all, after
    ``deadline_s`` seconds (None: no deadline), after ``answer_deadline_s`` seconds in all when the
    server never answers, and never holding more than ``max_bytes`` bytes
    or more than the size the server first announced. ``validate(path)`` may raise BundleError
    to reject a complete download before its digest is recorded.
    An existing ``dest`` whose digest matches (or any existing ``dest`` when ``sha256`` is None)
    is reused without touching the network.
    """
    path, _digest = download_with_digest(url, dest, sha256=sha256, retries=retries, backoff=backoff,
                                         timeout=timeout, progress=progress, max_bytes=max_bytes,
                                         max_attempts=max_attempts, deadline_s=deadline_s,
                                         answer_deadline_s=answer_deadline_s, validate=validate)
    return path


def download_with_digest(url: str, dest: str | os.PathLike[str], sha256: str | None = None,
                         retries: int = 5, backoff: float = 1.0,
                         timeout: float | tuple[float, float] = (10.0, 60.0),
                         progress: bool = True, *, max_bytes: int = MAX_DOWNLOAD_BYTES,
                         max_attempts: int = MAX_ATTEMPTS, deadline_s: float | None = DOWNLOAD_DEADLINE_S,
                         answer_deadline_s: float | None = _ANSWER_DEADLINE,
                         validate: Callable[[Path], None] | None = None) -> tuple[Path, str]:
    """Like :func:`download` but also return the file's sha256 (hex)."""
    import requests  # imported here: the analyses import this package without needing requests

    if answer_deadline_s is _ANSWER_DEADLINE:
        answer_deadline_s = limits.ANSWER_DEADLINE_S

    dest = Path(dest)
    expected = normalise_digest(sha256, url)
    dest.parent.mkdir(parents=True, exist_ok=True)
    sidecar = dest.with_name(dest.name + ".sha256")
    clean_stale_temp(dest.parent, tmp_of=(sidecar.name, dest.name + ".part.json"), staging=False)

    if dest.is_file():
        digest = _recorded_digest(sidecar, dest) or sha256_of(dest)
        if expected is None or digest == expected:
            return dest, digest
        # A stale or foreign file under our name: fetch afresh, replacing it only once verified.

    part = Part.load(dest, url)
    budget = Budget(max_bytes, deadline_s, answer_deadline_s)
    if budget.waiting_for_answer():
        note(progress, f"contacting {url} (giving up after {answer_deadline_s:g} s without an answer)")
    failures = attempts = 0
    best = part.size
    with requests.Session() as session:
        while True:
            budget.check(url, part)
            attempts += 1
            try:
                digest = attempt(session, url, part, timeout, progress, budget)
                break
            except Retryable as exc:
                size = part.size
                if size > best:
                    best = size
                    if not exc.stalled:  # a trickle grows the .part too, but is no reason to go on
                        failures = 0
                failures += 1
                limit = min(retries, CONNECT_RETRIES) if exc.connect else retries
                if failures > limit:
                    what = "could not connect" if exc.connect else "download kept failing"
                    raise NetworkError(url, f"{what} after {failures} attempts ({exc})") from None
                # Progress resets the count above, so a server that drips a little and drops
                # again would be retried forever; the total number of attempts is bounded too.
                if attempts >= max_attempts:
                    of = f" of {part.total}" if part.total is not None else ""
                    raise NetworkError(url, f"gave up after {attempts} attempts ({size}{of} bytes; last: {exc}); "
                                           "the partial download is kept and resumes on the next run") from None
                # An unreachable host is usually "offline": keep those waits short.
                base = min(backoff, CONNECT_BACKOFF_S) if exc.connect else backoff
                delay = min(MAX_BACKOFF_S, base * 2 ** (failures - 1))
                left = budget.remaining()
                if left is not None and delay >= left:
                    raise budget.expired(url, part) from None
                note(progress, f"retrying {url} in {delay:.1f}s ({exc})")
                _sleep(delay)

    if expected is not None and digest != expected:
        part.discard()
        raise BundleError(url, f"sha256 mismatch: expected {expected}, got {digest}; "
                               "the partial download was deleted")
    if validate is not None:
        try:
            validate(part.path)
        except BundleError as exc:
            # Checked before the digest is recorded: a truncated file or an HTML page served
            # with 200 must not become the archive that later runs trust.
            part.discard()
            raise BundleError(url, f"rejected the downloaded file: {exc.problem}; it was deleted and "
                                   "nothing was recorded; check the URL and run again") from None
    os.replace(part.path, dest)
    write_text(sidecar, f"{digest}  {dest.name}\n")
    part.meta.unlink(missing_ok=True)
    return dest, digest


def normalise_digest(sha256: str | None, url: str) -> str | None:
    if sha256 is None or sha256 == "":
        return None
    digest = sha256.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise BundleError(url, f"expected sha256 {sha256!r} is not 64 hex digits")
    return digest


def _recorded_digest(sidecar: Path, dest: Path) -> str | None:
    # The sidecar is only trusted when it is newer than the file it describes.
    try:
        if sidecar.stat().st_mtime < dest.stat().st_mtime:
            return None
        word = sidecar.read_text(encoding="utf-8").split()[0].lower()
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    return word if re.fullmatch(r"[0-9a-f]{64}", word) else None
