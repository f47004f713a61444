"""Which files of a bundle were last found equal to their digest in ``bundle.json``, and in what state:
the verified-stamp cache ``.bundle-verified.json`` in the bundle root (``bundle/trust.py`` hashes again only
a file whose state changed; ``bundle/manifest.py`` seeds it with the files it has just hashed), and a
file's sha256 and state (:func:`stat_stamp`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_json

#: Per file: size, mtime, ctime (ns), inode and the sha256 it matched. Hidden, so it is no file of the
#: bundle's own.
VERIFIED = ".bundle-verified.json"


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def stat_stamp(st: os.stat_result) -> list[int]:
    """A file's state as the verification cache keys it: size, mtime and ctime (ns), inode. Any write
    changes the ctime, which nobody can set back: a same-size edit with its mtime restored is seen."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def read_verified(root: str | os.PathLike[str]) -> dict[str, list[Any]]:
    """The verification cache of the bundle at ``root`` (empty when absent or unreadable)."""
    try:
        doc = json.loads((Path(root) / VERIFIED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = doc.get("files") if isinstance(doc, dict) and doc.get("version") == 1 else None
    return {k: v for k, v in files.items() if isinstance(v, list) and len(v) == 5} if isinstance(files, dict) else {}


def write_verified(root: str | os.PathLike[str], stamps: dict[str, list[Any]]) -> None:
    """Replace the verification cache; a read-only bundle keeps none (every run then hashes)."""
    with contextlib.suppress(OSError):
        write_json(Path(root) / VERIFIED, {"version": 1, "files": stamps})
