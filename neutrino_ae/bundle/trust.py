"""A bundle is what it says it is: its files checked against ``bundle.json`` on every run, the paper
archive's digest checked against the pin, and the one line that names the bundle in a verdict.

* **Files.** ``bundle.json`` records the sha256 and size of every file when the bundle is made (the
  sample generator; the paper's ``trace.zip`` right after extraction). :func:`verified_bundle` -- called
  by :func:`neutrino_ae.bundle.context.open_bundle`, i.e. by every ``neutrino-ae run`` and every
  notebook: ``bundle.json`` read once, then :func:`verify_bundle` -- refuses a bundle in which a
  recorded file is missing, changed, or a file was added (a file in a section folder that no digest
  covers would be read as the bundle's), with one :class:`BundleError` line naming the file. A bundle
  without digests (``dynamic``: traces collected on this machine, hundreds of MB, made here) is not
  checked.
* **Speed.** Hashing every file of the small sample (690 files, 32.6 MB) takes about 0.17 s, the paper's
  bundle about a second per GB, on every run. So a file is hashed again only when its state changed
  since it was last found equal to its digest: the cache ``.bundle-verified.json`` in the bundle root
  (``bundle/verified.py``; read once and written at most once a run) keeps, per file, size, mtime and
  ctime (ns), inode and the digest it matched. Any write to a file changes its ctime, which cannot be
  set back (``touch -d`` and ``os.utime`` set only atime/mtime), so a same-size edit with the mtime
  restored is still hashed and caught; a copied bundle has new inodes and is hashed once. With the cache
  the sample's check takes about 0.05 s (stat calls and the walk for added files). The cache catches
  accidents (a tool writing into the bundle, a partial copy), not a forger: one who rewrites
  ``bundle.json`` can rewrite the cache too. A read-only bundle keeps no cache and is hashed each run.
* **The paper's archive.** Its sha256 and size are recorded in ``bundle.json`` at the first download
  (trust on first use) and checked on every later run: against :data:`PAPER_ARCHIVE_SHA256`, the
  published digest, once it is pinned (the one place; None until the authors publish one), and
  against the archive itself while it is kept under ``.download/``. The verdict header says which.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neutrino_ae.bundle.manifest import DYNAMIC, MANIFEST, PAPER, SAMPLE, Found, find_bundle, read_manifest
from neutrino_ae.bundle.verified import read_verified, sha256_file, stat_stamp, write_verified
from neutrino_ae.errors import BundleError

#: The published sha256 of the paper's ``trace.zip``: pinning it is this one line. None: not pinned,
#: the first download is trusted and its digest recorded (the verdict says "not pinned in the repo").
PAPER_ARCHIVE_SHA256: str | None = None

#: Where a kept archive lies in a paper bundle (``neutrino-ae fetch --keep-zip``).
ARCHIVE_PATH = Path(".download") / "trace.zip"
_WHERE = "neutrino_ae/bundle/trust.py PAPER_ARCHIVE_SHA256"


def pinned_digest() -> str | None:
    """The pinned digest of the paper's archive, lower case (None when not pinned)."""
    return PAPER_ARCHIVE_SHA256.strip().lower() if PAPER_ARCHIVE_SHA256 else None


def remedy(root: Path, manifest: Mapping[str, Any]) -> str:
    """How to get an intact bundle of this kind again."""
    if manifest.get("kind") == PAPER:
        return f"fetch it again with `neutrino-ae fetch --force --trace-root {root}`"
    if manifest.get("kind") == SAMPLE:
        return f"regenerate it with `neutrino-ae sample --force --out {root}`"
    return "remake the bundle"


@dataclass(frozen=True)
class Problem:
    path: Path
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def _on_disk(root: Path) -> set[str]:
    """Every file and link under ``root`` as ``bundle.json`` would list it (the manifest and the hidden
    names at the top level, the suite's own bookkeeping, left out), bundle-relative POSIX paths. A hidden
    name inside a section folder is listed like any other: an analysis may read it (issue 36)."""
    found: set[str] = set()
    base = os.fspath(root)
    cut = len(base.rstrip(os.sep)) + 1
    for top, dirs, files in os.walk(base):
        at_top = len(top) < cut
        if at_top:
            dirs[:] = [d for d in dirs if not d.startswith(".")]
        prefix = top[cut:].replace(os.sep, "/") + "/" if not at_top else ""
        links = [d for d in dirs if os.path.islink(os.path.join(top, d))]
        found.update(prefix + name for name in [*files, *links] if not (at_top and name.startswith(".")))
    found.discard(MANIFEST)
    return found


