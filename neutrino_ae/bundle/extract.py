"""Safe extraction of a bundle archive (:func:`extract_zip`) and its check before it is trusted
(:func:`validate_zip`).

No absolute paths, drive letters, ``..`` components, symlinks or special files, no duplicate
names, no zip bombs (total size and compression ratio bounded by :class:`ExtractLimits`, from
the central directory and again while writing); everything is extracted into a staging folder
beside the destination (named for :mod:`~neutrino_ae.bundle.leftovers`) and only then moved into
place. Free space is checked against the archive's total uncompressed size first.

If the archive wraps everything in a single top-level folder (``trace/block_sched/...``) that
folder is stripped, unless its name is itself one of the paper archive's folders (an archive holding
only ``dmat/`` keeps it).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from neutrino_ae.bundle.disk import CHUNK, check_disk, human
from neutrino_ae.bundle.leftovers import clean_stale_temp, staging_prefix
from neutrino_ae.errors import BundleError

# Top-level folders of the paper's trace.zip (see docs/DESIGN.md, "Sample bundle layout"): a fact of that
# published archive, which only ever holds these six, not the list of sections (that is the registry's).
PAPER_ZIP_DIRS = ("block_sched", "dmat", "kernel_overhead", "max_mem", "exposed_latency", "warp_sched")
# Zip bomb bounds (see ExtractLimits). Real trace data compresses a few times, a deflate bomb
# about 1000 times; 200 leaves room for very repetitive traces.
MAX_EXTRACT_BYTES = 64 << 30
MAX_RATIO = 200.0
RATIO_ABOVE = 64 << 20

_DRIVE = re.compile(r"^[A-Za-z]:")


def _member_parts(info: zipfile.ZipInfo, archive: Path) -> tuple[str, ...]:
    """The validated path components of a member; raises on anything that could escape."""
    name = info.filename
    bad = None
    if not name or "\x00" in name:
        bad = "an empty or NUL-containing name"
    elif name.startswith(("/", "\\")):
        bad = "an absolute path"
    elif _DRIVE.match(name):
        bad = "a drive letter"
    elif any(p == ".." for p in re.split(r"[/\\]", name)):
        bad = "a '..' component"
    if bad:
        raise BundleError(archive, f"refusing entry {name!r}: {bad}")
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        raise BundleError(archive, f"refusing entry {name!r}: a symbolic link")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise BundleError(archive, f"refusing entry {name!r}: not a regular file or directory")
    parts = tuple(p for p in re.split(r"[/\\]", name) if p not in ("", "."))
    if not parts:
        raise BundleError(archive, f"refusing entry {name!r}: no usable path")
    return parts


@dataclass(frozen=True)
class ExtractLimits:
    """What an archive may expand to, against zip bombs (a few MB that inflate to many GB).

    ``max_bytes``: uncompressed bytes in all. ``max_ratio``: uncompressed size over the
    archive's size on disk, enforced once more than ``ratio_above`` bytes would be written
    (a small archive of zeros is harmless). Both are checked from the central directory
    first and again while writing, since the directory can lie.
    """

    max_bytes: int = MAX_EXTRACT_BYTES
    max_ratio: float = MAX_RATIO
    ratio_above: int = RATIO_ABOVE


def _open_zip(archive: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, NotImplementedError, ValueError, EOFError) as exc:
        # Not only BadZipFile: a garbled directory also gives NotImplementedError ("zip file
        # version 10.5") or UnicodeDecodeError (a name flagged UTF-8 that is not).
        problem = "not a valid zip archive (truncated or corrupt download?)"
        page = _page_kind(archive)
        if page:
            problem = f"an {page}, not a zip archive (a login or error page served with HTTP 200?)"
        raise BundleError(archive, f"{problem}: {' '.join(str(exc).split())[:200]}") from None
    except OSError as exc:
        raise BundleError(archive, f"cannot read: {exc.strerror or exc}") from None


def _page_kind(path: Path) -> str | None:
    """"HTML page" or "XML document" when ``path`` starts like one (what a server answers with
    200 in place of a file: a sign-in page, an S3-style XML error), else None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1024).lstrip().lower()
    except OSError:
        return None
    if head.startswith((b"<!doctype html", b"<html", b"<head")) or b"<html" in head:
        return "HTML page"
    if head.startswith(b"<?xml"):
        return "XML document"
    return None


