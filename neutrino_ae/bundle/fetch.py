"""Fetching trace bundles: resumable, verified download of the paper's ``trace.zip`` and safe extraction.

Replaces the original notebook's ``wget`` + ``unzip`` shell-outs. What this adds:

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
  when each one makes progress; a connection slower than ``MIN_RATE`` is dropped; and an
  overall ``deadline_s``.
* **Integrity.** The sha256 is computed while streaming. With an expected digest a mismatch
  deletes the ``.part`` and raises; without one the digest is *trusted on first use* and
  recorded (``<dest>.sha256`` and the bundle manifest) so later runs can be compared. Before
  anything is recorded the archive is validated (:func:`validate_zip`: directory readable,
  every member's CRC good), so a truncated file or an HTML page served with 200 is never trusted.
* **Disk.** Free space is checked against ``Content-Length`` before every attempt (resumes
  included), looked at again every MiB when the size is not announced, and checked against the
  archive's total uncompressed size before extraction.
* **Progress** that stays readable in papermill logs (see :func:`_progress_bar`).
* **Safe extraction** (:func:`extract_zip`): no absolute paths, drive letters, ``..``
  components, symlinks or special files, no duplicate names, no zip bombs (total size and
  compression ratio bounded by :class:`ExtractLimits`, from the directory and again while
  writing); everything is extracted into a temporary directory beside the destination and only
  then moved into place.
* **Leftovers** of a killed run (staging folders, temp files) are removed by the next one
  (:func:`clean_stale_temp`), never those of a run still going.

Bundle root rule: the paper's archive is extracted straight into ``trace_root`` so that
``trace_root/block_sched/...`` etc. exist (the original notebook ran ``unzip`` in the repo root
and then read ``block_sched/...``). If the archive instead wraps everything in a single
top-level folder (``trace/block_sched/...``) that folder is stripped, unless its name is itself
a section folder (an archive holding only ``dmat/`` keeps it).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_json, write_text
from neutrino_ae.bundle.manifest import (
    MANIFEST,
    PAPER,
    SAMPLE,
    SAMPLE_LAYOUT_MARKER,
    read_manifest,
    sample_layout_root,
    write_manifest,
)
from neutrino_ae.errors import BundleError

PAPER_BUNDLE_URL = "https://pub-eef24bf0aa5b4950860ea28dfbe39d8c.r2.dev/trace.zip"

# Top-level folders of the paper's trace.zip (see docs/DESIGN.md, "Sample bundle layout").
SECTION_DIRS = ("block_sched", "dmat", "kernel_overhead", "max_mem", "exposed_latency", "warp_sched")

DOWNLOAD_DIR = ".download"  # hidden, so bundle.file_digests() leaves the archive out
ARCHIVE_NAME = "trace.zip"
CONNECT_RETRIES = 2
CONNECT_BACKOFF_S = 0.5
CHUNK = 1 << 20
MAX_BACKOFF_S = 30.0
# Slack on disk checks: filesystems need some room for metadata, and running a disk to exactly
# zero breaks everything else on the machine.
DISK_SLACK = 64 << 20
# While a download of unannounced size is written, free space is looked at again this often.
DISK_RECHECK_BYTES = CHUNK
# Bounds that end a download whatever the server does (a .part that grows a little per attempt
# would otherwise reset the retry count forever, and a 1 byte/s trickle never times out).
MAX_DOWNLOAD_BYTES = 64 << 30
MAX_ATTEMPTS = 50
DOWNLOAD_DEADLINE_S = 8 * 3600.0
# A connection delivering less than MIN_RATE bytes/s over STALL_WINDOW_S is dropped and retried.
MIN_RATE = 1024
STALL_WINDOW_S = 300.0
# Zip bomb bounds (see ExtractLimits). Real trace data compresses a few times, a deflate bomb
# about 1000 times; 200 leaves room for very repetitive traces.
MAX_EXTRACT_BYTES = 64 << 30
MAX_RATIO = 200.0
RATIO_ABOVE = 64 << 20
# Leftovers of a killed run that carry no owner (atomic-write temp files, staging folders of
# older versions) are removed once this old; nothing of ours lives that long unowned.
STALE_AFTER_S = 30 * 60.0
# A staging folder whose owner pid is alive is kept, except past this age: no extraction takes
# a day, so by then the pid has been reused by an unrelated process.
STALE_OWNED_AFTER_S = 24 * 3600.0

_FATAL_STATUS = {401: "unauthorised", 403: "forbidden", 404: "not found", 410: "gone"}

SAMPLE_HINT = (
    'to run offline on synthetic data use bundle="sample" (notebook parameter `-p bundle sample`, '
    "or `python -m neutrino_ae sample --out <trace_root>`)"
)


# --------------------------------------------------------------------------------------------- download


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
    started: float = field(default_factory=lambda: _now())

    def remaining(self) -> float | None:
        return None if self.deadline_s is None else self.deadline_s - (_now() - self.started)

    def check(self, url: str, part: _Part) -> None:
        left = self.remaining()
        if left is not None and left <= 0:
            raise self.expired(url, part)

    def expired(self, url: str, part: _Part) -> BundleError:
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
             deadline_s: float | None = DOWNLOAD_DEADLINE_S,
             validate: Callable[[Path], None] | None = None) -> Path:
    """Download ``url`` to ``dest`` (resuming ``<dest>.part``), verify it, and return ``dest``.

    ``sha256``: expected hex digest; ``None`` trusts the first download and records its digest in
    ``<dest>.sha256`` (``sha256sum`` format). ``retries`` bounds consecutive failed attempts that
    made no progress (an attempt that grew the ``.part`` resets the count); backoff doubles from
    ``backoff`` seconds up to 30 s. ``timeout`` is requests' (connect, read) timeout.
    Whatever the server does, the download ends: after ``max_attempts`` attempts in all, after
    ``deadline_s`` seconds (None: no deadline), and never holding more than ``max_bytes`` bytes
    or more than the size the server first announced. ``validate(path)`` may raise BundleError
    to reject a complete download before its digest is recorded.
    An existing ``dest`` whose digest matches (or any existing ``dest`` when ``sha256`` is None)
    is reused without touching the network.
    """
    path, _digest = download_with_digest(url, dest, sha256=sha256, retries=retries, backoff=backoff,
                                         timeout=timeout, progress=progress, max_bytes=max_bytes,
                                         max_attempts=max_attempts, deadline_s=deadline_s, validate=validate)
    return path


def download_with_digest(url: str, dest: str | os.PathLike[str], sha256: str | None = None,
                         retries: int = 5, backoff: float = 1.0,
                         timeout: float | tuple[float, float] = (10.0, 60.0),
                         progress: bool = True, *, max_bytes: int = MAX_DOWNLOAD_BYTES,
                         max_attempts: int = MAX_ATTEMPTS, deadline_s: float | None = DOWNLOAD_DEADLINE_S,
                         validate: Callable[[Path], None] | None = None) -> tuple[Path, str]:
    """Like :func:`download` but also return the file's sha256 (hex)."""
    import requests  # imported here: the analyses import this package without needing requests

    dest = Path(dest)
    expected = _normalise_digest(sha256, url)
    dest.parent.mkdir(parents=True, exist_ok=True)
    sidecar = dest.with_name(dest.name + ".sha256")
    clean_stale_temp(dest.parent, tmp_of=(sidecar.name, dest.name + ".part.json"), staging=False)

    if dest.is_file():
        digest = _recorded_digest(sidecar, dest) or _sha256_of(dest)
        if expected is None or digest == expected:
            return dest, digest
        # A stale or foreign file under our name: fetch afresh, replacing it only once verified.

    part = _Part.load(dest, url)
    budget = _Budget(max_bytes, deadline_s)
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
                _note(progress, f"retrying {url} in {delay:.1f}s ({exc})")
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
                _note(progress, f"{url}: server ignored the Range request or the file changed; "
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
                                   f"{budget.max_bytes} bytes ({_human(budget.max_bytes)}); not downloading")
        # Checked on every attempt, resumes included: the disk may have filled since the last one.
        _check_disk(part.path.parent, max(0, (total if total is not None else 0) - have), url)
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
                    else f"the limit of {budget.max_bytes} bytes ({_human(budget.max_bytes)})")
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


