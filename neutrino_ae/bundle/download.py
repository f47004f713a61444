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
* **Progress** that stays readable in papermill logs (see :func:`_progress_bar`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_json, write_text
from neutrino_ae.bundle import disk
from neutrino_ae.bundle.disk import CHUNK, DISK_SLACK, check_disk, human
from neutrino_ae.bundle.leftovers import clean_stale_temp
from neutrino_ae.errors import BundleError

CONNECT_RETRIES = 2
CONNECT_BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0
# While a download of unannounced size is written, free space is looked at again this often.
DISK_RECHECK_BYTES = CHUNK
# Bounds that end a download whatever the server does (a .part that grows a little per attempt
# would otherwise reset the retry count forever, and a 1 byte/s trickle never times out).
MAX_DOWNLOAD_BYTES = 64 << 30
MAX_ATTEMPTS = 50
DOWNLOAD_DEADLINE_S = 8 * 3600.0
# Until the server's first answer (status line and headers), all attempts together get this long.
ANSWER_DEADLINE_S = 45.0
# Default of ``answer_deadline_s``: ANSWER_DEADLINE_S as it is when called, not when imported (tests
# shorten it); None stays "no answer deadline".
_ANSWER_DEADLINE: Any = object()
# A connection delivering less than MIN_RATE bytes/s over STALL_WINDOW_S is dropped and retried.
MIN_RATE = 1024
STALL_WINDOW_S = 300.0

_FATAL_STATUS = {401: "unauthorised", 403: "forbidden", 404: "not found", 410: "gone"}

_sleep = time.sleep  # tests replace this to keep retries instant
_now = time.monotonic


class _Retryable(Exception):
    """A transient failure; ``connect`` marks failures to reach the host at all, ``stalled`` a
    connection too slow to be worth keeping (its few bytes do not count as progress)."""

    def __init__(self, message: str, connect: bool = False, stalled: bool = False) -> None:
        super().__init__(message)
        self.connect = connect
        self.stalled = stalled


@dataclass
class _Part:
    """What the bytes in ``<dest>.part`` are: which URL, which version of it, how big in all.

    Recorded in ``<dest>.part.json`` before the first byte is written, so that a later run only
    resumes a ``.part`` of the same URL, asks with ``If-Range`` for the same version, and holds
    the server to the size it first announced.
    """

    path: Path
    meta: Path
    url: str
    etag: str | None = None
    last_modified: str | None = None
    total: int | None = None

    @classmethod
    def load(cls, dest: Path, url: str) -> _Part:
        part = cls(dest.with_name(dest.name + ".part"), dest.with_name(dest.name + ".part.json"), url)
        try:
            doc = json.loads(part.meta.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            doc = None
        if isinstance(doc, dict) and doc.get("url") == url:
            part.etag = doc["etag"] if isinstance(doc.get("etag"), str) else None
            part.last_modified = doc["last_modified"] if isinstance(doc.get("last_modified"), str) else None
            total = doc.get("total")
            part.total = total if isinstance(total, int) and not isinstance(total, bool) and total >= 0 else None
            if part.total is not None and part.size > part.total:
                part.discard()  # longer than the file it claims to be the start of
        elif part.path.exists() or part.meta.exists():
            # No record (an older version, or killed before the record was written) or another
            # URL's: appending our bytes to these would build a file that never existed.
            part.discard()
        return part

    @property
    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def save(self) -> None:
        write_json(self.meta, {"url": self.url, "etag": self.etag, "last_modified": self.last_modified,
                               "total": self.total})

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)
        self.meta.unlink(missing_ok=True)
        self.etag = self.last_modified = None
        self.total = None

    def resume_validator(self) -> str | None:
        """The If-Range value: a strong ETag (weak ones are not allowed there), else the date."""
        if self.etag and not self.etag.startswith("W/"):
            return self.etag
        return self.last_modified


@dataclass
class _Budget:
    """Bounds that hold across all attempts of one download: bytes in all and wall-clock time."""

    max_bytes: int
    deadline_s: float | None
    answer_deadline_s: float | None = None
    answered: bool = False  # set when the server first sends a status line and headers
    started: float = field(default_factory=lambda: _now())

    def remaining(self) -> float | None:
        elapsed = _now() - self.started
        lefts = [d - elapsed for d in (self.deadline_s, None if self.answered else self.answer_deadline_s)
                 if d is not None]
        return min(lefts) if lefts else None

    def waiting_for_answer(self) -> bool:
        return (not self.answered and self.answer_deadline_s is not None
                and (self.deadline_s is None or self.answer_deadline_s <= self.deadline_s))

    def check(self, url: str, part: _Part) -> None:
        left = self.remaining()
        if left is not None and left <= 0:
            raise self.expired(url, part)

    def expired(self, url: str, part: _Part) -> BundleError:
        if self.waiting_for_answer():
            return BundleError(url, f"no answer within {self.answer_deadline_s:g} s (the host accepts connections "
                                    "but sends nothing back); check the URL and the network, or try again later")
        of = f" of {part.total}" if part.total is not None else ""
        return BundleError(url, f"not finished within {self.deadline_s:g} s ({part.size}{of} bytes so far; "
                                "the server is too slow or stalls); the partial download is kept and "
                                "resumes on the next run")

    def clamp(self, timeout: float | tuple[float, float]) -> float | tuple[float, float]:
        """requests' timeouts bound each socket wait; never let one outlast the deadline."""
        left = self.remaining()
        if left is None:
            return timeout
        left = max(left, 0.05)
        if isinstance(timeout, tuple):
            return (min(timeout[0], left), min(timeout[1], left))
        return min(timeout, left)


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
        answer_deadline_s = ANSWER_DEADLINE_S

    dest = Path(dest)
    expected = normalise_digest(sha256, url)
    dest.parent.mkdir(parents=True, exist_ok=True)
    sidecar = dest.with_name(dest.name + ".sha256")
    clean_stale_temp(dest.parent, tmp_of=(sidecar.name, dest.name + ".part.json"), staging=False)

    if dest.is_file():
        digest = _recorded_digest(sidecar, dest) or _sha256_of(dest)
        if expected is None or digest == expected:
            return dest, digest
        # A stale or foreign file under our name: fetch afresh, replacing it only once verified.

    part = _Part.load(dest, url)
    budget = _Budget(max_bytes, deadline_s, answer_deadline_s)
    if budget.waiting_for_answer():
        note(progress, f"contacting {url} (giving up after {answer_deadline_s:g} s without an answer)")
    failures = attempts = 0
    best = part.size
    with requests.Session() as session:
        while True:
            budget.check(url, part)
            attempts += 1
            try:
                digest = _attempt(session, url, part, timeout, progress, budget)
                break
            except _Retryable as exc:
                size = part.size
                if size > best:
                    best = size
                    if not exc.stalled:  # a trickle grows the .part too, but is no reason to go on
                        failures = 0
                failures += 1
                limit = min(retries, CONNECT_RETRIES) if exc.connect else retries
                if failures > limit:
                    what = "could not connect" if exc.connect else "download kept failing"
                    raise BundleError(url, f"{what} after {failures} attempts ({exc})") from None
                # Progress resets the count above, so a server that drips a little and drops
                # again would be retried forever; the total number of attempts is bounded too.
                if attempts >= max_attempts:
                    of = f" of {part.total}" if part.total is not None else ""
                    raise BundleError(url, f"gave up after {attempts} attempts ({size}{of} bytes; last: {exc}); "
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


def _attempt(session: Any, url: str, part: _Part, timeout: Any, progress: bool, budget: _Budget) -> str:
    """One GET; appends to ``part``; returns the digest of the complete file or raises."""
    import http.client

    import requests
    from urllib3.exceptions import HTTPError as Urllib3Error

    have = part.size
    # identity: a transparently gzip-decoded body would make byte offsets meaningless for Range.
    headers = {"Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
        validator = part.resume_validator()
        if validator:
            # The server sends the rest only if the file is still the version we hold the start
            # of; if it changed we get all of the new one (200) instead of a mix of both.
            headers["If-Range"] = validator
    try:
        resp = session.get(url, headers=headers, stream=True, timeout=budget.clamp(timeout),
                           allow_redirects=True)
    except (requests.exceptions.ConnectTimeout, requests.exceptions.ProxyError) as exc:
        raise _Retryable(_short(exc), connect=True) from None
    except requests.exceptions.ConnectionError as exc:
        raise _Retryable(_short(exc), connect=_is_unreachable(exc)) from None
    except requests.exceptions.Timeout as exc:
        raise _Retryable(_short(exc)) from None
    except requests.exceptions.RequestException as exc:
        raise BundleError(url, f"request failed: {_short(exc)}") from None
    budget.answered = True

    with resp:
        status = resp.status_code
        if status in _FATAL_STATUS:
            raise BundleError(url, f"HTTP {status} ({_FATAL_STATUS[status]}); check the URL")
        if status == 429 or status >= 500:
            raise _Retryable(f"HTTP {status}")
        etag = resp.headers.get("ETag")
        record_changed = False
        if status == 416:
            total = _content_range_total(resp.headers.get("Content-Range", ""))
            if have and (total is None or total == have) and (part.total is None or part.total == have):
                return _sha256_of(part.path)  # the .part already holds every byte
            part.discard()
            raise _Retryable(f"HTTP 416 with {have} bytes on disk but {total} on the server; restarting")
        if status == 206:
            start = _content_range_start(resp.headers.get("Content-Range", ""))
            if start != have:
                part.discard()
                raise _Retryable(f"server resumed at byte {start}, not {have}; restarting")
            if part.etag and etag and etag != part.etag:
                # A server that ignores If-Range but names the version it is sending.
                part.discard()
                raise _Retryable(f"server sent the rest of another version (ETag {etag}, not {part.etag}); "
                                 "restarting")
            total = _content_range_total(resp.headers.get("Content-Range", ""))
            if total is not None and part.total is not None and total != part.total:
                # Without this a server that announces a growing total and drops the connection
                # keeps the .part growing, and the retry budget resetting, forever.
                announced = part.total
                part.discard()
                raise BundleError(url, f"the server first announced {announced} bytes and now {total}; the "
                                       "file changed during the download or the server misbehaves; the "
                                       "partial download was deleted, run again")
            if have == 0:  # a 206 to a request without Range: this answer starts the record
                part.etag, part.last_modified = etag, resp.headers.get("Last-Modified")
            if total is None:
                total = part.total
            elif part.total is None or have == 0:
                part.total, record_changed = total, True
            mode = "ab"
        elif status == 200:
            if have:
                note(progress, f"{url}: server ignored the Range request or the file changed; "
                                "restarting from byte 0")
            have = 0
            length = resp.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            # A fresh start: this answer's version and size are what later resumes must match.
            part.etag, part.last_modified, part.total = etag, resp.headers.get("Last-Modified"), total
            mode = "wb"
        else:
            raise BundleError(url, f"unexpected HTTP {status} {resp.reason or ''}".rstrip())

        if total is not None and total > budget.max_bytes:
            raise BundleError(url, f"the server announces {total} bytes, more than the limit of "
                                   f"{budget.max_bytes} bytes ({human(budget.max_bytes)}); not downloading")
        # Checked on every attempt, resumes included: the disk may have filled since the last one.
        check_disk(part.path.parent, max(0, (total if total is not None else 0) - have), url)
        if mode == "wb" or have == 0 or record_changed or not part.meta.exists():
            part.save()  # before the first byte, so the .part is never without its record
        cap = budget.max_bytes if total is None else total
        hasher = hashlib.sha256()
        if mode == "ab":
            _hash_into(hasher, part.path)
        received = have
        next_disk_check = received + DISK_RECHECK_BYTES
        window_start, window_bytes = _now(), received
        overflow = False
        # read1 returns whatever one socket read gave, so the deadline is checked between small
        # reads; iter_content(1 MiB) blocks until a whole MiB arrived (a trickle never ends) and
        # loses a partly filled chunk when the connection drops.
        raw = resp.raw
        read: Callable[[], bytes]
        if hasattr(raw, "read1"):
            def read() -> bytes:
                return bytes(raw.read1(CHUNK, decode_content=True))
        else:  # urllib3 1.x
            chunks = resp.iter_content(64 << 10)

            def read() -> bytes:
                return next(chunks, b"")
        read_errors = (Urllib3Error, requests.exceptions.RequestException, http.client.HTTPException,
                       ConnectionError, TimeoutError)
        bar = _progress_bar(progress, total, have, part.path.name.removesuffix(".part"))
        try:
            with open(part.path, mode) as fh:
                while True:
                    budget.check(url, part)
                    try:
                        chunk = read()
                    except read_errors as exc:
                        raise _Retryable(f"connection dropped after {received} bytes ({_short(exc)})") from None
                    if not chunk:
                        break
                    if received + len(chunk) > cap:
                        overflow = True
                        break
                    try:
                        fh.write(chunk)
                    except OSError as exc:
                        raise BundleError(part.path, f"cannot write the download: {exc.strerror or exc}") from None
                    hasher.update(chunk)
                    received += len(chunk)
                    if bar is not None:
                        bar.update(len(chunk))
                    now = _now()
                    if now - window_start >= STALL_WINDOW_S:
                        # Like curl's --speed-limit: a server that trickles never trips the
                        # read timeout; without this only the overall deadline would end it.
                        rate = (received - window_bytes) / (now - window_start)
                        if rate < MIN_RATE:
                            raise _Retryable(f"too slow: {rate:.0f} B/s over {now - window_start:.0f} s, below "
                                             f"{MIN_RATE} B/s", stalled=True)
                        window_start, window_bytes = now, received
                    if total is None and received >= next_disk_check:
                        # Size unknown, so the check up front could not cover it: look again.
                        next_disk_check = received + DISK_RECHECK_BYTES
                        _check_free_while_writing(part.path.parent, url)
                fh.flush()
                os.fsync(fh.fileno())
        finally:
            if bar is not None:
                bar.close()
        if overflow:
            part.discard()
            what = (f"the {total} bytes it announced" if total is not None
                    else f"the limit of {budget.max_bytes} bytes ({human(budget.max_bytes)})")
            raise BundleError(url, f"the server sent more than {what}; the partial download was deleted")
        if total is not None and received != total:
            raise _Retryable(f"connection closed after {received} of {total} bytes")
        return hasher.hexdigest()


def _is_unreachable(exc: BaseException) -> bool:
    """Refused, DNS failure, no route: the host cannot be reached at all (as opposed to a reset)."""
    from urllib3.exceptions import NewConnectionError

    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, NewConnectionError) or isinstance(exc.args[0] if exc.args else None,
                                                                NewConnectionError)


def _progress_bar(enabled: bool, total: int | None, initial: int, name: str) -> Any:
    """A tqdm bar on stderr that stays readable in logs.

    papermill forwards every stderr write of the kernel as one log record (``--log-output``) and
    Jupyter collapses ``\\r`` updates in the saved notebook. tqdm's default 0.1 s refresh would
    turn a 1.5 GB download into thousands of log lines, so when stderr is not a terminal we
    refresh at most every 5 s with a fixed-width ASCII bar: a few hundred short, readable lines.
    In a terminal it behaves like a normal bar.
    """
    if not enabled:
        return None
    from tqdm import tqdm

    interactive = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    return tqdm(total=total, initial=initial, unit="B", unit_scale=True, unit_divisor=1024,
                desc=name, file=sys.stderr, mininterval=0.5 if interactive else 5.0,
                ascii=not interactive, ncols=None if interactive else 90, leave=True)


def note(progress: bool, message: str) -> None:
    """A progress message on stderr (when ``progress``)."""
    if progress:
        print(message, file=sys.stderr, flush=True)


def _short(exc: BaseException) -> str:
    """The innermost useful part of a requests/urllib3 error, on one line."""
    text = str(exc)
    for pattern in (r"\[Errno -?\d+\] [^'\")]+", r"Failed to resolve '[^']+'", r"Read timed out[^)]*",
                    r"IncompleteRead\([^)]*\)", r"Connection refused"):
        m = re.search(pattern, text)
        if m:
            return m.group(0).strip()
    return " ".join(text.split())[:200] or type(exc).__name__


def _content_range_start(value: str) -> int | None:
    m = re.match(r"\s*bytes\s+(\d+)-\d+/(\d+|\*)", value)
    return int(m.group(1)) if m else None


def _content_range_total(value: str) -> int | None:
    m = re.match(r"\s*bytes\s+(?:\d+-\d+|\*)/(\d+)", value)
    return int(m.group(1)) if m else None


def normalise_digest(sha256: str | None, url: str) -> str | None:
    if sha256 is None or sha256 == "":
        return None
    digest = sha256.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise BundleError(url, f"expected sha256 {sha256!r} is not 64 hex digits")
    return digest


def _hash_into(hasher: Any, path: Path) -> None:
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK):
            hasher.update(block)


def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    _hash_into(h, path)
    return h.hexdigest()


def _recorded_digest(sidecar: Path, dest: Path) -> str | None:
    # The sidecar is only trusted when it is newer than the file it describes.
    try:
        if sidecar.stat().st_mtime < dest.stat().st_mtime:
            return None
        word = sidecar.read_text(encoding="utf-8").split()[0].lower()
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    return word if re.fullmatch(r"[0-9a-f]{64}", word) else None


def _check_free_while_writing(directory: Path, what: str) -> None:
    free = disk.free_bytes(directory)
    if free < DISK_SLACK:
        raise BundleError(what, f"free space on {directory} fell to {human(free)} while downloading (the "
                                "server did not announce the size); free some space or choose another "
                                "--trace-root; the partial download is kept")
