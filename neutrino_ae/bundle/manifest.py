"""Trace bundles on disk: the ``bundle.json`` manifest, read and written (the only module that does).

A bundle is a directory with the layout of the paper's ``trace.zip``. Its ``bundle.json`` says
what it is (``kind``: ``paper``, ``sample``, or ``dynamic`` for fresh traces), how it was made
and the sha256 of every file. A sample bundle also carries the execution model's ground truth
per section, so analyses can show measured vs injected values. What a run makes of it (kind,
provenance, ground truth by section) is :class:`neutrino_ae.bundle.context.Bundle`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_json
from neutrino_ae.bundle.verified import sha256_file, stat_stamp, write_verified
from neutrino_ae.errors import BundleError
from neutrino_ae.formats.inputs import MiB, read_text_input

MANIFEST = "bundle.json"
SAMPLE = "sample"
PAPER = "paper"
DYNAMIC = "dynamic"  # traces collected by dynamic.ipynb on this machine
UNKNOWN = "unknown"
FORMAT_VERSION = 1
KINDS = (PAPER, SAMPLE, DYNAMIC)


def file_digests(root: str | os.PathLike[str],
                 stamps: dict[str, list[Any]] | None = None) -> dict[str, dict[str, Any]]:
    """sha256 and size of every regular file under ``root`` except the manifest and hidden names at the top
    level (the suite's bookkeeping: the verified-stamp cache, ``.download/``), keyed by POSIX path.
    ``stamps`` (if given) receives each file's :func:`stat_stamp` plus its sha256, for that cache."""
    root = Path(root)
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(root).as_posix()
        if rel == MANIFEST or rel.startswith("."):  # the suite's bookkeeping (trust.py's walk skips it too)
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
    verification cache (``bundle/verified.py``) starts with the files just hashed."""
    stamps: dict[str, list[Any]] = {}
    manifest = {"kind": kind, "format_version": FORMAT_VERSION, **fields, "files": file_digests(root, stamps)}
    path = write_json(Path(root) / MANIFEST, manifest)
    write_verified(root, stamps)
    return path


def write_dynamic_manifest(root: str | os.PathLike[str], **fields: Any) -> Path:
    """Mark ``root`` as a dynamically collected tree (kind ``dynamic``), merging ``sections`` and
    ``fields`` into what is there. No file digests: traces are hundreds of MB and were produced
    here, not downloaded. An unreadable old manifest is replaced."""
    path = Path(root) / MANIFEST
    doc: dict[str, Any] = {}
    if path.is_file():
        with contextlib.suppress(BundleError, OSError):
            doc = read_manifest(root) or {}
    doc.update({"kind": DYNAMIC, "format_version": FORMAT_VERSION, "files": {}})
    sections = dict(doc.get("sections", {}))
    sections.update(fields.pop("sections", {}))
    doc.update(fields)
    doc["sections"] = sections
    return write_json(path, doc)


def read_manifest(root: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The manifest of the bundle at ``root``, or None when there is none; checked as a schema
    (:func:`parse_manifest`: one :class:`BundleError` line naming the file and the field)."""
    path = Path(root) / MANIFEST
    if not path.exists():
        return None
    return parse_manifest(path, read_text_input(path, "bundle.json", 256 * MiB))


#: What ``bundle.json`` may hold: nesting (the sample's ground truth nests 8 deep), digits of an integer
#: (a size or a seed fits in 20), characters of a string (a mangled kernel name is a few hundred).
MAX_DEPTH = 32
MAX_INT_DIGITS = 20
#: The largest sample seed (numpy's SeedSequence takes any integer >= 0; bundle.json records it): the edge
#: (``sample --seed``, the notebooks' ``seed``) refuses a larger one before a bundle is made.
MAX_SEED = 2**63 - 1
MAX_STRING = 64 * 1024
_HEX64 = re.compile(r"[0-9a-f]{64}")
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


class _Refused(ValueError):
    """A value ``json.loads`` must not build (a huge integer, a non-finite number): its text says why."""


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"holds an integer of {len(text.lstrip('-')):,} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"holds the number {text[:40]}, which is not finite")
    return value


def _constant(text: str) -> float:
    raise _Refused(f"holds {text}, which is not a JSON number")


def _depth(text: str) -> int:
    """How deep ``text`` nests arrays and objects (brackets inside strings not counted), without
    parsing it: ``json.loads`` recurses once per level, 200,000 brackets would exhaust the stack."""
    depth = deepest = 0
    for m in _TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    break
        elif c in "]}":
            depth -= 1
    return deepest


def parse_manifest(path: Path, text: str) -> dict[str, Any]:
    """``text`` (the content of ``path``, a ``bundle.json``) as a manifest, checked as a schema: depth,
    number sizes, then the type of every field this suite reads (:func:`check_manifest`)."""
    if _depth(text) > MAX_DEPTH:
        raise BundleError(path, f"nests arrays or objects more than {MAX_DEPTH} deep; not a bundle manifest")
    try:
        data = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except _Refused as exc:
        raise BundleError(path, f"{exc}; not a bundle manifest") from None
    except (ValueError, RecursionError) as exc:
        raise BundleError(path, f"is not valid JSON ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(data, dict) or "kind" not in data:
        raise BundleError(path, "has no 'kind' field; not a bundle manifest")
    check_manifest(path, data)
    return data


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _field(path: Path, name: str, problem: str) -> BundleError:
    return BundleError(path, f"field {name} {problem}; not a bundle manifest this suite wrote: remake the bundle")


def _check_count(path: Path, name: str, value: Any) -> None:
    if type(value) is not int or not 0 <= value < 1 << 63:
        raise _field(path, name, f"must be a whole number from 0 to {(1 << 63) - 1}, not {_type_name(value)}"
                     + (f" {value}" if isinstance(value, int | float) else ""))


def _check_rel(path: Path, rel: str) -> None:
    parts = rel.split("/")
    if (not rel or rel.startswith("/") or "\0" in rel or len(rel) > 4096
            or any(part in ("", ".", "..") for part in parts)):
        raise _field(path, f"files[{rel[:200]!r}]", "is not a path inside the bundle")


#: The fields this suite reads, and the types they must have when present (``kind`` must be present).
_TYPES: dict[str, tuple[type, ...]] = {
    "format_version": (int,), "files": (dict,), "sections": (dict,), "ground_truth": (dict,), "model": (dict,),
    "scale": (str,), "generator_version": (str,), "url": (str,), "fetched_at": (str,),
    "emulated": (bool,), "trust_on_first_use": (bool,), "sha256": (str, type(None)),
    "source": (str,), "unzipped_by_hand": (bool,),
}


def check_manifest(path: Path, data: Mapping[str, Any]) -> None:
    """Refuse a manifest whose fields have the wrong type or value, with one :class:`BundleError` line
    naming the file and the field: ``kind`` one of :data:`KINDS`; ``files`` an object of bundle-relative
    paths to ``{"sha256": 64 hex digits, "bytes": a size}`` (so no odd value can switch the integrity
    check off, and no path can point outside the bundle); sizes and seeds whole numbers; strings short."""
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        shown = repr(kind[:100]) if isinstance(kind, str) else f"{_type_name(kind)} {json.dumps(kind)[:100]}"
        raise _field(path, "'kind'", f"is {shown}, not 'paper', 'sample' or 'dynamic'")
    for name, types in _TYPES.items():
        value = data.get(name)
        if name in data and (not isinstance(value, types) or (bool not in types and isinstance(value, bool))):
            want = " or ".join(_type_name(t()) if t is not type(None) else "null" for t in types)
            raise _field(path, name, f"must be {want}, not {_type_name(value)}")
    for name in ("seed", "archive_bytes"):
        if name in data:
            _check_count(path, name, data[name])
    if isinstance(data.get("sha256"), str) and not _HEX64.fullmatch(data["sha256"]):
        raise _field(path, "sha256", "is not 64 lower-case hex digits")
    for rel, meta in data.get("files", {}).items():
        _check_rel(path, rel)
        name = f"files[{rel!r}]"
        if not isinstance(meta, dict):
            raise _field(path, name, f"must be an object with sha256 and bytes, not {_type_name(meta)}")
        if not isinstance(meta.get("sha256"), str) or not _HEX64.fullmatch(meta["sha256"]):
            raise _field(path, f"{name}.sha256", "must be 64 lower-case hex digits")
        _check_count(path, f"{name}.bytes", meta.get("bytes"))
    stack: list[Any] = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
            stack.extend(value.keys())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str) and len(value) > MAX_STRING:
            raise BundleError(path, f"holds a string of {len(value):,} characters (at most {MAX_STRING:,}); "
                                    "not a bundle manifest")


def find_bundle_root(path: str | os.PathLike[str]) -> Path | None:
    """The nearest directory at or above ``path`` that holds a ``bundle.json``."""
    p = Path(path).resolve()
    for candidate in [p, *p.parents] if p.is_dir() else list(p.parents):
        if (candidate / MANIFEST).is_file():
            return candidate
    return None


#: Only the sample generator writes a trace of the memset variant (no kernel of ours runs there,
#: so neither the paper's bundle nor dynamic.ipynb has one): a bundle holding it is a sample. One folder of
#: one section's sample part is evidence enough; it names no list of sections, and a new one changes nothing.
SAMPLE_LAYOUT_MARKER = Path("block_sched") / "variants" / "memset"


def sample_layout_root(path: str | os.PathLike[str]) -> Path | None:
    """The nearest directory at or above ``path`` laid out like a sample bundle, if any."""
    p = Path(path).resolve()
    for candidate in [p, *p.parents] if p.is_dir() else list(p.parents):
        if (candidate / SAMPLE_LAYOUT_MARKER).is_dir():
            return candidate
    return None


@dataclass(frozen=True)
class Found:
    """Where a path's bundle is, as :func:`find_bundle` found it."""

    manifest_root: Path | None  # the nearest folder at or above the path holding bundle.json
    manifest: Mapping[str, Any]  # its content, checked as a schema (empty without one)
    layout_root: Path | None  # the nearest folder at or above the path laid out like a sample bundle


def find_bundle(path: str | os.PathLike[str]) -> Found:
    """The bundle holding ``path``: its ``bundle.json`` found and read, once per content (cached while its
    mtime, size and inode are unchanged: a command line of several traces of one bundle reads it once),
    and the sample layout's root."""
    manifest_root = find_bundle_root(path)
    manifest = _read(manifest_root, _signature(manifest_root)) if manifest_root is not None else {}
    return Found(manifest_root, manifest, sample_layout_root(path))


def _signature(root: Path) -> tuple[int, int, int] | None:
    try:
        st = (root / MANIFEST).stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


@lru_cache(maxsize=64)
def _read(root: Path, signature: tuple[int, int, int] | None) -> Mapping[str, Any]:
    """``root/bundle.json``, read once per content (``signature``: its mtime, size and inode)."""
    return read_manifest(root) or {}
