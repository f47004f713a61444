"""Fetching trace bundles: resumable, verified download of the paper's ``trace.zip`` and safe extraction.

Replaces the original notebook's ``wget`` + ``unzip`` shell-outs. What this adds:

* **Resume.** Bytes land in ``<dest>.part``; a retry asks for the rest with an HTTP ``Range``
  header. A server that ignores ``Range`` (answers 200) makes us start again from byte 0; a
  ``416`` for a ``.part`` that already holds the whole file counts as complete.
* **Retries** with exponential backoff on dropped connections, read timeouts and 5xx/429. A
  host that cannot be reached at all (connection refused, DNS failure, connect timeout) gets
  only ``CONNECT_RETRIES`` quick retries, so an offline machine fails in seconds, not minutes.
  401/403/404/410 fail at once.
* **Integrity.** The sha256 is computed while streaming. With an expected digest a mismatch
  deletes the ``.part`` and raises; without one the digest is *trusted on first use* and
  recorded (``<dest>.sha256`` and the bundle manifest) so later runs can be compared.
* **Disk.** Free space is checked against ``Content-Length`` before any byte is written, and
  against the archive's total uncompressed size before extraction.
* **Progress** that stays readable in papermill logs (see :func:`_progress_bar`).
* **Safe extraction** (:func:`extract_zip`): no absolute paths, drive letters, ``..``
  components, symlinks or special files, no duplicate names; everything is extracted into a
  temporary directory beside the destination and only then moved into place.

Bundle root rule: the paper's archive is extracted straight into ``trace_root`` so that
``trace_root/block_sched/...`` etc. exist (the original notebook ran ``unzip`` in the repo root
and then read ``block_sched/...``). If the archive instead wraps everything in a single
top-level folder (``trace/block_sched/...``) that folder is stripped, unless its name is itself
a section folder (an archive holding only ``dmat/`` keeps it).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import os
import re
import shutil
import stat
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_text
from neutrino_ae.bundle.manifest import MANIFEST, PAPER, SAMPLE, read_manifest, write_manifest
from neutrino_ae.errors import BundleError

PAPER_BUNDLE_URL = "https://pub-eef24bf0aa5b4950860ea28dfbe39d8c.r2.dev/trace.zip"

# Top-level folders of the paper's trace.zip (see docs/DESIGN.md, "Sample bundle layout").
SECTION_DIRS = ("block_sched", "dmat", "kernel_overhead", "max_mem", "exposed_latency", "warp_sched")

DOWNLOAD_DIR = ".download"  # hidden, so bundle.file_digests() leaves the archive out
ARCHIVE_NAME = "trace.zip"
CONNECT_RETRIES = 2
CONNECT_BACKOFF_S = 0.5
CHUNK = 1 << 20
MAX_BACKOFF_S = 30.0
# Slack on disk checks: filesystems need some room for metadata, and running a disk to exactly
# zero breaks everything else on the machine.
DISK_SLACK = 64 << 20

_FATAL_STATUS = {401: "unauthorised", 403: "forbidden", 404: "not found", 410: "gone"}

SAMPLE_HINT = (
    'to run offline on synthetic data use bundle="sample" (notebook parameter `-p bundle sample`, '
    "or `python -m neutrino_ae sample --out <trace_root>`)"
)


# --------------------------------------------------------------------------------------------- download


_sleep = time.sleep  # tests replace this to keep retries instant


class _Retryable(Exception):
    """A transient failure; ``connect`` marks failures to reach the host at all."""

    def __init__(self, message: str, connect: bool = False) -> None:
        super().__init__(message)
        self.connect = connect


def download(url: str, dest: str | os.PathLike[str], sha256: str | None = None, retries: int = 5,
             backoff: float = 1.0, timeout: float | tuple[float, float] = (10.0, 60.0),
             progress: bool = True) -> Path:
    """Download ``url`` to ``dest`` (resuming ``<dest>.part``), verify it, and return ``dest``.

    ``sha256``: expected hex digest; ``None`` trusts the first download and records its digest in
    ``<dest>.sha256`` (``sha256sum`` format). ``retries`` bounds consecutive failed attempts that
    made no progress (an attempt that grew the ``.part`` resets the count); backoff doubles from
    ``backoff`` seconds up to 30 s. ``timeout`` is requests' (connect, read) timeout.
    An existing ``dest`` whose digest matches (or any existing ``dest`` when ``sha256`` is None)
    is reused without touching the network.
    """
    path, _digest = download_with_digest(url, dest, sha256=sha256, retries=retries, backoff=backoff,
                                         timeout=timeout, progress=progress)
    return path


def download_with_digest(url: str, dest: str | os.PathLike[str], sha256: str | None = None,
                         retries: int = 5, backoff: float = 1.0,
                         timeout: float | tuple[float, float] = (10.0, 60.0),
                         progress: bool = True) -> tuple[Path, str]:
    """Like :func:`download` but also return the file's sha256 (hex)."""
    import requests  # imported here: the analyses import this package without needing requests

    dest = Path(dest)
    expected = _normalise_digest(sha256, url)
    dest.parent.mkdir(parents=True, exist_ok=True)
    sidecar = dest.with_name(dest.name + ".sha256")

    if dest.is_file():
        digest = _recorded_digest(sidecar, dest) or _sha256_of(dest)
        if expected is None or digest == expected:
            return dest, digest
        # A stale or foreign file under our name: fetch afresh, replacing it only once verified.

    part = dest.with_name(dest.name + ".part")
    failures = 0
    best = part.stat().st_size if part.is_file() else 0
    with requests.Session() as session:
        while True:
            try:
                digest = _attempt(session, url, part, timeout, progress)
                break
            except _Retryable as exc:
                size = part.stat().st_size if part.is_file() else 0
                if size > best:
                    best, failures = size, 0
                failures += 1
                limit = min(retries, CONNECT_RETRIES) if exc.connect else retries
                if failures > limit:
                    what = "could not connect" if exc.connect else "download kept failing"
                    raise BundleError(url, f"{what} after {failures} attempts ({exc})") from None
                # An unreachable host is usually "offline": keep those waits short.
                base = min(backoff, CONNECT_BACKOFF_S) if exc.connect else backoff
                delay = min(MAX_BACKOFF_S, base * 2 ** (failures - 1))
                _note(progress, f"retrying {url} in {delay:.1f}s ({exc})")
                _sleep(delay)

    if expected is not None and digest != expected:
        part.unlink(missing_ok=True)
        raise BundleError(url, f"sha256 mismatch: expected {expected}, got {digest}; "
                               "the partial download was deleted")
    os.replace(part, dest)
    write_text(sidecar, f"{digest}  {dest.name}\n")
    return dest, digest


