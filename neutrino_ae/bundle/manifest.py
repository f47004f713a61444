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


def sha256_file(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def file_digests(root: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """sha256 and size of every regular file under ``root`` except the manifest, keyed by POSIX path."""
    root = Path(root)
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(root).as_posix()
        if rel == MANIFEST or "/." in f"/{rel}":
            continue
        out[rel] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
    return out


def write_manifest(root: str | os.PathLike[str], kind: str, **fields: Any) -> Path:
    """Write ``root/bundle.json`` (atomically) with ``kind``, ``fields`` and the file digests."""
    manifest = {"kind": kind, "format_version": FORMAT_VERSION, **fields, "files": file_digests(root)}
    return write_json(Path(root) / MANIFEST, manifest)


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
    """Problems found comparing files on disk with the manifest (empty list = intact)."""
    manifest = read_manifest(root)
    if manifest is None:
        return [f"{Path(root) / MANIFEST}: missing"]
    problems = []
    recorded = manifest.get("files", {})
    for rel, meta in recorded.items():
        path = Path(root) / rel
        if not path.is_file():
            problems.append(f"{path}: listed in the manifest but missing")
        elif path.stat().st_size != meta.get("bytes") or sha256_file(path) != meta.get("sha256"):
            problems.append(f"{path}: content differs from the manifest (sha256 mismatch)")
    return problems