def _note(progress: bool, message: str) -> None:
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


def _normalise_digest(sha256: str | None, url: str) -> str | None:
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


def _free_bytes(directory: Path) -> int:
    return shutil.disk_usage(directory).free


def _check_disk(directory: Path, needed: int, what: str | os.PathLike[str]) -> None:
    free = _free_bytes(directory)
    if needed + DISK_SLACK > free:
        raise BundleError(what, f"needs {_human(needed)} of disk but {directory} has only {_human(free)} "
                                "free; free some space or choose another --trace-root")


def _check_free_while_writing(directory: Path, what: str) -> None:
    free = _free_bytes(directory)
    if free < DISK_SLACK:
        raise BundleError(what, f"free space on {directory} fell to {_human(free)} while downloading (the "
                                "server did not announce the size); free some space or choose another "
                                "--trace-root; the partial download is kept")


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


# ---------------------------------------------------------------------------------------------- extract

_DRIVE = re.compile(r"^[A-Za-z]:")


def _member_parts(info: zipfile.ZipInfo, archive: Path) -> tuple[str, ...]:
    """The validated path components of a member; raises on anything that could escape."""
    name = info.filename
    bad = None
    if not name or "\x00" in name:
        bad = "an empty or NUL-containing name"
    elif name.startswith(("/", "\\")):
        bad = "an absolute path"
    elif _DRIVE.match(name):
        bad = "a drive letter"
    elif any(p == ".." for p in re.split(r"[/\\]", name)):
        bad = "a '..' component"
    if bad:
        raise BundleError(archive, f"refusing entry {name!r}: {bad}")
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        raise BundleError(archive, f"refusing entry {name!r}: a symbolic link")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise BundleError(archive, f"refusing entry {name!r}: not a regular file or directory")
    parts = tuple(p for p in re.split(r"[/\\]", name) if p not in ("", "."))
    if not parts:
        raise BundleError(archive, f"refusing entry {name!r}: no usable path")
    return parts