def _attempt(session: Any, url: str, part: Path, timeout: Any, progress: bool) -> str:
    """One GET; appends to ``part``; returns the digest of the complete file or raises."""
    import requests

    have = part.stat().st_size if part.is_file() else 0
    # identity: a transparently gzip-decoded body would make byte offsets meaningless for Range.
    headers = {"Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        resp = session.get(url, headers=headers, stream=True, timeout=timeout, allow_redirects=True)
    except (requests.exceptions.ConnectTimeout, requests.exceptions.ProxyError) as exc:
        raise _Retryable(_short(exc), connect=True) from None
    except requests.exceptions.ConnectionError as exc:
        raise _Retryable(_short(exc), connect=_is_unreachable(exc)) from None
    except requests.exceptions.Timeout as exc:
        raise _Retryable(_short(exc)) from None
    except requests.exceptions.RequestException as exc:
        raise BundleError(url, f"request failed: {_short(exc)}") from None

    with resp:
        status = resp.status_code
        if status in _FATAL_STATUS:
            raise BundleError(url, f"HTTP {status} ({_FATAL_STATUS[status]}); check the URL")
        if status == 429 or status >= 500:
            raise _Retryable(f"HTTP {status}")
        if status == 416:
            total = _content_range_total(resp.headers.get("Content-Range", ""))
            if have and (total is None or total == have):
                return _sha256_of(part)  # the .part already holds every byte
            part.unlink(missing_ok=True)
            raise _Retryable(f"HTTP 416 with {have} bytes on disk but {total} on the server; restarting")
        if status == 206:
            start = _content_range_start(resp.headers.get("Content-Range", ""))
            if start != have:
                part.unlink(missing_ok=True)
                raise _Retryable(f"server resumed at byte {start}, not {have}; restarting")
            total = _content_range_total(resp.headers.get("Content-Range", ""))
            mode = "ab"
        elif status == 200:
            if have:
                _note(progress, f"{url}: server ignored the Range request; restarting from byte 0")
            have = 0
            length = resp.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            mode = "wb"
        else:
            raise BundleError(url, f"unexpected HTTP {status} {resp.reason or ''}".rstrip())

        if total is not None:
            _check_disk(part.parent, total - have, url)
        hasher = hashlib.sha256()
        if mode == "ab":
            _hash_into(hasher, part)
        received = have
        bar = _progress_bar(progress, total, have, part.name.removesuffix(".part"))
        try:
            with open(part, mode) as fh:
                try:
                    for chunk in resp.iter_content(CHUNK):
                        fh.write(chunk)
                        hasher.update(chunk)
                        received += len(chunk)
                        if bar is not None:
                            bar.update(len(chunk))
                except (requests.exceptions.ChunkedEncodingError, requests.exceptions.ConnectionError,
                        requests.exceptions.Timeout) as exc:
                    raise _Retryable(f"connection dropped after {received} bytes ({_short(exc)})") from None
                fh.flush()
                os.fsync(fh.fileno())
        finally:
            if bar is not None:
                bar.close()
        if total is not None and received != total:
            raise _Retryable(f"connection closed after {received} of {total} bytes")
        return hasher.hexdigest()


def _is_unreachable(exc: BaseException) -> bool:
    """Refused, DNS failure, no route: the host cannot be reached at all (as opposed to a reset)."""
    from urllib3.exceptions import NewConnectionError

    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, NewConnectionError) or isinstance(exc.args[0] if exc.args else None,
                                                                NewConnectionError)