def file_problems(root: Path, manifest: Mapping[str, Any], cache: Mapping[str, list[Any]] | None = None,
                  fresh: dict[str, list[Any]] | None = None) -> list[Problem]:
    """Files of the bundle at ``root`` that do not match ``manifest["files"]``: missing, changed
    (size, then sha256) or not recorded. Empty when the manifest records no files (a dynamic tree).
    ``cache``: the verified-stamp cache (a file in the state it records is not hashed again; None: every
    file hashed); ``fresh`` receives each file found equal to its digest, with its state."""
    recorded = manifest.get("files")
    if not isinstance(recorded, dict) or not recorded:
        return []
    cache = cache or {}
    fresh = {} if fresh is None else fresh
    problems: list[Problem] = []
    base = os.fspath(root)
    for rel, meta in sorted(recorded.items()):
        path = os.path.join(base, rel)
        try:
            st = os.lstat(path)
        except OSError:
            problems.append(Problem(Path(path), "listed in bundle.json but missing"))
            continue
        meta = meta if isinstance(meta, dict) else {}
        want, stamp = meta.get("sha256"), stat_stamp(st)
        if not stat.S_ISREG(st.st_mode):
            problems.append(Problem(Path(path), "listed in bundle.json as a file, but is not a regular file"))
        elif st.st_size != meta.get("bytes"):
            problems.append(Problem(Path(path), f"is {st.st_size:,} bytes, bundle.json recorded "
                                                f"{meta.get('bytes')!r} (changed after the bundle was made; "
                                                "sha256 mismatch)"))
        elif cache.get(rel) == [*stamp, want]:
            fresh[rel] = cache[rel]
        elif (got := _sha_or_error(path)).startswith("cannot"):
            problems.append(Problem(Path(path), got))
        elif got != want:
            problems.append(Problem(Path(path), "content differs from its sha256 recorded in bundle.json "
                                                "(changed after the bundle was made; sha256 mismatch)"))
        elif stat_stamp(os.lstat(path)) == stamp:
            fresh[rel] = [*stamp, want]
    for rel in sorted(_on_disk(root) - set(recorded)):
        problems.append(Problem(root / rel, "not listed in bundle.json: added after the bundle was made "
                                            "(other traces belong in a trace root of their own)"))
    return problems


def _sha_or_error(path: str) -> str:
    """The file's sha256, or ``cannot be read: <why>``."""
    try:
        return sha256_file(path)
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"


def archive_problems(root: Path, manifest: Mapping[str, Any], cache: Mapping[str, list[Any]],
                     fresh: dict[str, list[Any]]) -> list[Problem]:
    """A paper bundle's archive digest against the pin, and a kept archive against its record (hashed only
    when its state is not the one ``cache`` records; ``fresh`` receives its state and digest)."""
    if manifest.get("kind") != PAPER:
        return []
    recorded = str(manifest.get("sha256") or "").lower() or None
    pin = pinned_digest()
    problems = []
    if pin is not None and recorded != pin:
        got = f"an archive with sha256 {recorded}" if recorded else "an archive whose sha256 was not recorded"
        problems.append(Problem(root / MANIFEST, f"was extracted from {got}, not the published digest {pin} "
                                                 f"pinned in {_WHERE}"))
    archive = root / ARCHIVE_PATH
    if recorded and archive.is_file():
        size = manifest.get("archive_bytes")
        try:
            differs = ((size is not None and archive.stat().st_size != size)
                       or _cached_sha(root, archive, cache, fresh) != recorded)
        except OSError as exc:
            return [*problems, Problem(archive, f"cannot be read: {exc.strerror or exc}")]
        if differs:
            problems.append(Problem(archive, f"differs from the archive recorded in bundle.json (sha256 {recorded})"))
    return problems


def _cached_sha(root: Path, path: Path, cache: Mapping[str, list[Any]], fresh: dict[str, list[Any]]) -> str:
    """The kept archive's sha256, through the same cache as the bundle's files (it can be GBs)."""
    rel = path.relative_to(root).as_posix()
    stamp = stat_stamp(path.stat())
    if cache.get(rel, [None])[:4] == stamp:
        fresh[rel] = cache[rel]
        return str(cache[rel][4])
    digest = sha256_file(path)
    if stat_stamp(path.stat()) == stamp:
        fresh[rel] = [*stamp, digest]
    return digest


