"""The bounds that end a download whatever the server does (:mod:`.download`): bytes in all,
attempts, wall-clock time, time to the server's first answer, the slowest rate worth keeping, and
free disk space. :class:`Budget` holds the ones that span every attempt of one download.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from neutrino_ae.bundle import disk
from neutrino_ae.bundle.disk import CHUNK, DISK_SLACK, human
from neutrino_ae.bundle.download.resume import Part
from neutrino_ae.errors import BundleError, NetworkError

# Retries: a host that cannot be reached at all gets CONNECT_RETRIES quick ones (backoff from
# CONNECT_BACKOFF_S); every backoff doubles up to MAX_BACKOFF_S.
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
# A connection delivering less than MIN_RATE bytes/s over STALL_WINDOW_S is dropped and retried.
MIN_RATE = 1024
STALL_WINDOW_S = 300.0

_now = time.monotonic


@dataclass
class Budget:
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

    def check(self, url: str, part: Part) -> None:
        left = self.remaining()
        if left is not None and left <= 0:
            raise self.expired(url, part)

    def expired(self, url: str, part: Part) -> NetworkError:
        if self.waiting_for_answer():
            return NetworkError(url, f"no answer within {self.answer_deadline_s:g} s (the host accepts connections "
                                    "but sends nothing back); check the URL and the network, or try again later")
        of = f" of {part.total}" if part.total is not None else ""
        return NetworkError(url, f"not finished within {self.deadline_s:g} s ({part.size}{of} bytes so far; "
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


def check_free_while_writing(directory: Path, what: str) -> None:
    free = disk.free_bytes(directory)
    if free < DISK_SLACK:
        raise BundleError(what, f"free space on {directory} fell to {human(free)} while downloading (the "
                                "server did not announce the size); free some space or choose another "
                                "--trace-root; the partial download is kept")