def _progress_bar(enabled: bool, total: int | None, initial: int, name: str) -> Any:
    """A tqdm bar on stderr that stays readable in logs.

    papermill forwards every stderr write of the kernel as one log record (``--log-output``) and
    Jupyter collapses ``\\r`` updates in the saved notebook. tqdm's default 0.1 s refresh would
    turn a 1.5 GB download into thousands of log lines, so when stderr is not a terminal we
    refresh at most every 5 s with a fixed-width ASCII bar: a few hundred short, readable lines.
    In a terminal it behaves like a normal bar.
    """
    if not enabled:
        return None
    from tqdm import tqdm

    interactive = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    return tqdm(total=total, initial=initial, unit="B", unit_scale=True, unit_divisor=1024,
                desc=name, file=sys.stderr, mininterval=0.5 if interactive else 5.0,
                ascii=not interactive, ncols=None if interactive else 90, leave=True)


def _note(progress: bool, message: str) -> None:
    if progress:
        print(message, file=sys.stderr, flush=True)


def _short(exc: BaseException) -> str:
    """The innermost useful part of a requests/urllib3 error, on one line."""
    text = str(exc)
    for pattern in (r"\[Errno -?\d+\] [^'\")]+", r"Failed to resolve '[^']+'", r"Read timed out[^)]*",
                    r"IncompleteRead\([^)]*\)", r"Connection refused"):
        m = re.search(pattern, text)
        if m:
            return m.group(0).strip()
    return " ".join(text.split())[:200] or type(exc).__name__


