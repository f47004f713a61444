"""Resuming a download (:mod:`.download`): the bytes so far in ``<dest>.part`` and the record of
what they are the start of (``<dest>.part.json``: URL, version, size); the ``Content-Range`` of a
``206``/``416`` answer; the digest of bytes already on disk.

A retry asks for the rest with ``Range`` and ``If-Range`` (the version we hold the start of), so a
file replaced on the server comes back whole instead of as a mix of two versions. A ``.part``
without its record, or of another URL, is discarded.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_json
from neutrino_ae.bundle.disk import CHUNK


@dataclass
class Part:
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
    def load(cls, dest: Path, url: str) -> Part:
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


def content_range_start(value: str) -> int | None:
    m = re.match(r"\s*bytes\s+(\d+)-\d+/(\d+|\*)", value)
    return int(m.group(1)) if m else None


def content_range_total(value: str) -> int | None:
    m = re.match(r"\s*bytes\s+(?:\d+-\d+|\*)/(\d+)", value)
    return int(m.group(1)) if m else None


def hash_into(hasher: Any, path: Path) -> None:
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK):
            hasher.update(block)


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    hash_into(h, path)
    return h.hexdigest()
