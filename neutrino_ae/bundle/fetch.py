"""Trace bundles for the notebooks: the paper's ``trace.zip`` fetched and extracted, or the
synthetic sample bundle generated, and the choice between them (:func:`ensure_bundle`).

Replaces the original notebook's ``wget`` + ``unzip`` shell-outs. The work is done by small
modules with one job each, re-exported here:

* :mod:`~neutrino_ae.bundle.download`: resumable, bounded, verified HTTP download
  (:func:`download`, :func:`download_with_digest`).
* :mod:`~neutrino_ae.bundle.extract`: safe extraction (:func:`extract_zip`) and the check an
  archive passes before its digest is recorded (:func:`validate_zip`, :class:`ExtractLimits`).
* :mod:`~neutrino_ae.bundle.leftovers`: staging folders and temp files of killed runs are removed
  by the next one (:func:`clean_stale_temp`), never those of a run still going.
* :mod:`~neutrino_ae.bundle.disk`: free-space checks.

Bundle root rule: the paper's archive is extracted straight into ``trace_root`` so that
``trace_root/block_sched/...`` etc. exist (the original notebook ran ``unzip`` in the repo root
and then read ``block_sched/...``).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import itertools
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from neutrino_ae.bundle.download import download, download_with_digest, normalise_digest
from neutrino_ae.bundle.download.limits import DOWNLOAD_DEADLINE_S, MAX_ATTEMPTS, MAX_DOWNLOAD_BYTES
from neutrino_ae.bundle.download.transport import note
from neutrino_ae.bundle.extract import PAPER_ZIP_DIRS, ExtractLimits, extract_zip, validate_zip
from neutrino_ae.bundle.leftovers import clean_stale_temp, staging_prefix
from neutrino_ae.bundle.manifest import (
    MANIFEST,
    PAPER,
    SAMPLE,
    SAMPLE_LAYOUT_MARKER,
    read_manifest,
    sample_layout_root,
    sha256_file,
    write_manifest,
)
from neutrino_ae.bundle.target_lock import hold_target
from neutrino_ae.bundle.trust import ARCHIVE_PATH, pinned_digest
from neutrino_ae.errors import BundleError, NetworkError

log = logging.getLogger(__name__)

__all__ = [
    "ARCHIVE_NAME", "DOWNLOAD_DEADLINE_S", "DOWNLOAD_DIR", "MAX_ATTEMPTS", "MAX_DOWNLOAD_BYTES",
    "PAPER_BUNDLE_URL", "SAMPLE_HINT", "PAPER_ZIP_DIRS", "ExtractLimits", "clean_stale_temp", "download",
    "LOCAL_COPY_HINT", "download_with_digest", "ensure_bundle", "ensure_sample_bundle", "extract_zip",
    "fetch_paper_bundle", "has_paper_layout", "is_zip_choice", "record_hand_extracted", "staging_prefix",
    "use_paper_zip", "validate_zip",
]

PAPER_BUNDLE_URL = "https://pub-eef24bf0aa5b4950860ea28dfbe39d8c.r2.dev/trace.zip"
DOWNLOAD_DIR, ARCHIVE_NAME = ARCHIVE_PATH.parts  # hidden, so bundle.file_digests() leaves the archive out

SAMPLE_HINT = (
    'to run offline on synthetic data use bundle="sample" (notebook parameter `-p bundle sample`, '
    "or `python -m neutrino_ae sample --out <trace_root>`)"
)
LOCAL_COPY_HINT = (
    "to use a trace.zip downloaded by hand, pass its path as the bundle (`-p bundle /path/to/trace.zip`, "
    "bundle=\"/path/to/trace.zip\" in the notebook, or `neutrino-ae fetch --zip /path/to/trace.zip`), "
    "or unzip it into a folder of its own and pass that folder as the trace root (`--trace-root <folder>`)"
)
#: The bundle choices that are words; any other value is the path of a local trace.zip.
BUNDLE_WORDS = ("auto", "paper", "sample")

# Data files that only an extracted trace.zip has; the repo's code folders share the section
# names, so bare folders prove nothing. Facts of the published archive, not the list of sections: a
# section added later is never in it, and the registry (a layer above) is not needed to recognise it.
_PAPER_MARKERS = ("block_sched/*/result/*.bin", "dmat/*.dmat", "exposed_latency/*.csv",
                  "warp_sched/*/result/*.bin", "max_mem/*/*/*/stdout.log", "kernel_overhead/*/*/*/*")


def has_paper_layout(root: str | os.PathLike[str]) -> bool:
    """True when ``root`` holds an extracted ``trace.zip``: data files of at least two sections."""
    root = Path(root)
    return sum(next(root.glob(pattern), None) is not None for pattern in _PAPER_MARKERS) >= 2


def is_zip_choice(bundle: object) -> bool:
    """``bundle`` names a local archive (``-p bundle /path/to/trace.zip``) rather than auto/paper/sample:
    a path ending in ``.zip``, or an existing file."""
    if isinstance(bundle, os.PathLike):
        bundle = os.fspath(bundle)
    if not isinstance(bundle, str) or not bundle.strip() or bundle in BUNDLE_WORDS or "\0" in bundle:
        return False
    return bundle.lower().endswith(".zip") or Path(bundle).is_file()


def _expected_digest(sha256: str | None, source: str) -> tuple[str | None, bool]:
    """The digest the archive must have (the one given, else the pinned one) and whether it is the pin's."""
    expected = normalise_digest(sha256, source)
    pin = pinned_digest()
    if pin is not None and expected is not None and expected != pin:
        raise BundleError(source, f"the sha256 given ({expected}) is not the published digest {pin} pinned in "
                                  "neutrino_ae/bundle/trust.py")
    return expected or pin, expected is None and pin is not None