def _content_range_start(value: str) -> int | None:
    m = re.match(r"\s*bytes\s+(\d+)-\d+/(\d+|\*)", value)
    return int(m.group(1)) if m else None


def _content_range_total(value: str) -> int | None:
    m = re.match(r"\s*bytes\s+(?:\d+-\d+|\*)/(\d+)", value)
    return int(m.group(1)) if m else None


def _normalise_digest(sha256: str | None, url: str) -> str | None:
    if sha256 is None or sha256 == "":
        return None
    digest = sha256.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise BundleError(url, f"expected sha256 {sha256!r} is not 64 hex digits")
    return digest


def _hash_into(hasher: Any, path: Path) -> None:
    with open(path, "rb") as fh:
        while block := fh.read(CHUNK):
            hasher.update(block)


def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    _hash_into(h, path)
    return h.hexdigest()


def _recorded_digest(sidecar: Path, dest: Path) -> str | None:
    # The sidecar is only trusted when it is newer than the file it describes.
    try:
        if sidecar.stat().st_mtime < dest.stat().st_mtime:
            return None
        word = sidecar.read_text(encoding="utf-8").split()[0].lower()
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    return word if re.fullmatch(r"[0-9a-f]{64}", word) else None


def _free_bytes(directory: Path) -> int:
    return shutil.disk_usage(directory).free


def _check_disk(directory: Path, needed: int, what: str | os.PathLike[str]) -> None:
    free = _free_bytes(directory)
    if needed + DISK_SLACK > free:
        raise BundleError(what, f"needs {_human(needed)} of disk but {directory} has only {_human(free)} "
                                "free; free some space or choose another --trace-root")


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


# ---------------------------------------------------------------------------------------------- extract

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


def extract_zip(zip_path: str | os.PathLike[str], dest_dir: str | os.PathLike[str],
                strip_single_root: bool = True, overwrite: bool = False) -> list[Path]:
    """Safely extract ``zip_path`` into ``dest_dir``; return the extracted files' final paths.

    Every entry is validated before anything is written. Extraction goes to a temporary directory
    beside ``dest_dir``; only when every member decompressed with a good CRC are the top-level
    entries moved into ``dest_dir``. An existing top-level entry of the same name is an error
    unless ``overwrite`` (then it is replaced). With ``strip_single_root`` an archive whose
    entries all sit in one top-level folder that is not a section name is unwrapped.
    """
    archive = Path(zip_path)
    dest = Path(dest_dir)
    if not archive.is_file():
        raise BundleError(archive, "archive not found")
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise BundleError(archive, f"not a valid zip archive (truncated or corrupt download?): {exc}") from None
    except OSError as exc:
        raise BundleError(archive, f"cannot read: {exc.strerror or exc}") from None

    with zf:
        members = _plan(zf, archive, strip_single_root)
        dest.mkdir(parents=True, exist_ok=True)
        total = sum(info.file_size for info, _rel in members if not info.is_dir())
        _check_disk(dest, total, archive)
        tops = sorted({rel[0] for _info, rel in members})
        if not overwrite:
            clash = [t for t in tops if (dest / t).exists() or (dest / t).is_symlink()]
            if clash:
                raise BundleError(dest / clash[0], "already exists; refusing to overwrite (use force)")
        staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=dest))
        try:
            written = _extract_members(zf, archive, members, staging)
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
        if only_under and top not in SECTION_DIRS:
            planned = [(info, parts[1:]) for info, parts in planned if len(parts) > 1]
            if not planned:
                raise BundleError(archive, f"the archive holds only the empty folder {top!r}")
    return planned