def _check_expansion(archive: Path, total: int, limits: ExtractLimits) -> None:
    if total > limits.max_bytes:
        raise BundleError(archive, f"expands to {total} bytes, more than the limit of {limits.max_bytes} "
                                   f"bytes ({human(limits.max_bytes)}); refusing a possible zip bomb")
    if total > limits.ratio_above:
        size = max(archive.stat().st_size, 1)
        if total / size > limits.max_ratio:
            raise BundleError(archive, f"expands {human(total)} from {human(size)} (compression ratio "
                                       f"{total / size:.0f}, more than {limits.max_ratio:g}); refusing a "
                                       "possible zip bomb")


def validate_zip(zip_path: str | os.PathLike[str], limits: ExtractLimits | None = None) -> None:
    """Raise BundleError unless ``zip_path`` is a zip archive that would extract cleanly.

    Its central directory must read, every entry must pass :func:`extract_zip`'s name checks and
    ``limits``, and every member must decompress with a good CRC (read, nothing is written).
    """
    archive = Path(zip_path)
    limits = limits or ExtractLimits()
    with _open_zip(archive) as zf:
        members = _plan(zf, archive, strip_single_root=False)
        _check_expansion(archive, sum(i.file_size for i, _ in members if not i.is_dir()), limits)
        written = 0
        for info, _parts in members:
            if not info.is_dir():
                written = _copy_member(zf, info, archive, None, written, limits, advice="")


def extract_zip(zip_path: str | os.PathLike[str], dest_dir: str | os.PathLike[str],
                strip_single_root: bool = True, overwrite: bool = False,
                limits: ExtractLimits | None = None) -> list[Path]:
    """Safely extract ``zip_path`` into ``dest_dir``; return the extracted files' final paths.

    Every entry is validated before anything is written. Extraction goes to a temporary directory
    beside ``dest_dir``; only when every member decompressed with a good CRC are the top-level
    entries moved into ``dest_dir``. An existing top-level entry of the same name is an error
    unless ``overwrite`` (then it is replaced). With ``strip_single_root`` an archive whose
    entries all sit in one top-level folder that is not a section name is unwrapped.
    ``limits`` (default :class:`ExtractLimits`) bound what the archive may expand to.
    """
    archive = Path(zip_path)
    dest = Path(dest_dir)
    limits = limits or ExtractLimits()
    if not archive.is_file():
        raise BundleError(archive, "archive not found")
    with _open_zip(archive) as zf:
        members = _plan(zf, archive, strip_single_root)
        total = sum(info.file_size for info, _rel in members if not info.is_dir())
        _check_expansion(archive, total, limits)
        dest.mkdir(parents=True, exist_ok=True)
        clean_stale_temp(dest)
        check_disk(dest, total, archive)
        tops = sorted({rel[0] for _info, rel in members})
        if not overwrite:
            clash = [t for t in tops if (dest / t).exists() or (dest / t).is_symlink()]
            if clash:
                raise BundleError(dest / clash[0], "already exists; refusing to overwrite (use force)")
        # The pid and host in the name tell a later run whether this folder's owner still lives.
        staging = Path(tempfile.mkdtemp(prefix=staging_prefix(), dir=dest))
        try:
            written = _extract_members(zf, archive, members, staging, limits)
            _move_into_place(staging, dest, tops)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return [dest / rel for rel in written]


