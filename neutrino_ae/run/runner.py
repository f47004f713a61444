"""The one section runner, for static.ipynb and dynamic.ipynb alike: an optional collection step,
then the analysis.

* :func:`collect_section` (dynamic.ipynb only) runs the section's own collector into
  ``<trace_root>/<name>/`` and records the section in the tree's ``bundle.json`` (kind ``dynamic``).
* :func:`run_section` runs the section's ``analyze(bundle, out)`` on a :class:`Bundle` (opened once
  by the caller, or here from a root) -- the bundle a notebook reads, or the tree just collected.

Output of a section goes to ``<output_dir>/<name>/``. After the analysis succeeds, a small record
``<output_dir>/<name>/section-run.json`` is written last (atomically): it lists the result's files,
tables, summary rows and text plus a fingerprint. A later call with ``force=False`` rebuilds the
:class:`SectionResult` from that record instead of recomputing when the record belongs to the same
bundle, the fingerprint is unchanged and every listed file still exists with the content it was
written with (its sha256: a per-figure script pointed at the folder, or an edit that kept the size and
put the mtime back, makes it recompute). The fingerprint covers every input file -- the section's
declared inputs plus every file its analysis actually opened under the bundle root (recorded as it
reads, see ``formats/inputs.py``) -- by bundle-relative path and content: the sha256 ``bundle.json``
records for it (checked against the file on this run by ``bundle/trust.py``), else the file hashed
(a tree without digests: traces copied by hand); the entries of every directory the analysis listed or
read a file from (so a file added there, in any layout a reader accepts, is seen); and the code of
the section's folder and of the whole ``neutrino_ae`` package (content hashes) with the package
version. Keyed by content, not by stamps, the cache is reused by a bundle rebuilt with the same
digests (``sample --force``, a fresh extraction) and never by a file whose stamps were put back.
A collected tree (``collected=True``) is always analysed afresh and keeps no record: it changes with
every collection.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

import neutrino_ae
from neutrino_ae.atomic import atomic_open, write_json
from neutrino_ae.bundle.context import Bundle, open_bundle
from neutrino_ae.bundle.manifest import DYNAMIC, MANIFEST, sha256_file, write_dynamic_manifest
from neutrino_ae.errors import InputError, NeutrinoAEError
from neutrino_ae.formats.inputs import recording
from neutrino_ae.report.command.layout import RECORD
from neutrino_ae.report.results import SectionResult, csv_safe
from neutrino_ae.report.section import Section, registry
from neutrino_ae.report.section.driver import analyzer
from neutrino_ae.workloads.neutrino import CollectContext, CollectError

# 4: output files stamped (size, mtime); 5: directory listings fingerprinted; 6: inputs and outputs by content
RECORD_VERSION = 6
PACKAGE_DIR = Path(neutrino_ae.__file__).resolve().parent
log = logging.getLogger(__name__)


def _files(paths: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        out.extend(sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path])
    return out


def input_fingerprint(paths: Iterable[Path], bundle: Bundle | None = None) -> str:
    """Digest of every file under ``paths``: its path (relative to the bundle's ``bundle.json`` folder when
    inside it) and its content's sha256 -- the one ``bundle.json`` records for it when it records one
    (checked against the file on this run when the bundle was opened), else the file hashed. A file that is
    gone counts as changed. Content, not stamps: an edit that kept the size and put the mtime back is seen,
    and the same data rebuilt (new mtimes, ctimes and inodes) is the same."""
    base = bundle.manifest_root.resolve() if bundle is not None and bundle.manifest_root is not None else None
    recorded = bundle.digests if bundle is not None else {}
    h = hashlib.sha256()
    for f in sorted({p.resolve() for p in _files(paths)}):
        rel = f.relative_to(base).as_posix() if base is not None and f.is_relative_to(base) else str(f)
        try:
            meta = recorded.get(rel)
            known = meta.get("sha256") if isinstance(meta, dict) and meta.get("bytes") == f.stat().st_size else None
            h.update(f"{rel}\0{known or sha256_file(f)}\n".encode())
        except OSError:
            h.update(f"{rel}\0missing\n".encode())
    return h.hexdigest()


def listing_fingerprint(dirs: Iterable[Path]) -> str:
    """Digest of the entries (names, folders marked) of every directory in ``dirs``: a file or folder
    added, removed or renamed there changes it; one that is gone or not a directory counts too."""
    h = hashlib.sha256()
    for d in sorted({Path(p).resolve() for p in dirs}):
        try:
            names = sorted(e.name + ("/" if e.is_dir() else "") for e in os.scandir(d))
        except OSError as exc:
            names = [f"\0{type(exc).__name__}"]
        h.update(f"{d}\0{'/'.join(names)}\n".encode())
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


def _write_record(result: SectionResult, out: Path, root: Path, fingerprint: dict[str, Any], kind: str,
                  opened: list[Path], listed: list[Path]) -> None:
    tables: dict[str, str] = {}
    for tname, df in result.tables.items():
        csv = out / f"{tname}.csv"
        if not csv.is_file():  # the analysis normally wrote it through write_results already
            with atomic_open(csv, "w", encoding="utf-8", newline="") as fh:
                csv_safe(df).to_csv(fh, index=False)
        tables[tname] = _rel(csv, out)
    record = {
        "record_version": RECORD_VERSION,
        "section": result.section,
        "bundle_root": str(root.resolve()),
        "bundle_kind": kind,
        "fingerprint": fingerprint,
        "opened": sorted(str(p) for p in opened),
        "listed": sorted(str(p) for p in listed),
        "files": {k: _rel(Path(v), out) for k, v in result.files.items()},
        "tables": tables,
        "summary": result.summary,
        "text": result.text,
        "data": result.data,
    }
    record["outputs"] = _output_stamps(out, [*record["files"].values(), *tables.values()])
    write_json(out / RECORD, record)


def _output_stamps(out: Path, rels: Iterable[str]) -> dict[str, list[Any]] | None:
    """Size and sha256 of every output file: a file rewritten since (by a per-figure command line pointed
    at this folder, an editor, another tool, even one that kept the size and put the mtime back) makes the
    cache recompute instead of vouching for content it did not write. None when one is missing or not a
    regular file."""
    stamps: dict[str, list[Any]] = {}
    for rel in sorted(set(rels)):
        try:
            st = (out / rel).stat()
            if not stat.S_ISREG(st.st_mode):
                return None
            stamps[rel] = [st.st_size, sha256_file(out / rel)]
        except OSError:
            return None
    return stamps


def _fingerprint(bundle: Bundle, declared: list[Path], opened: Iterable[Path], listed: Iterable[Path],
                 code: str) -> dict[str, Any]:
    return {"inputs": input_fingerprint([*declared, *opened], bundle), "listings": listing_fingerprint(listed),
            "code": code}


def _current_record(out: Path, bundle: Bundle, declared: list[Path], code: str) -> dict[str, Any] | None:
    """The cache record in ``out`` if it is complete and was made from these very inputs and code, and
    its output files are still the ones it wrote (their sha256)."""
    root = bundle.root
    path = out / RECORD
    if not path.is_file():
        return None
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
        opened = [Path(p) for p in rec.get("opened", [])]
        listed = [Path(p) for p in rec.get("listed", [])]
    except (OSError, ValueError, TypeError):
        return None  # a damaged cache is just recomputed
    if (root is None or rec.get("record_version") != RECORD_VERSION or rec.get("bundle_root") != str(root.resolve())
            or rec.get("fingerprint") != _fingerprint(bundle, declared, opened, listed, code)):
        return None
    # None also when an output is gone or is no longer a regular file.
    stamps = _output_stamps(out, [*rec.get("files", {}).values(), *rec.get("tables", {}).values()])
    if stamps is None or rec.get("outputs") != stamps:
        return None  # an output was rewritten after the run: recompute rather than show it as ours
    return rec


def _load_record(out: Path, bundle: Bundle, declared: list[Path], code: str) -> SectionResult | None:
    """The cached result in ``out`` (:func:`_current_record`), its tables read back."""
    rec = _current_record(out, bundle, declared, code)
    if rec is None:
        return None
    files = {k: out / v for k, v in rec.get("files", {}).items()}
    table_paths = {k: out / v for k, v in rec.get("tables", {}).items()}
    try:
        tables = {k: pd.read_csv(p) for k, p in table_paths.items()}
    except (OSError, ValueError):
        return None
    return SectionResult(section=rec["section"], data=rec.get("data", {}), files=files, tables=tables,
                         summary=rec.get("summary", []), text=rec.get("text", ""))


def _cache_key(section: Section, root: Path) -> tuple[list[Path], str]:
    """What a section's cache record must match besides the files it opened: its declared inputs and the
    code (the package and the section's folder)."""
    return _declared(section, root), code_fingerprint([PACKAGE_DIR, *([section.folder] if section.folder else [])])


def _declared(section: Section, root: Path) -> list[Path]:
    """The section's declared inputs in the bundle at ``root`` (``Section.inputs``: the first missing one raises
    InputError), those of ``Section.optional_inputs`` that are there, and ``bundle.json``."""
    found: list[Path] = []
    for rel in section.inputs:
        matches = sorted(root.glob(rel)) if "*" in rel else [root / rel] if (root / rel).exists() else []
        if not matches:
            what = "no file matches" if "*" in rel else "missing"
            raise InputError(root / rel, f"{what} (needed by section {section.name}, {section.paper_ref})")
        found.extend(matches)
    return [*found, *sorted(p for rel in section.optional_inputs for p in root.glob(rel)), root / MANIFEST]


def is_cached(name: str, bundle: Bundle, output_dir: str | os.PathLike[str]) -> bool:
    """Whether :func:`run_section` would reuse section ``name``'s results in ``output_dir`` (not forced):
    a check that reads no result back (hashes of the inputs not digested, the outputs and the code), for not
    starting a worker process to find just that."""
    root = bundle.root
    if root is None or not root.is_dir():
        return False
    try:
        key = _cache_key(registry.get(name), root)
    except (NeutrinoAEError, OSError):  # run_section reports it
        return False
    return _current_record(Path(output_dir) / name, bundle, *key) is not None


def collect_section(name: str, trace_root: str | os.PathLike[str], ctx: CollectContext | None = None) -> None:
    """The collection step (dynamic.ipynb): collect section ``name`` into ``trace_root/<name>`` with its
    own collector and record it in the tree's bundle.json; :func:`run_section` analyses it next."""
    section = registry.get(name)
    if not section.collect:
        raise CollectError(f"section {name!r} has no collector")
    ctx = ctx or CollectContext()
    root = Path(trace_root)
    root.mkdir(parents=True, exist_ok=True)
    section.entry("collect")(root, ctx)
    now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    record = {"collected_at": now, "neutrino": ctx.neutrino, "workloads": ctx.workloads}
    if ctx.workloads == "ptx" and section.ptx_workloads:
        record["stand_ins"] = section.ptx_workloads
    write_dynamic_manifest(root, sections={name: record},
                           **({"emulated": True} if ctx.emulated else {}))


def _analyze(section: Section, bundle: Bundle, out: Path) -> SectionResult:
    result = analyzer(section)(bundle, out)
    if not isinstance(result, SectionResult):
        raise NeutrinoAEError(f"{section.name}: analyze returned {type(result).__name__}, not a SectionResult")
    return result


def run_section(name: str, bundle: Bundle | str | os.PathLike[str], output_dir: str | os.PathLike[str],
                force: bool = False, *, collected: bool = False) -> SectionResult:
    """Run section ``name`` on ``bundle`` (a :class:`Bundle`, or a bundle root to open), writing into
    ``output_dir/<name>/``.

    Reuses the cached result of an earlier run with the same inputs and code unless ``force``.
    Missing inputs raise an InputError naming the first missing path, before anything is computed.
    The result's ``data`` gains ``cached`` (bool) so callers can say whether work was done.

    ``collected``: the tree dynamic.ipynb collected (:func:`collect_section`): analysed afresh every
    time, without a cache record, and without the declared-input check (its trace folders carry the
    collection time and pid); its results say ``bundle_kind: dynamic`` where the analysis does not.
    """
    section = registry.get(name)
    if not isinstance(bundle, Bundle):
        if not Path(bundle).is_dir():
            raise InputError(Path(bundle), "bundle root is not a directory")
        bundle = open_bundle(bundle)
    root = bundle.root
    if root is None or not root.is_dir():
        raise InputError(root, "bundle root is not a directory")
    out = Path(output_dir) / name
    start = time.perf_counter()
    if collected:
        out.mkdir(parents=True, exist_ok=True)
        log.info("%s: analysing the collected traces in %s", name, root)
        result = _analyze(section, bundle, out)
        result.data.setdefault("bundle_kind", DYNAMIC)
        result.data["cached"] = False
        log.info("%s: computed in %.2f s -> %s", name, time.perf_counter() - start, out)
        return result
    declared, code = _cache_key(section, root)
    if not force:
        cached = _load_record(out, bundle, declared, code)
        if cached is not None:
            cached.data["cached"] = True
            log.info("%s: reused cached results (inputs and code unchanged) in %.2f s -> %s", name,
                     time.perf_counter() - start, out)
            return cached
    log.info("%s: computing from %s", name, root)
    # Drop a stale record first: if the analysis fails half-way, no old record may vouch for new files.
    (out / RECORD).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    with recording(within=root) as seen:
        result = _analyze(section, bundle, out)
    result.data.setdefault("bundle_kind", bundle.kind)
    # Only inputs count: the analysis also reads back files it wrote itself under ``out``.
    mine = out.resolve()
    opened = [p for p in seen.files if not p.is_relative_to(mine)]
    listed = [p for p in seen.listed if not p.is_relative_to(mine)]
    _write_record(result, out, root, _fingerprint(bundle, declared, opened, listed, code), bundle.kind, opened,
                  listed)
    result.data["cached"] = False
    log.info("%s: computed in %.2f s -> %s", name, time.perf_counter() - start, out)
    log.debug("%s: %d input files read, %d files and %d tables written", name, len(opened), len(result.files),
              len(result.tables))
    return result