def _extract_members(zf: zipfile.ZipFile, archive: Path, members: list[tuple[zipfile.ZipInfo, tuple[str, ...]]],
                     staging: Path) -> list[Path]:
    written: list[Path] = []
    for info, parts in members:
        target = staging.joinpath(*parts)
        if info.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with zf.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, CHUNK)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
            # BadZipFile covers "Bad CRC-32"; zlib.error/EOFError a truncated or garbled stream.
            raise BundleError(archive, f"entry {info.filename!r} is corrupt ({exc}); "
                                       "delete the archive and download it again") from None
        except OSError as exc:
            raise BundleError(target, f"cannot write while extracting {archive.name}: "
                                      f"{exc.strerror or exc}") from None
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


# ------------------------------------------------------------------------------------------------ bundles


# Data files that only an extracted trace.zip has; the repo's code folders share the section
# names, so bare folders prove nothing.
_PAPER_MARKERS = ("block_sched/*/result/*.bin", "dmat/*.dmat", "exposed_latency/*.csv",
                  "warp_sched/*/result/*.bin", "max_mem/*/*/*/stdout.log", "kernel_overhead/*/*/*/*")


def has_paper_layout(root: str | os.PathLike[str]) -> bool:
    """True when ``root`` holds an extracted ``trace.zip``: data files of at least two sections."""
    root = Path(root)
    return sum(next(root.glob(pattern), None) is not None for pattern in _PAPER_MARKERS) >= 2


def _refuse_source_tree(root: Path) -> None:
    if (root / "pyproject.toml").is_file() or (root / "neutrino_ae").is_dir():
        raise BundleError(root, "is the source tree; its per-figure code folders share the bundle's "
                                "folder names; use a separate trace root such as traces/")


def fetch_paper_bundle(trace_root: str | os.PathLike[str], url: str = PAPER_BUNDLE_URL,
                       sha256: str | None = None, force: bool = False, progress: bool = True,
                       keep_zip: bool = False, retries: int = 5, backoff: float = 1.0,
                       timeout: float | tuple[float, float] = (10.0, 60.0)) -> Path:
    """Download and extract the paper's bundle into ``trace_root``; write its ``bundle.json``.

    Idempotent: a ``trace_root`` whose manifest says ``paper`` is returned as is (an explicit
    ``sha256`` must match the recorded one), as is a ``trace.zip`` extracted by hand (paper
    layout, no manifest). ``force`` downloads and extracts again, replacing the section folders.
    The archive is downloaded to ``trace_root/.download/trace.zip`` and deleted after a
    successful extraction unless ``keep_zip``.
    """
    root = Path(trace_root)
    expected = _normalise_digest(sha256, url)
    manifest = read_manifest(root)
    archive = root / DOWNLOAD_DIR / ARCHIVE_NAME
    if manifest is not None and not force:
        if manifest["kind"] != PAPER:
            raise BundleError(root / MANIFEST, f"holds a {manifest['kind']} bundle, not the paper's; "
                                               "choose another trace root or pass force")
        recorded = manifest.get("sha256")
        if expected is not None and recorded and recorded != expected:
            raise BundleError(root / MANIFEST, f"was fetched from an archive with sha256 {recorded}, "
                                               f"not {expected}; pass force to fetch again")
        return root
    if manifest is None and not force and has_paper_layout(root):
        _note(progress, f"{root}: using the extracted paper traces already there (no {MANIFEST})")
        return root

    _refuse_source_tree(root)
    root.mkdir(parents=True, exist_ok=True)
    if force:
        for stale in (archive, archive.with_name(archive.name + ".part"),
                      archive.with_name(archive.name + ".sha256")):
            stale.unlink(missing_ok=True)
    _note(progress, f"fetching {url} -> {archive}")
    archive, digest = download_with_digest(url, archive, sha256=expected, retries=retries, backoff=backoff,
                                           timeout=timeout, progress=progress)
    _note(progress, f"extracting {archive} into {root}")
    extract_zip(archive, root, overwrite=force)
    write_manifest(root, PAPER, url=url, sha256=digest,
                   fetched_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                   trust_on_first_use=expected is None)
    if not keep_zip:
        archive.unlink(missing_ok=True)
        archive.with_name(archive.name + ".sha256").unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            archive.parent.rmdir()
    return root