def _plan(zf: zipfile.ZipFile, archive: Path,
          strip_single_root: bool) -> list[tuple[zipfile.ZipInfo, tuple[str, ...]]]:
    try:
        infos = zf.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise BundleError(archive, f"corrupt zip directory: {exc}") from None
    planned = [(info, _member_parts(info, archive)) for info in infos]
    if not planned:
        raise BundleError(archive, "the archive is empty")

    files: dict[tuple[str, ...], str] = {}
    dirs: set[tuple[str, ...]] = set()
    for info, parts in planned:
        if info.is_dir():
            dirs.add(parts)
            continue
        if parts in files:
            raise BundleError(archive, f"duplicate entry {info.filename!r} (also {files[parts]!r})")
        files[parts] = info.filename
        dirs.update(parts[:i] for i in range(1, len(parts)))
    clash = next((files[p] for p in files if p in dirs), None)
    if clash is not None:
        raise BundleError(archive, f"entry {clash!r} is both a file and a directory")

    tops = {parts[0] for _info, parts in planned}
    if strip_single_root and len(tops) == 1:
        (top,) = tops
        only_under = all(len(parts) > 1 or info.is_dir() for info, parts in planned)
        if only_under and top not in PAPER_ZIP_DIRS:
            planned = [(info, parts[1:]) for info, parts in planned if len(parts) > 1]
            if not planned:
                raise BundleError(archive, f"the archive holds only the empty folder {top!r}")
    return planned


def _copy_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, archive: Path, target: Path | None,
                 written: int, limits: ExtractLimits, advice: str) -> int:
    """Decompress one member into ``target`` (None: only read it); return ``written`` plus its size.

    Bytes are counted as they come: a member may not yield more than its directory entry
    states, and the archive not more than ``limits`` allow, whatever the directory said.
    """
    produced = 0
    try:
        with zf.open(info) as src, (open(target, "wb") if target is not None else contextlib.nullcontext()) as dst:
            while block := src.read(CHUNK):
                produced += len(block)
                written += len(block)
                if produced > info.file_size:
                    raise BundleError(archive, f"entry {info.filename!r} expands beyond the {info.file_size} "
                                               "bytes its directory entry states; refusing a possible zip bomb")
                if written > min(limits.max_bytes, limits.ratio_above):
                    _check_expansion(archive, written, limits)
                if dst is not None:
                    dst.write(block)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError) as exc:
        # BadZipFile covers "Bad CRC-32"; zlib.error/EOFError a truncated or garbled stream;
        # ValueError (UnicodeDecodeError) a garbled name in the member's local header.
        raise BundleError(archive, f"entry {info.filename!r} is corrupt ({exc}){advice}") from None
    except OSError as exc:
        where = target if target is not None else archive
        raise BundleError(where, f"cannot {'write' if target is not None else 'read'} while extracting "
                                 f"{archive.name}: {exc.strerror or exc}") from None
    return written


def _extract_members(zf: zipfile.ZipFile, archive: Path, members: list[tuple[zipfile.ZipInfo, tuple[str, ...]]],
                     staging: Path, limits: ExtractLimits) -> list[Path]:
    written: list[Path] = []
    total = 0
    for info, parts in members:
        target = staging.joinpath(*parts)
        if info.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        total = _copy_member(zf, info, archive, target, total, limits,
                             advice="; delete the archive and download it again")
        written.append(Path(*parts))
    return written


def _move_into_place(staging: Path, dest: Path, tops: list[str]) -> None:
    # Old entries are parked inside the staging dir (same filesystem, so renames are atomic) and
    # deleted with it; if a rename fails, the parked ones are put back.
    parked = staging / ".replaced"
    parked.mkdir()
    moved: list[str] = []
    try:
        for top in tops:
            final = dest / top
            if final.exists() or final.is_symlink():
                os.replace(final, parked / top)
            os.replace(staging / top, final)
            moved.append(top)
    except OSError as exc:
        for top in moved:
            with contextlib.suppress(OSError):
                shutil.rmtree(dest / top) if (dest / top).is_dir() else (dest / top).unlink()
        for old in parked.iterdir():
            with contextlib.suppress(OSError):
                os.replace(old, dest / old.name)
        raise BundleError(dest, f"cannot move extracted files into place: {exc.strerror or exc}") from None