@dataclass(frozen=True)
class ExtractLimits:
    """What an archive may expand to, against zip bombs (a few MB that inflate to many GB).

    ``max_bytes``: uncompressed bytes in all. ``max_ratio``: uncompressed size over the
    archive's size on disk, enforced once more than ``ratio_above`` bytes would be written
    (a small archive of zeros is harmless). Both are checked from the central directory
    first and again while writing, since the directory can lie.
    """

    max_bytes: int = MAX_EXTRACT_BYTES
    max_ratio: float = MAX_RATIO
    ratio_above: int = RATIO_ABOVE


def _open_zip(archive: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, NotImplementedError, ValueError, EOFError) as exc:
        # Not only BadZipFile: a garbled directory also gives NotImplementedError ("zip file
        # version 10.5") or UnicodeDecodeError (a name flagged UTF-8 that is not).
        problem = "not a valid zip archive (truncated or corrupt download?)"
        page = _page_kind(archive)
        if page:
            problem = f"an {page}, not a zip archive (a login or error page served with HTTP 200?)"
        raise BundleError(archive, f"{problem}: {' '.join(str(exc).split())[:200]}") from None
    except OSError as exc:
        raise BundleError(archive, f"cannot read: {exc.strerror or exc}") from None


def _page_kind(path: Path) -> str | None:
    """"HTML page" or "XML document" when ``path`` starts like one (what a server answers with
    200 in place of a file: a sign-in page, an S3-style XML error), else None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1024).lstrip().lower()
    except OSError:
        return None
    if head.startswith((b"<!doctype html", b"<html", b"<head")) or b"<html" in head:
        return "HTML page"
    if head.startswith(b"<?xml"):
        return "XML document"
    return None


def _check_expansion(archive: Path, total: int, limits: ExtractLimits) -> None:
    if total > limits.max_bytes:
        raise BundleError(archive, f"expands to {total} bytes, more than the limit of {limits.max_bytes} "
                                   f"bytes ({_human(limits.max_bytes)}); refusing a possible zip bomb")
    if total > limits.ratio_above:
        size = max(archive.stat().st_size, 1)
        if total / size > limits.max_ratio:
            raise BundleError(archive, f"expands {_human(total)} from {_human(size)} (compression ratio "
                                       f"{total / size:.0f}, more than {limits.max_ratio:g}); refusing a "
                                       "possible zip bomb")


def validate_zip(zip_path: str | os.PathLike[str], limits: ExtractLimits | None = None) -> None:
    """Raise BundleError unless ``zip_path`` is a zip archive that would extract cleanly.

    Its central directory must read, every entry must pass :func:`extract_zip`'s name checks and
    ``limits``, and every member must decompress with a good CRC (read, nothing is written).
    """
    archive = Path(zip_path)
    limits = limits or ExtractLimits()
    with _open_zip(archive) as zf:
        members = _plan(zf, archive, strip_single_root=False)
        _check_expansion(archive, sum(i.file_size for i, _ in members if not i.is_dir()), limits)
        written = 0
        for info, _parts in members:
            if not info.is_dir():
                written = _copy_member(zf, info, archive, None, written, limits, advice="")


def extract_zip(zip_path: str | os.PathLike[str], dest_dir: str | os.PathLike[str],
                strip_single_root: bool = True, overwrite: bool = False,
                limits: ExtractLimits | None = None) -> list[Path]:
    """Safely extract ``zip_path`` into ``dest_dir``; return the extracted files' final paths.

    Every entry is validated before anything is written. Extraction goes to a temporary directory
    beside ``dest_dir``; only when every member decompressed with a good CRC are the top-level
    entries moved into ``dest_dir``. An existing top-level entry of the same name is an error
    unless ``overwrite`` (then it is replaced). With ``strip_single_root`` an archive whose
    entries all sit in one top-level folder that is not a section name is unwrapped.
    ``limits`` (default :class:`ExtractLimits`) bound what the archive may expand to.
    """
    archive = Path(zip_path)
    dest = Path(dest_dir)
    limits = limits or ExtractLimits()
    if not archive.is_file():
        raise BundleError(archive, "archive not found")
    with _open_zip(archive) as zf:
        members = _plan(zf, archive, strip_single_root)
        total = sum(info.file_size for info, _rel in members if not info.is_dir())
        _check_expansion(archive, total, limits)
        dest.mkdir(parents=True, exist_ok=True)
        clean_stale_temp(dest)
        _check_disk(dest, total, archive)
        tops = sorted({rel[0] for _info, rel in members})
        if not overwrite:
            clash = [t for t in tops if (dest / t).exists() or (dest / t).is_symlink()]
            if clash:
                raise BundleError(dest / clash[0], "already exists; refusing to overwrite (use force)")
        # The pid and host in the name tell a later run whether this folder's owner still lives.
        staging = Path(tempfile.mkdtemp(prefix=staging_prefix(), dir=dest))
        try:
            written = _extract_members(zf, archive, members, staging, limits)
            _move_into_place(staging, dest, tops)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return [dest / rel for rel in written]


def _plan(zf: zipfile.ZipFile, archive: Path,
          strip_single_root: bool) -> list[tuple[zipfile.ZipInfo, tuple[str, ...]]]:
    try:
        infos = zf.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise BundleError(archive, f"corrupt zip directory: {exc}") from None
    planned = [(info, _member_parts(info, archive)) for info in infos]
    if not planned:
        raise BundleError(archive, "the archive is empty")

    files: dict[tuple[str, ...], str] = {}
    dirs: set[tuple[str, ...]] = set()
    for info, parts in planned:
        if info.is_dir():
            dirs.add(parts)
            continue
        if parts in files:
            raise BundleError(archive, f"duplicate entry {info.filename!r} (also {files[parts]!r})")
        files[parts] = info.filename
        dirs.update(parts[:i] for i in range(1, len(parts)))
    clash = next((files[p] for p in files if p in dirs), None)
    if clash is not None:
        raise BundleError(archive, f"entry {clash!r} is both a file and a directory")

    tops = {parts[0] for _info, parts in planned}
    if strip_single_root and len(tops) == 1:
        (top,) = tops
        only_under = all(len(parts) > 1 or info.is_dir() for info, parts in planned)
        if only_under and top not in SECTION_DIRS:
            planned = [(info, parts[1:]) for info, parts in planned if len(parts) > 1]
            if not planned:
                raise BundleError(archive, f"the archive holds only the empty folder {top!r}")
    return planned


def _copy_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, archive: Path, target: Path | None,
                 written: int, limits: ExtractLimits, advice: str) -> int:
    """Decompress one member into ``target`` (None: only read it); return ``written`` plus its size.

    Bytes are counted as they come: a member may not yield more than its directory entry
    states, and the archive not more than ``limits`` allow, whatever the directory said.
    """
    produced = 0
    try:
        with zf.open(info) as src, (open(target, "wb") if target is not None else contextlib.nullcontext()) as dst:
            while block := src.read(CHUNK):
                produced += len(block)
                written += len(block)
                if produced > info.file_size:
                    raise BundleError(archive, f"entry {info.filename!r} expands beyond the {info.file_size} "
                                               "bytes its directory entry states; refusing a possible zip bomb")
                if written > min(limits.max_bytes, limits.ratio_above):
                    _check_expansion(archive, written, limits)
                if dst is not None:
                    dst.write(block)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError) as exc:
        # BadZipFile covers "Bad CRC-32"; zlib.error/EOFError a truncated or garbled stream;
        # ValueError (UnicodeDecodeError) a garbled name in the member's local header.
        raise BundleError(archive, f"entry {info.filename!r} is corrupt ({exc}){advice}") from None
    except OSError as exc:
        where = target if target is not None else archive
        raise BundleError(where, f"cannot {'write' if target is not None else 'read'} while extracting "
                                 f"{archive.name}: {exc.strerror or exc}") from None
    return written


def _extract_members(zf: zipfile.ZipFile, archive: Path, members: list[tuple[zipfile.ZipInfo, tuple[str, ...]]],
                     staging: Path, limits: ExtractLimits) -> list[Path]:
    written: list[Path] = []
    total = 0
    for info, parts in members:
        target = staging.joinpath(*parts)
        if info.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        total = _copy_member(zf, info, archive, target, total, limits,
                             advice="; delete the archive and download it again")
        written.append(Path(*parts))
    return written


def _move_into_place(staging: Path, dest: Path, tops: list[str]) -> None:
    # Old entries are parked inside the staging dir (same filesystem, so renames are atomic) and
    # deleted with it; if a rename fails, the parked ones are put back.
    parked = staging / ".replaced"
    parked.mkdir()
    moved: list[str] = []
    try:
        for top in tops:
            final = dest / top
            if final.exists() or final.is_symlink():
                os.replace(final, parked / top)
            os.replace(staging / top, final)
            moved.append(top)
    except OSError as exc:
        for top in moved:
            with contextlib.suppress(OSError):
                shutil.rmtree(dest / top) if (dest / top).is_dir() else (dest / top).unlink()
        for old in parked.iterdir():
            with contextlib.suppress(OSError):
                os.replace(old, dest / old.name)
        raise BundleError(dest, f"cannot move extracted files into place: {exc.strerror or exc}") from None


# ------------------------------------------------------------------------------------------- leftovers

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


# ------------------------------------------------------------------------------------------------ bundles


# Data files that only an extracted trace.zip has; the repo's code folders share the section
# names, so bare folders prove nothing.
_PAPER_MARKERS = ("block_sched/*/result/*.bin", "dmat/*.dmat", "exposed_latency/*.csv",
                  "warp_sched/*/result/*.bin", "max_mem/*/*/*/stdout.log", "kernel_overhead/*/*/*/*")


def has_paper_layout(root: str | os.PathLike[str]) -> bool:
    """True when ``root`` holds an extracted ``trace.zip``: data files of at least two sections."""
    root = Path(root)
    return sum(next(root.glob(pattern), None) is not None for pattern in _PAPER_MARKERS) >= 2


def _refuse_source_tree(root: Path) -> None:
    if (root / "pyproject.toml").is_file() or (root / "neutrino_ae").is_dir():
        raise BundleError(root, "is the source tree; its per-figure code folders share the bundle's "
                                "folder names; use a separate trace root such as traces/")


def fetch_paper_bundle(trace_root: str | os.PathLike[str], url: str = PAPER_BUNDLE_URL,
                       sha256: str | None = None, force: bool = False, progress: bool = True,
                       keep_zip: bool = False, retries: int = 5, backoff: float = 1.0,
                       timeout: float | tuple[float, float] = (10.0, 60.0), *,
                       max_bytes: int = MAX_DOWNLOAD_BYTES, max_attempts: int = MAX_ATTEMPTS,
                       deadline_s: float | None = DOWNLOAD_DEADLINE_S,
                       limits: ExtractLimits | None = None) -> Path:
    """Download and extract the paper's bundle into ``trace_root``; write its ``bundle.json``.

    Idempotent: a ``trace_root`` whose manifest says ``paper`` is returned as is (an explicit
    ``sha256`` must match the recorded one), as is a ``trace.zip`` extracted by hand (paper
    layout, no manifest). ``force`` downloads and extracts again, replacing the section folders.
    The archive is downloaded to ``trace_root/.download/trace.zip`` and deleted after a
    successful extraction unless ``keep_zip``. It is validated (:func:`validate_zip`) before
    its digest is recorded. ``max_bytes``, ``max_attempts`` and ``deadline_s`` bound the
    download (see :func:`download`), ``limits`` the extraction. Staging folders and temp files
    of killed runs are cleaned up first (:func:`clean_stale_temp`).
    """
    root = Path(trace_root)
    expected = _normalise_digest(sha256, url)
    clean_stale_temp(root, tmp_of=(MANIFEST,))
    manifest = read_manifest(root)
    archive = root / DOWNLOAD_DIR / ARCHIVE_NAME
    if manifest is not None and not force:
        if manifest["kind"] != PAPER:
            raise BundleError(root / MANIFEST, f"holds a {manifest['kind']} bundle, not the paper's; "
                                               "choose another trace root or pass force")
        recorded = manifest.get("sha256")
        if expected is not None and recorded and recorded != expected:
            raise BundleError(root / MANIFEST, f"was fetched from an archive with sha256 {recorded}, "
                                               f"not {expected}; pass force to fetch again")
        return root
    if manifest is None and not force and has_paper_layout(root):
        if sample_layout_root(root) is not None:
            raise BundleError(root, f"holds a sample bundle without its {MANIFEST} ({SAMPLE_LAYOUT_MARKER} is "
                                    "there), not the paper's traces; choose another trace root")
        _note(progress, f"{root}: using the extracted paper traces already there (no {MANIFEST})")
        return root

    _refuse_source_tree(root)
    root.mkdir(parents=True, exist_ok=True)
    limits = limits or ExtractLimits()
    if force:
        for suffix in ("", ".part", ".part.json", ".sha256"):
            archive.with_name(archive.name + suffix).unlink(missing_ok=True)
    elif archive.is_file() and expected is None:
        # An archive kept from an earlier run (killed before extracting, or from an older version
        # that did not validate before trusting) would be reused without a checksum: check it.
        try:
            validate_zip(archive, limits)
        except BundleError as exc:
            raise BundleError(archive, f"{exc.problem}; it was kept from an earlier download that was trusted "
                                       f"without a checksum; run `neutrino-ae fetch --force --trace-root {root}` "
                                       "(force=True from Python) to download it again") from None
    _note(progress, f"fetching {url} -> {archive}")
    archive, digest = download_with_digest(url, archive, sha256=expected, retries=retries, backoff=backoff,
                                           timeout=timeout, progress=progress, max_bytes=max_bytes,
                                           max_attempts=max_attempts, deadline_s=deadline_s,
                                           validate=lambda path: validate_zip(path, limits))
    _note(progress, f"extracting {archive} into {root}")
    extract_zip(archive, root, overwrite=force, limits=limits)
    write_manifest(root, PAPER, url=url, sha256=digest,
                   fetched_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                   trust_on_first_use=expected is None)
    if not keep_zip:
        archive.unlink(missing_ok=True)
        archive.with_name(archive.name + ".sha256").unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            archive.parent.rmdir()
    return root


def ensure_sample_bundle(trace_root: str | os.PathLike[str], scale: str = "small", seed: int = 0,
                         force: bool = False, progress: bool = True,
                         generator: Callable[..., Any] | None = None) -> Path:
    """A sample bundle at ``trace_root``: reused when one with this scale and seed is there.

    A sample bundle with another scale/seed, or ``force``, is regenerated; only a directory whose
    manifest says ``sample`` is ever deleted. Refuses to overwrite anything else.
    """
    root = Path(trace_root)
    manifest = read_manifest(root)
    if manifest is not None and manifest["kind"] != SAMPLE:
        raise BundleError(root / MANIFEST, f"holds a {manifest['kind']} bundle; refusing to replace it "
                                           "with a sample bundle; choose another trace root")
    if manifest is not None and not force:
        if str(manifest.get("scale")) == str(scale) and manifest.get("seed") == seed:
            return root
        _note(progress, f"{root}: sample bundle has scale={manifest.get('scale')} seed={manifest.get('seed')}; "
                        f"regenerating with scale={scale} seed={seed}")
    if manifest is None and root.is_dir() and any(root.iterdir()):
        raise BundleError(root, "exists, is not empty and has no bundle.json; refusing to write a sample "
                                "bundle into it; remove it or choose another trace root")
    _refuse_source_tree(root)
    if generator is None:
        from neutrino_ae.sample import generate_bundle as generator  # lazy: written by another module

    # Generate beside the root and swap it in at the end, so an interrupted run (Ctrl-C in
    # `make run`) leaves either the old bundle or none, never a half-written one that the next
    # run would have to refuse. The staging name is fixed, so a leftover is ours to remove.
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = root.parent / f".{root.name}.generating"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        made = generator(staging, scale=scale, seed=seed, progress=progress)
        made = staging if made is None else Path(made)
        if read_manifest(made) is None:
            raise BundleError(made, "the sample generator wrote no bundle.json")
        inner = made.resolve().relative_to(staging.resolve())
        if manifest is not None:
            shutil.rmtree(root)
        elif root.is_dir():
            root.rmdir()  # empty, checked above
        os.replace(staging, root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root / inner


def ensure_bundle(trace_root: str | os.PathLike[str], bundle: str = "auto", url: str = PAPER_BUNDLE_URL,
                  sha256: str | None = None, sample_scale: str = "small", seed: int = 0,
                  force: bool = False, progress: bool = True) -> Path:
    """The bundle root the notebooks should read, fetching or generating it when needed.

    * ``"sample"``: the synthetic sample bundle (generated if absent, reused otherwise).
    * ``"paper"``: the authors' traces, downloaded from ``url``.
    * ``"auto"``: whatever bundle is already at ``trace_root`` (manifest of any kind, or an
      extracted ``trace.zip``); otherwise the paper download. If that fails the error says how to
      use the sample bundle; it never falls back to synthetic data on its own.
    """
    root = Path(trace_root)
    if bundle == "sample":
        return ensure_sample_bundle(root, scale=sample_scale, seed=seed, force=force, progress=progress)
    if bundle == "paper":
        return fetch_paper_bundle(root, url=url, sha256=sha256, force=force, progress=progress)
    if bundle != "auto":
        raise BundleError(None, f"unknown bundle {bundle!r}; expected 'auto', 'paper' or 'sample'")
    # An existing bundle is returned below without fetching; leftovers of a killed fetch go here.
    clean_stale_temp(root, tmp_of=(MANIFEST,))
    if not force and (read_manifest(root) is not None or has_paper_layout(root)):
        return root
    try:
        return fetch_paper_bundle(root, url=url, sha256=sha256, force=force, progress=progress)
    except BundleError as exc:
        raise BundleError(None, f"no trace bundle under {root} and the paper bundle could not be fetched "
                                f"({exc}); {SAMPLE_HINT}") from None