def ensure_sample_bundle(trace_root: str | os.PathLike[str], scale: str = "small", seed: int = 0,
                         force: bool = False, progress: bool = True,
                         generator: Callable[..., Any] | None = None) -> Path:
    """A sample bundle at ``trace_root``: reused when one with this scale and seed is there.

    A sample bundle with another scale/seed, or ``force``, is regenerated; only a directory whose
    manifest says ``sample`` is ever deleted. Refuses to overwrite anything else.
    """
    root = Path(trace_root)
    manifest = read_manifest(root)
    if manifest is not None and manifest["kind"] != SAMPLE:
        raise BundleError(root / MANIFEST, f"holds a {manifest['kind']} bundle; refusing to replace it "
                                           "with a sample bundle; choose another trace root")
    if manifest is not None and not force:
        if str(manifest.get("scale")) == str(scale) and manifest.get("seed") == seed:
            return root
        _note(progress, f"{root}: sample bundle has scale={manifest.get('scale')} seed={manifest.get('seed')}; "
                        f"regenerating with scale={scale} seed={seed}")
    if manifest is None and root.is_dir() and any(root.iterdir()):
        raise BundleError(root, "exists, is not empty and has no bundle.json; refusing to write a sample "
                                "bundle into it; remove it or choose another trace root")
    _refuse_source_tree(root)
    if generator is None:
        from neutrino_ae.sample import generate_bundle as generator  # lazy: written by another module

    # Generate beside the root and swap it in at the end, so an interrupted run (Ctrl-C in
    # `make run`) leaves either the old bundle or none, never a half-written one that the next
    # run would have to refuse. The staging name is fixed, so a leftover is ours to remove.
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = root.parent / f".{root.name}.generating"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        made = generator(staging, scale=scale, seed=seed, progress=progress)
        made = staging if made is None else Path(made)
        if read_manifest(made) is None:
            raise BundleError(made, "the sample generator wrote no bundle.json")
        inner = made.resolve().relative_to(staging.resolve())
        if manifest is not None:
            shutil.rmtree(root)
        elif root.is_dir():
            root.rmdir()  # empty, checked above
        os.replace(staging, root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root / inner


def ensure_bundle(trace_root: str | os.PathLike[str], bundle: str = "auto", url: str = PAPER_BUNDLE_URL,
                  sha256: str | None = None, sample_scale: str = "small", seed: int = 0,
                  force: bool = False, progress: bool = True) -> Path:
    """The bundle root the notebooks should read, fetching or generating it when needed.

    * ``"sample"``: the synthetic sample bundle (generated if absent, reused otherwise).
    * ``"paper"``: the authors' traces, downloaded from ``url``.
    * ``"auto"``: whatever bundle is already at ``trace_root`` (manifest of any kind, or an
      extracted ``trace.zip``); otherwise the paper download. If that fails the error says how to
      use the sample bundle; it never falls back to synthetic data on its own.
    """
    root = Path(trace_root)
    if bundle == "sample":
        return ensure_sample_bundle(root, scale=sample_scale, seed=seed, force=force, progress=progress)
    if bundle == "paper":
        return fetch_paper_bundle(root, url=url, sha256=sha256, force=force, progress=progress)
    if bundle != "auto":
        raise BundleError(None, f"unknown bundle {bundle!r}; expected 'auto', 'paper' or 'sample'")
    if not force and (read_manifest(root) is not None or has_paper_layout(root)):
        return root
    try:
        return fetch_paper_bundle(root, url=url, sha256=sha256, force=force, progress=progress)
    except BundleError as exc:
        raise BundleError(None, f"no trace bundle under {root} and the paper bundle could not be fetched "
                                f"({exc}); {SAMPLE_HINT}") from None
