"""Trace bundles: the ``bundle.json`` manifest, bundle kind (paper/sample) and ground truth.

A bundle is a directory with the layout of the paper's ``trace.zip``. Its ``bundle.json`` says
what it is (``kind``: ``paper``, ``sample``, or ``dynamic`` for fresh traces), how it was made
and the sha256 of every file. A sample bundle also carries the execution model's ground truth
per section, so analyses can show measured vs injected values.
"""

from __future__ import annotations

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


def kind_and_source(path: str | os.PathLike[str]) -> tuple[str, str]:
    """The bundle kind of ``path`` and how it is known: ``manifest`` (bundle.json), ``layout`` (no
    bundle.json, but the sample generator's layout: never let synthetic data lose its label) or
    ``none`` (kind ``unknown``)."""
    root = find_bundle_root(path)
    manifest = read_manifest(root) if root is not None else None
    if manifest:
        return str(manifest["kind"]), "manifest"
    if sample_layout_root(path) is not None:
        return SAMPLE, "layout"
    return UNKNOWN, "none"


def bundle_kind(path: str | os.PathLike[str]) -> str:
    """``sample``, ``paper``, ``dynamic`` or ``unknown`` for any file or directory inside a bundle."""
    return kind_and_source(path)[0]


def is_synthetic(path: str | os.PathLike[str]) -> bool | None:
    """True for sample data, False for measured traces, None when nobody can tell (no bundle.json):
    figures and results then carry an "unverified provenance" warning instead of a label."""
    kind = bundle_kind(path)
    return True if kind == SAMPLE else None if kind == UNKNOWN else False


def ground_truth(path: str | os.PathLike[str], section: str) -> dict[str, Any] | None:
    """The sample generator's ground truth for ``section`` (e.g. ``block_sched``), if any."""
    root = find_bundle_root(path)
    manifest = read_manifest(root) if root else None
    if not manifest:
        return None
    truth = manifest.get("ground_truth", {})
    return truth.get(section) if isinstance(truth, dict) else None


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