def verified_bundle(path: str | os.PathLike[str]) -> Found:
    """The bundle holding ``path``, top to bottom: its ``bundle.json`` found, read once and checked as a schema
    (``bundle/manifest.py``), then its files checked against it with the verified-stamp cache
    (:func:`verify_bundle`; a bundle without digests is not checked)."""
    found = find_bundle(path)
    if found.manifest:
        verify_bundle(found.manifest_root, found.manifest)
    return found


def verify_bundle(root: str | os.PathLike[str], manifest: Mapping[str, Any]) -> None:
    """Refuse the bundle at ``root`` (the folder holding ``bundle.json``) unless its files match
    ``manifest`` and a paper archive matches its pin: one :class:`BundleError` line naming the first
    file at fault, how many more there are, and how to get an intact bundle."""
    root = Path(root)
    # The verified-stamp cache, read once and written once: what was found equal to its digest, in what state
    # (entries of no recorded file, e.g. a kept archive's, kept unless checked again here).
    cache = read_verified(root)
    recorded = manifest.get("files") if isinstance(manifest.get("files"), dict) else {}
    fresh = {rel: entry for rel, entry in cache.items() if rel not in recorded}
    problems = [*archive_problems(root, manifest, cache, fresh), *file_problems(root, manifest, cache, fresh)]
    if fresh != cache:
        write_verified(root, fresh)
    if problems:
        first = problems[0]
        more = f" (and {len(problems) - 1} more file(s))" if len(problems) > 1 else ""
        raise BundleError(first.path, f"{first.problem}{more}; the bundle is refused: {remedy(root, manifest)}")


@dataclass(frozen=True)
class Identity:
    """What a verdict says about its bundle: ``digest`` identifies the data (the paper archive's
    sha256; otherwise one sha256 over the recorded file digests), ``line`` is the header line."""

    kind: str
    digest: str | None
    digest_of: str
    pinned: bool | None
    line: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "digest": self.digest, "digest_of": self.digest_of, "pinned": self.pinned,
                "line": self.line}


def files_digest(files: Mapping[str, Any]) -> str | None:
    """One sha256 over a bundle's recorded files (path, size, sha256), or None when none are recorded."""
    if not isinstance(files, Mapping) or not files:
        return None
    h = hashlib.sha256()
    for rel in sorted(files):
        meta = files[rel] if isinstance(files[rel], Mapping) else {}
        h.update(f"{rel}\0{meta.get('bytes')}\0{meta.get('sha256')}\n".encode())
    return h.hexdigest()


def identity(kind: str, manifest: Mapping[str, Any]) -> Identity:
    """The bundle's :class:`Identity` from its kind and manifest."""
    files = manifest.get("files") if isinstance(manifest.get("files"), Mapping) else {}
    of_files = files_digest(files)
    if kind == PAPER and manifest.get("sha256"):
        digest = str(manifest["sha256"]).lower()
        pin = pinned_digest()
        size = manifest.get("archive_bytes")
        size_text = f"{size:,} bytes" if isinstance(size, int) else "size not recorded"
        pinned = "matches the digest pinned in the repo" if pin == digest else "not pinned in the repo"
        line = f"bundle: paper, sha256 {digest} ({size_text}), {pinned}"
        if manifest.get("trust_on_first_use") and pin != digest:
            how = "first download" if manifest.get("url") else f"first use of {manifest.get('source', 'a local copy')}"
            line += f" (trusted on {how}, {manifest.get('fetched_at', 'time not recorded')})"
        return Identity(kind, digest, "trace.zip", pin == digest, line)
    if kind == PAPER:
        by_hand = f", unzipped by hand at {manifest.get('source')}" if manifest.get("unzipped_by_hand") else ""
        return Identity(kind, of_files, "bundle files", False,
                        f"bundle: paper, archive sha256 not recorded (files sha256 {of_files}{by_hand}), "
                        "not pinned in the repo")
    if of_files is not None:
        what = "SYNTHETIC sample" if kind == SAMPLE else kind
        return Identity(kind, of_files, "bundle files",
                        None, f"bundle: {what}, files sha256 {of_files} ({len(files)} files, checked on this run)")
    why = "collected traces are not digested" if kind == DYNAMIC else "no digests recorded"
    return Identity(kind, None, "nothing", None, f"bundle: {kind}, no digest ({why})")


def verify_manifest(root: str | os.PathLike[str]) -> list[str]:
    """Problems found comparing files on disk with the manifest (empty list = intact), each
    ``"<path>: <problem>"``, every file hashed afresh (what every run checks, with its cache: :func:`verify_bundle`)."""
    manifest = read_manifest(root)
    if manifest is None:
        return [f"{Path(root) / MANIFEST}: missing"]
    return [str(problem) for problem in file_problems(Path(root), manifest)]