def _nested_paper_layout(root: Path) -> Path | None:
    """The one folder directly under ``root`` holding an extracted ``trace.zip`` (``unzip`` keeps the
    archive's wrapper folder), if ``root`` itself holds none; only the first 64 entries are looked at."""
    try:
        entries = list(itertools.islice(root.iterdir(), 64)) if root.is_dir() else []
    except OSError:
        return None
    found = [d for d in entries if not d.name.startswith(".") and d.is_dir() and has_paper_layout(d)]
    return found[0] if len(found) == 1 else None


def _require_folder(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise BundleError(root, "is not a folder; trace_root must be a folder (or not exist yet)")


def _refuse_source_tree(root: Path) -> None:
    if (root / "pyproject.toml").is_file() or (root / "neutrino_ae").is_dir():
        raise BundleError(root, "is the source tree; its per-figure code folders share the bundle's "
                                "folder names; use a separate trace root such as traces/")


def fetch_paper_bundle(trace_root: str | os.PathLike[str], url: str = PAPER_BUNDLE_URL,
                       sha256: str | None = None, force: bool = False, progress: bool = True,
                       keep_zip: bool = False, retries: int = 5, backoff: float = 1.0,
                       timeout: float | tuple[float, float] = (10.0, 60.0), *,
                       max_bytes: int = MAX_DOWNLOAD_BYTES, max_attempts: int = MAX_ATTEMPTS,
                       deadline_s: float | None = DOWNLOAD_DEADLINE_S,
                       limits: ExtractLimits | None = None) -> Path:
    """Download and extract the paper's bundle into ``trace_root``; write its ``bundle.json``.

    Idempotent: a ``trace_root`` whose manifest says ``paper`` is returned as is (an explicit
    ``sha256``, else the digest pinned in ``bundle/trust.py``, must match the recorded one), as is a
    ``trace.zip`` extracted by hand (paper layout, no manifest). The archive's sha256 and size are
    recorded in ``bundle.json`` (``sha256``, ``archive_bytes``); without a given or pinned digest
    the first download is trusted (``trust_on_first_use``). ``force`` downloads and extracts again,
    replacing the section folders.
    The archive is downloaded to ``trace_root/.download/trace.zip`` and deleted after a
    successful extraction unless ``keep_zip``. It is validated (:func:`validate_zip`) before
    its digest is recorded. ``max_bytes``, ``max_attempts`` and ``deadline_s`` bound the
    download (see :func:`download`), ``limits`` the extraction. Staging folders and temp files
    of killed runs are cleaned up first (:func:`clean_stale_temp`).
    """
    root = Path(trace_root)
    _require_folder(root)
    expected, from_pin = _expected_digest(sha256, url)
    clean_stale_temp(root, tmp_of=(MANIFEST,))
    manifest = read_manifest(root)
    archive = root / DOWNLOAD_DIR / ARCHIVE_NAME
    if manifest is not None and not force:
        if manifest["kind"] != PAPER:
            raise BundleError(root / MANIFEST, f"holds a {manifest['kind']} bundle, not the paper's; the paper's "
                                               "traces go to their own folder: leave trace_root empty (traces/paper/) "
                                               "or choose another empty folder")
        recorded = manifest.get("sha256")
        if expected is not None and recorded and recorded != expected:
            which = " (the published digest pinned in neutrino_ae/bundle/trust.py)" if from_pin else ""
            raise BundleError(root / MANIFEST, f"was fetched from an archive with sha256 {recorded}, "
                                               f"not {expected}{which}; to fetch again run `neutrino-ae fetch "
                                               f"--force --trace-root {root}` (force=True from Python)")
        return root
    if manifest is None and not force and has_paper_layout(root):
        if sample_layout_root(root) is not None:
            raise BundleError(root, f"holds a sample bundle without its {MANIFEST} ({SAMPLE_LAYOUT_MARKER} is "
                                    "there), not the paper's traces; choose another trace root")
        return record_hand_extracted(root, progress)
    if manifest is None and not force and (nested := _nested_paper_layout(root)) is not None:
        raise BundleError(root, f"holds the paper's traces one folder down, in {nested} (unzipped with its wrapper "
                                f"folder); pass that folder as the trace root (`--trace-root {nested}`)")

    _refuse_source_tree(root)
    made = new_folders(root)
    root.mkdir(parents=True, exist_ok=True)
    # The writing part holds the root's lock: never beside a run reading it, nor a sample generation.
    with hold_target(root, progress=progress):
        try:
            _download_and_extract(root, archive, url, expected, force, progress, keep_zip, retries, backoff,
                                  timeout, max_bytes, max_attempts, deadline_s, limits or ExtractLimits())
        except NetworkError as exc:
            # Nothing fetched: no empty .download/ (nor the folders this call made) is left to puzzle the next
            # run; a partial download stays, for the next run to resume.
            remove_if_empty([archive.parent, *made])
            raise NetworkError(exc.path, f"{exc.problem}; {LOCAL_COPY_HINT}") from None
    return root


def new_folders(path: Path) -> list[Path]:
    """``path`` and those of its parents that do not exist yet, deepest first (what making it creates)."""
    out, folder = [], Path(path).absolute()
    while not folder.exists() and folder != folder.parent:
        out.append(folder)
        folder = folder.parent
    return out


def remove_if_empty(folders: list[Path]) -> None:
    """After a failed fetch: remove ``folders`` in order (deepest first) while each is an empty folder; one
    missing is passed over, the first that is not empty (a partial archive kept for resuming) or is a link
    ends it, so a folder holding anything stays with its parents."""
    for folder in folders:
        if not os.path.lexists(folder):
            continue
        if folder.is_symlink():
            return
        try:
            folder.rmdir()
        except OSError:
            return


def _reused(root: Path, manifest: dict[str, Any], digest: str, source: Path) -> Path:
    """``root`` already holds a bundle: reused when it was made from the same archive, refused otherwise."""
    if manifest["kind"] != PAPER:
        raise BundleError(root / MANIFEST, f"holds a {manifest['kind']} bundle, not the paper's; the paper's "
                                           "traces go to their own folder: leave trace_root empty (traces/paper/) "
                                           "or choose another empty folder")
    recorded = manifest.get("sha256")
    if recorded != digest:
        made = f"an archive with sha256 {recorded}" if recorded else "traces without an archive digest"
        raise BundleError(root / MANIFEST, f"was made from {made}, not from {source} (sha256 {digest}); to "
                                           f"replace it run `neutrino-ae fetch --force --zip {source} --trace-root "
                                           f"{root}`, or choose another trace root")
    return root


def use_paper_zip(trace_root: str | os.PathLike[str], archive: str | os.PathLike[str], sha256: str | None = None,
                  force: bool = False, progress: bool = True, *, limits: ExtractLimits | None = None) -> Path:
    """A ``trace.zip`` on this machine (downloaded by hand) made the paper bundle at ``trace_root``.

    The archive is validated (:func:`validate_zip`), checked against ``sha256`` (else the digest pinned in
    ``bundle/trust.py``) and extracted exactly as a download is; ``bundle.json`` records the archive's
    digest and size, and the file as its ``source`` (no ``url``). A ``trace_root`` already made from the
    same archive is reused; one made from another is refused unless ``force``. The archive is not moved
    or deleted.
    """
    root = Path(trace_root)
    _require_folder(root)
    zip_path = Path(archive).expanduser()
    if not zip_path.is_file():
        why = "is not a file" if zip_path.exists() else "not found"
        raise BundleError(zip_path, f"{why}; the bundle must be 'auto', 'paper', 'sample' or the path of a "
                                    "trace.zip downloaded by hand")
    zip_path = zip_path.resolve()
    expected, from_pin = _expected_digest(sha256, str(zip_path))
    limits = limits or ExtractLimits()
    validate_zip(zip_path, limits)
    digest = sha256_file(zip_path)
    if expected is not None and digest != expected:
        which = "the published digest pinned in neutrino_ae/bundle/trust.py" if from_pin else "the sha256 given"
        raise BundleError(zip_path, f"has sha256 {digest}, not {expected} ({which}); it is not the paper's archive "
                                    "or was damaged: download it again")
    clean_stale_temp(root, tmp_of=(MANIFEST,))
    manifest = read_manifest(root)
    if manifest is not None and not force:
        return _reused(root, manifest, digest, zip_path)
    _refuse_source_tree(root)
    root.mkdir(parents=True, exist_ok=True)
    with hold_target(root, progress=progress):
        note(progress, f"extracting {zip_path} into {root}")
        archive_bytes = zip_path.stat().st_size
        extract_zip(zip_path, root, overwrite=force, limits=limits)
        _record(root, source=str(zip_path), sha256=digest, archive_bytes=archive_bytes,
                trust_on_first_use=expected is None)
    return root


def record_hand_extracted(root: Path, progress: bool = True) -> Path:
    """A ``trace.zip`` unzipped by hand into ``root`` (the paper's layout, no ``bundle.json``, none of
    the sample's folders) recorded as the paper's bundle: ``bundle.json`` with kind ``paper``, the
    folder as its ``source`` and every file's digest (no archive digest: there is no archive).

    Once the archive's digest is pinned (``bundle/trust.py``) a folder cannot be checked against it, and
    is refused: the archive itself must be given. A folder that cannot be written to (read-only) is left
    as it is, and runs on it say its provenance is unknown."""
    if pinned_digest() is not None:
        raise BundleError(root, "holds traces unzipped by hand, which cannot be checked against the published "
                                "digest pinned in neutrino_ae/bundle/trust.py; pass the trace.zip itself "
                                "(`-p bundle /path/to/trace.zip`, `neutrino-ae fetch --zip /path/to/trace.zip`)")
    try:
        with hold_target(root, progress=progress):
            if read_manifest(root) is None:  # another process may have recorded it meanwhile
                note(progress, f"{root}: the paper's traces unzipped by hand; recording them in {MANIFEST}")
                _record(root, source=str(root.resolve()), unzipped_by_hand=True, trust_on_first_use=True)
    except OSError as exc:
        log.warning("%s: cannot record the traces unzipped by hand (%s); their provenance stays unknown",
                    root, exc.strerror or exc)
    return root


def _record(root: Path, **fields: Any) -> None:
    """``bundle.json`` of extracted traces: ``paper``, unless the layout is the sample generator's (issue 36)."""
    kind = SAMPLE if (root / SAMPLE_LAYOUT_MARKER).is_dir() else PAPER
    if kind == SAMPLE:
        log.warning("%s: the archive holds the sample generator's layout (%s), not the paper's traces; "
                    "recorded as a SYNTHETIC sample bundle", root, SAMPLE_LAYOUT_MARKER.as_posix())
    write_manifest(root, kind, **fields, fetched_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"))


def _download_and_extract(root: Path, archive: Path, url: str, expected: str | None, force: bool, progress: bool,
                          keep_zip: bool, retries: int, backoff: float, timeout: float | tuple[float, float],
                          max_bytes: int, max_attempts: int, deadline_s: float | None,
                          limits: ExtractLimits) -> None:
    if force:
        for suffix in ("", ".part", ".part.json", ".sha256"):
            archive.with_name(archive.name + suffix).unlink(missing_ok=True)
    elif archive.is_file() and expected is None:
        # An archive kept from an earlier run (killed before extracting, or from an older version
        # that did not validate before trusting) would be reused without a checksum: check it.
        try:
            validate_zip(archive, limits)
        except BundleError as exc:
            raise BundleError(archive, f"{exc.problem}; it was kept from an earlier download that was trusted "
                                       f"without a checksum; run `neutrino-ae fetch --force --trace-root {root}` "
                                       "(force=True from Python) to download it again") from None
    note(progress, f"fetching {url} -> {archive}")
    archive, digest = download_with_digest(url, archive, sha256=expected, retries=retries, backoff=backoff,
                                           timeout=timeout, progress=progress, max_bytes=max_bytes,
                                           max_attempts=max_attempts, deadline_s=deadline_s,
                                           validate=lambda path: validate_zip(path, limits))
    note(progress, f"extracting {archive} into {root}")
    archive_bytes = archive.stat().st_size
    extract_zip(archive, root, overwrite=force, limits=limits)
    # The layout's own evidence first: an archive holding the sample's folders is recorded (and so
    # labelled) as a sample, whatever server it came from (issue 36).
    _record(root, url=url, source=url, sha256=digest, archive_bytes=archive_bytes,
            trust_on_first_use=expected is None)
    if not keep_zip:
        archive.unlink(missing_ok=True)
        archive.with_name(archive.name + ".sha256").unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            archive.parent.rmdir()


def ensure_sample_bundle(trace_root: str | os.PathLike[str], scale: str = "small", seed: int = 0,
                         force: bool = False, progress: bool = True, *,
                         generator: Callable[..., Any], wait_s: float | None = None) -> Path:
    """A sample bundle at ``trace_root``: reused when one with this scale and seed is there.

    A sample bundle with another scale/seed, or ``force``, is regenerated by ``generator``
    (``generator(out, scale=, seed=, progress=)``; the sample package's ``generate_bundle``, passed in
    by the layers above: this package does not know how a sample is made); only a directory whose
    manifest says ``sample`` is ever deleted. Refuses to overwrite anything else.

    One generation per root at a time (:mod:`~neutrino_ae.bundle.target_lock`): a second call waits
    for the first (up to ``wait_s``, default ``$NEUTRINO_AE_SAMPLE_WAIT_S`` or 30 min), then reuses
    the bundle it made.
    """
    root = Path(trace_root)
    _require_folder(root)
    if not force and _matching_sample(root, scale, seed):
        return root  # nothing to write: no lock, so a run reading it (it holds the lock shared) is no obstacle
    with hold_target(root, wait_s, progress):
        return _ensure_sample_locked(root, scale, seed, force, progress, generator)


def _matching_sample(root: Path, scale: str, seed: int) -> bool:
    """A sample bundle of this scale and seed is at ``root`` (its manifest is replaced atomically)."""
    manifest = read_manifest(root)
    return (manifest is not None and manifest["kind"] == SAMPLE and str(manifest.get("scale")) == str(scale)
            and manifest.get("seed") == seed)


def _ensure_sample_locked(root: Path, scale: str, seed: int, force: bool, progress: bool,
                          generator: Callable[..., Any]) -> Path:
    _require_folder(root)
    manifest = read_manifest(root)
    if manifest is not None and manifest["kind"] != SAMPLE:
        raise BundleError(root / MANIFEST, f"holds a {manifest['kind']} bundle; refusing to replace it "
                                           "with a sample bundle; choose another trace root")
    if manifest is not None and not force:
        if str(manifest.get("scale")) == str(scale) and manifest.get("seed") == seed:
            return root
        note(progress, f"{root}: sample bundle has scale={manifest.get('scale')} seed={manifest.get('seed')}; "
                        f"regenerating with scale={scale} seed={seed}")
    if manifest is None and root.is_dir() and any(root.iterdir()):
        raise BundleError(root, "exists, is not empty and has no bundle.json; refusing to write a sample "
                                "bundle into it; remove it or choose another trace root")
    _refuse_source_tree(root)
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
                  force: bool = False, progress: bool = True,
                  generator: Callable[..., Any] | None = None) -> Path:
    """The bundle root the notebooks should read, fetching or generating it when needed.

    * ``"sample"``: the synthetic sample bundle (made by ``generator`` if absent, reused otherwise).
    * ``"paper"``: the authors' traces, downloaded from ``url`` (or a ``trace.zip`` unzipped by hand
      into ``trace_root``, recorded as theirs: :func:`record_hand_extracted`).
    * the path of a ``trace.zip`` on this machine (downloaded by hand): extracted into ``trace_root``
      as a download is (:func:`use_paper_zip`).
    * ``"auto"``: whatever bundle is already at ``trace_root`` (manifest of any kind, or an
      extracted ``trace.zip``); otherwise the paper download. If that fails the error says how to
      use a local copy or the sample bundle; it never falls back to synthetic data on its own.
    """
    root = Path(trace_root)
    _require_folder(root)  # also before an unknown ``bundle`` is refused
    if bundle == "sample":
        if generator is None:
            raise BundleError(None, 'bundle="sample" needs the sample generator (neutrino_ae.sample.generate_bundle)')
        return ensure_sample_bundle(root, scale=sample_scale, seed=seed, force=force, progress=progress,
                                    generator=generator)
    if bundle == "paper":
        return fetch_paper_bundle(root, url=url, sha256=sha256, force=force, progress=progress)
    if is_zip_choice(bundle):
        return use_paper_zip(root, bundle, sha256=sha256, force=force, progress=progress)
    if bundle != "auto":
        raise BundleError(None, f"unknown bundle {bundle!r}; expected 'auto', 'paper', 'sample' or the path of "
                                "a trace.zip")
    # An existing bundle is returned below without fetching; leftovers of a killed fetch go here.
    clean_stale_temp(root, tmp_of=(MANIFEST,))
    if not force and read_manifest(root) is not None:
        return root
    if not force and has_paper_layout(root):
        # Unzipped by hand: the paper's, unless the sample's own folders are there (then its layout labels it).
        return root if sample_layout_root(root) is not None else record_hand_extracted(root, progress)
    try:
        return fetch_paper_bundle(root, url=url, sha256=sha256, force=force, progress=progress)
    except BundleError as exc:
        # A network failure stays one (exit 4): the same command may work later.
        raise (NetworkError if isinstance(exc, NetworkError) else BundleError)(
            None, f"no trace bundle under {root} and the paper bundle could not be fetched ({exc}); "
                  f"{SAMPLE_HINT}") from None
