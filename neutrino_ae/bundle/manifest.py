"""Trace bundles on disk: the ``bundle.json`` manifest, read and written (the only module that does).

A bundle is a directory with the layout of the paper's ``trace.zip``. Its ``bundle.json`` says
what it is (``kind``: ``paper``, ``sample``, or ``dynamic`` for fresh traces), how it was made
and the sha256 of every file. A sample bundle also carries the execution model's ground truth
per section, so analyses can show measured vs injected values. What a run makes of it (kind,
provenance, ground truth by section) is :class:`neutrino_ae.bundle.context.Bundle`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_json
from neutrino_ae.errors import BundleError
from neutrino_ae.formats.inputs import MiB, read_text_input

MANIFEST = "bundle.json"
SAMPLE = "sample"
PAPER = "paper"
DYNAMIC = "dynamic"  # traces collected by dynamic.ipynb on this machine
UNKNOWN = "unknown"
FORMAT_VERSION = 1
#: Which files were last found equal to their digest in ``bundle.json``, and in what state (size,
#: mtime, ctime in ns, inode): a file still in that state is not hashed again (``bundle/trust.py``).
#: Hidden, so it is no file of the bundle's own.
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


def file_digests(root: str | os.PathLike[str],
                 stamps: dict[str, list[Any]] | None = None) -> dict[str, dict[str, Any]]:
    """sha256 and size of every regular file under ``root`` except the manifest, keyed by POSIX path.
    ``stamps`` (if given) receives each file's :func:`stat_stamp` plus its sha256, for :data:`VERIFIED`."""
    root = Path(root)
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(root).as_posix()
        if rel == MANIFEST or "/." in f"/{rel}":
            continue
        before = stat_stamp(path.stat())
        digest = sha256_file(path)
        after = stat_stamp(path.stat())
        out[rel] = {"sha256": digest, "bytes": after[0]}
        if stamps is not None and before == after:
            stamps[rel] = [*after, digest]
    return out


def write_manifest(root: str | os.PathLike[str], kind: str, **fields: Any) -> Path:
    """Write ``root/bundle.json`` (atomically) with ``kind``, ``fields`` and the file digests; the
    verification cache (:data:`VERIFIED`) starts with the files just hashed."""
    stamps: dict[str, list[Any]] = {}
    manifest = {"kind": kind, "format_version": FORMAT_VERSION, **fields, "files": file_digests(root, stamps)}
    path = write_json(Path(root) / MANIFEST, manifest)
    write_verified(root, stamps)
    return path


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


def write_dynamic_manifest(root: str | os.PathLike[str], **fields: Any) -> Path:
    """Mark ``root`` as a dynamically collected tree (kind ``dynamic``), merging ``sections`` and
    ``fields`` into what is there. No file digests: traces are hundreds of MB and were produced
    here, not downloaded. An unreadable old manifest is replaced."""
    path = Path(root) / MANIFEST
    doc: dict[str, Any] = {}
    if path.is_file():
        with contextlib.suppress(ValueError, OSError):
            doc = json.loads(path.read_text(encoding="utf-8"))
    doc.update({"kind": DYNAMIC, "format_version": FORMAT_VERSION, "files": {}})
    sections = dict(doc.get("sections", {}))
    sections.update(fields.pop("sections", {}))
    doc.update(fields)
    doc["sections"] = sections
    return write_json(path, doc)


def read_manifest(root: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The manifest of the bundle at ``root``, or None when there is none."""
    path = Path(root) / MANIFEST
    if not path.exists():
        return None
    text = read_text_input(path, "bundle.json", 256 * MiB)
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BundleError(path, f"is not valid JSON ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(data, dict) or "kind" not in data:
        raise BundleError(path, "has no 'kind' field; not a bundle manifest")
    return data


def find_bundle_root(path: str | os.PathLike[str]) -> Path | None:
    """The nearest directory at or above ``path`` that holds a ``bundle.json``."""
    p = Path(path).resolve()
    for candidate in [p, *p.parents] if p.is_dir() else list(p.parents):
        if (candidate / MANIFEST).is_file():
            return candidate
    return None


#: Only the sample generator writes a trace of the memset variant (no kernel of ours runs there,
#: so neither the paper's bundle nor dynamic.ipynb has one): a bundle holding it is a sample.
SAMPLE_LAYOUT_MARKER = Path("block_sched") / "variants" / "memset"


def sample_layout_root(path: str | os.PathLike[str]) -> Path | None:
    """The nearest directory at or above ``path`` laid out like a sample bundle, if any."""
    p = Path(path).resolve()
    for candidate in [p, *p.parents] if p.is_dir() else list(p.parents):
        if (candidate / SAMPLE_LAYOUT_MARKER).is_dir():
            return candidate
    return None


def verify_manifest(root: str | os.PathLike[str]) -> list[str]:
    """Problems found comparing files on disk with the manifest (empty list = intact), each
    ``"<path>: <problem>"``; what every run checks (:func:`neutrino_ae.bundle.trust.verify_bundle`)."""
    from neutrino_ae.bundle.trust import file_problems  # trust.py reads this module

    manifest = read_manifest(root)
    if manifest is None:
        return [f"{Path(root) / MANIFEST}: missing"]
    return [str(problem) for problem in file_problems(Path(root), manifest, use_cache=False)]
