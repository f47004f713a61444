"""One HTTP GET of a download (:mod:`.download`): the request (``Range``/``If-Range`` when resuming),
what each answer means (``200`` restart, ``206`` the rest, ``416`` already whole, fatal statuses,
retryable ones), and the body streamed into ``<dest>.part`` while hashed, checked against the
bounds of :mod:`.limits`, and shown as progress that stays readable in papermill logs.
A failure worth retrying is a :class:`Retryable`; any other is a :class:`~neutrino_ae.errors.BundleError`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

from neutrino_ae.bundle.disk import CHUNK, check_disk, human
from neutrino_ae.bundle.download import limits
from neutrino_ae.bundle.download.resume import Part, content_range_start, content_range_total, hash_into, sha256_of
from neutrino_ae.errors import BundleError, NetworkError
from neutrino_ae.logs import quiet

log = logging.getLogger(__name__)

_FATAL_STATUS = {401: "unauthorised", 403: "forbidden", 404: "not found", 410: "gone"}


class Retryable(Exception):
    """A transient failure; ``connect`` marks failures to reach the host at all, ``stalled`` a
    connection too slow to be worth keeping (its few bytes do not count as progress)."""

    def __init__(self, message: str, connect: bool = False, stalled: bool = False) -> None:
        super().__init__(message)
        self.connect = connect
        self.stalled = stalled


def attempt(session: Any, url: str, part: Part, timeout: Any, progress: bool, budget: limits.Budget) -> str:
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
        raise Retryable(_short(exc), connect=True) from None
    except requests.exceptions.ConnectionError as exc:
        raise Retryable(_short(exc), connect=_is_unreachable(exc)) from None
    except requests.exceptions.Timeout as exc:
        raise Retryable(_short(exc)) from None
    except (requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema, requests.exceptions.MissingSchema,
            requests.exceptions.URLRequired) as exc:
        raise BundleError(url, f"request failed: {_short(exc)}") from None  # the URL: bad input
    except requests.exceptions.RequestException as exc:
        raise NetworkError(url, f"request failed: {_short(exc)}") from None
    budget.answered = True

    with resp:
        status = resp.status_code
        if status in _FATAL_STATUS:
            raise BundleError(url, f"HTTP {status} ({_FATAL_STATUS[status]}); check the URL")
        if status == 429 or status >= 500:
            raise Retryable(f"HTTP {status}")
        etag = resp.headers.get("ETag")
        record_changed = False
        if status == 416:
            total = content_range_total(resp.headers.get("Content-Range", ""))
            if have and (total is None or total == have) and (part.total is None or part.total == have):
                return sha256_of(part.path)  # the .part already holds every byte
            part.discard()
            raise Retryable(f"HTTP 416 with {have} bytes on disk but {total} on the server; restarting")
        if status == 206:
            start = content_range_start(resp.headers.get("Content-Range", ""))
            if start != have:
                part.discard()
                raise Retryable(f"server resumed at byte {start}, not {have}; restarting")
            if part.etag and etag and etag != part.etag:
                # A server that ignores If-Range but names the version it is sending.
                part.discard()
                raise Retryable(f"server sent the rest of another version (ETag {etag}, not {part.etag}); "
                                "restarting")
            total = content_range_total(resp.headers.get("Content-Range", ""))
            if total is not None and part.total is not None and total != part.total:
                # Without this a server that announces a growing total and drops the connection
                # keeps the .part growing, and the retry budget resetting, forever.
                announced = part.total
                part.discard()
                raise NetworkError(url, f"the server first announced {announced} bytes and now {total}; the "
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
            raise NetworkError(url, f"unexpected HTTP {status} {resp.reason or ''}".rstrip())

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
            hash_into(hasher, part.path)
        received = have
        next_disk_check = received + limits.DISK_RECHECK_BYTES
        window_start, window_bytes = time.monotonic(), received
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
                        raise Retryable(f"connection dropped after {received} bytes ({_short(exc)})") from None
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
                    now = time.monotonic()
                    if now - window_start >= limits.STALL_WINDOW_S:
                        # Like curl's --speed-limit: a server that trickles never trips the
                        # read timeout; without this only the overall deadline would end it.
                        rate = (received - window_bytes) / (now - window_start)
                        if rate < limits.MIN_RATE:
                            raise Retryable(f"too slow: {rate:.0f} B/s over {now - window_start:.0f} s, below "
                                            f"{limits.MIN_RATE} B/s", stalled=True)
                        window_start, window_bytes = now, received
                    if total is None and received >= next_disk_check:
                        # Size unknown, so the check up front could not cover it: look again.
                        next_disk_check = received + limits.DISK_RECHECK_BYTES
                        limits.check_free_while_writing(part.path.parent, url)
                fh.flush()
                os.fsync(fh.fileno())
        finally:
            if bar is not None:
                bar.close()
        if overflow:
            part.discard()
            what = (f"the {total} bytes it announced" if total is not None
                    else f"the limit of {budget.max_bytes} bytes ({human(budget.max_bytes)})")
            raise NetworkError(url, f"the server sent more than {what}; the partial download was deleted")
        if total is not None and received != total:
            raise Retryable(f"connection closed after {received} of {total} bytes")
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
    if not enabled or quiet():
        return None
    from tqdm import tqdm

    interactive = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    return tqdm(total=total, initial=initial, unit="B", unit_scale=True, unit_divisor=1024,
                desc=name, file=sys.stderr, mininterval=0.5 if interactive else 5.0,
                ascii=not interactive, ncols=None if interactive else 90, leave=True)


def note(progress: bool, message: str) -> None:
    """A progress message (when ``progress``): logged at INFO (the console, run.log)."""
    if progress:
        log.info("%s", message)


def _short(exc: BaseException) -> str:
    """The innermost useful part of a requests/urllib3 error, on one line."""
    text = str(exc)
    for pattern in (r"\[Errno -?\d+\] [^'\")]+", r"Failed to resolve '[^']+'", r"Read timed out[^)]*",
                    r"IncompleteRead\([^)]*\)", r"Connection refused"):
        m = re.search(pattern, text)
        if m:
            return m.group(0).strip()
    return " ".join(text.split())[:200] or type(exc).__name__
