"""Run one section on a bundle, with a cache of finished results.

Output of a section goes to ``<output_dir>/<name>/``. After the analysis succeeds, a small record
``<output_dir>/<name>/section-run.json`` is written last (atomically): it lists the result's files,
tables, summary rows and text plus a fingerprint. A later call with ``force=False`` rebuilds the
:class:`SectionResult` from that record instead of recomputing when the record belongs to the same
bundle, the fingerprint is unchanged and every listed file still exists. The fingerprint covers
every input file (path, size, mtime in ns, inode), the code of the section's folder and of the
whole ``neutrino_ae`` package (content hashes), and the package version.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

import neutrino_ae
from neutrino_ae.atomic import atomic_open, write_json
from neutrino_ae.bundle import manifest as _bundle
from neutrino_ae.errors import InputError, NeutrinoAEError
from neutrino_ae.report.results import SectionResult
from neutrino_ae.run import registry

RECORD = "section-run.json"
RECORD_VERSION = 2
PACKAGE_DIR = Path(neutrino_ae.__file__).resolve().parent


def _files(paths: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        out.extend([path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()))
    return out


def input_fingerprint(paths: Iterable[Path]) -> str:
    """Digest of every file under ``paths``: relative path, size, mtime (ns) and inode."""
    h = hashlib.sha256()
    for f in _files(paths):
        st = f.stat()
        h.update(f"{f.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\n".encode())
    return h.hexdigest()


def code_fingerprint(folders: Iterable[Path]) -> str:
    """Digest of the content of every ``.py`` file under ``folders`` (and the package version)."""
    h = hashlib.sha256(neutrino_ae.__version__.encode())
    for folder in folders:
        for f in sorted(folder.rglob("*.py")):
            h.update(str(f.relative_to(folder)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _rel(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())


def _write_record(result: SectionResult, out: Path, root: Path, fingerprint: dict[str, Any], kind: str) -> None:
    tables: dict[str, str] = {}
    for tname, df in result.tables.items():
        csv = out / f"{tname}.csv"
        if not csv.is_file():  # the analysis normally wrote it through write_results already
            with atomic_open(csv, "w", encoding="utf-8", newline="") as fh:
                df.to_csv(fh, index=False)
        tables[tname] = _rel(csv, out)
    record = {
        "record_version": RECORD_VERSION,
        "section": result.section,
        "bundle_root": str(root.resolve()),
        "bundle_kind": kind,
        "fingerprint": fingerprint,
        "files": {k: _rel(Path(v), out) for k, v in result.files.items()},
        "tables": tables,
        "summary": result.summary,
        "text": result.text,
        "data": result.data,
    }
    write_json(out / RECORD, record)


def _load_record(out: Path, root: Path, fingerprint: dict[str, Any]) -> SectionResult | None:
    """The cached result in ``out`` if it is complete and was made from these very inputs and code."""
    path = out / RECORD
    if not path.is_file():
        return None
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # a damaged cache is just recomputed
    if (rec.get("record_version") != RECORD_VERSION or rec.get("bundle_root") != str(root.resolve())
            or rec.get("fingerprint") != fingerprint):
        return None
    files = {k: (out / v if not Path(v).is_absolute() else Path(v)) for k, v in rec.get("files", {}).items()}
    table_paths = {k: out / v for k, v in rec.get("tables", {}).items()}
    if not all(p.is_file() for p in [*files.values(), *table_paths.values()]):
        return None
    try:
        tables = {k: pd.read_csv(p) for k, p in table_paths.items()}
    except (OSError, ValueError):
        return None
    return SectionResult(section=rec["section"], data=rec.get("data", {}), files=files, tables=tables,
                         summary=rec.get("summary", []), text=rec.get("text", ""))


def run_section(name: str, bundle_root: str | os.PathLike[str], output_dir: str | os.PathLike[str],
                force: bool = False) -> SectionResult:
    """Run section ``name`` on the bundle at ``bundle_root``, writing into ``output_dir/<name>/``.

    Reuses the cached result of an earlier run with the same inputs and code unless ``force``.
    Missing inputs raise an InputError naming the first missing path, before anything is computed.
    The result's ``data`` gains ``cached`` (bool) so callers can say whether work was done.
    """
    section = registry.get(name)
    root = Path(bundle_root)
    if not root.is_dir():
        raise InputError(root, "bundle root is not a directory")
    inputs = [*section.input_paths(root), *section.optional_paths(root)]
    manifest = root / _bundle.MANIFEST
    fingerprint = {
        "inputs": input_fingerprint([*inputs, *([manifest] if manifest.is_file() else [])]),
        "code": code_fingerprint([PACKAGE_DIR, *([section.folder] if section.folder else [])]),
    }
    out = Path(output_dir) / name
    if not force:
        cached = _load_record(out, root, fingerprint)
        if cached is not None:
            cached.data["cached"] = True
            return cached
    # Drop a stale record first: if the analysis fails half-way, no old record may vouch for new files.
    (out / RECORD).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    result = section.entry("analyze")(root, out)
    if not isinstance(result, SectionResult):
        raise NeutrinoAEError(f"{section.name}: analyze returned {type(result).__name__}, not a SectionResult")
    kind = _bundle.bundle_kind(root)
    result.data.setdefault("bundle_kind", kind)
    _write_record(result, out, root, fingerprint, kind)
    result.data["cached"] = False
    return result
