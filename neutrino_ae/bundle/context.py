"""The bundle a run reads, as one object: :class:`Bundle`, read once and passed to every section.

A run (``neutrino-ae run``, a notebook, :func:`neutrino_ae.run.runner.run_section`) opens its bundle
root once with :func:`open_bundle` and hands the object to each section's ``analyze(bundle, out)``
and to the report. A per-figure command line is given a trace path, not a bundle: it finds the
bundle holding that path with :func:`bundle_of` (once per bundle root, cached while its
``bundle.json`` is unchanged) and uses the object from there on. Nothing outside this package opens
``bundle.json``.

What a bundle is (kind, how the kind is known, ground truth, digests) is decided here:

* ``kind`` comes from ``bundle.json`` at or above the path (``kind_from = "manifest"``), checked as a
  schema when it is read (``bundle/manifest.py``);
* a folder laid out as the sample generator lays it out is a ``sample`` bundle whatever its
  ``bundle.json`` says, and without one (``kind_from = "layout"``: synthetic data never loses its
  label, issue 36);
* otherwise the kind is ``unknown`` (``kind_from = "none"``) and figures and results say that the
  data's provenance is unverified.

:func:`open_bundle` also checks that the bundle is what its ``bundle.json`` says (every recorded file
unchanged, none added, a paper archive matching its pin: ``bundle/trust.py``) and refuses it with
one ``BundleError`` line otherwise; ``Bundle.identity`` is the digest and header line a verdict shows.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neutrino_ae import __version__
from neutrino_ae.bundle.manifest import (
    DYNAMIC,
    SAMPLE,
    SAMPLE_LAYOUT_MARKER,
    UNKNOWN,
    Found,
    find_bundle,
)
from neutrino_ae.bundle.trust import Identity, identity, verified_bundle

#: How a bundle's kind is known.
FROM_MANIFEST, FROM_LAYOUT, FROM_NOTHING = "manifest", "layout", "none"


@dataclass(frozen=True, eq=False)
class Bundle:
    """One bundle, as read at the start of a run.

    ``root`` is the folder a run reads (the bundle root it was given; for a path found by
    :func:`bundle_of`, the folder holding ``bundle.json``, else the sample layout's root; None for a
    path in no bundle). ``manifest_root`` is the folder holding ``bundle.json`` (None without one),
    ``manifest`` its content (empty without one).
    """

    root: Path | None
    kind: str
    kind_from: str
    manifest_root: Path | None = None
    manifest: Mapping[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ what it is
    @property
    def synthetic(self) -> bool | None:
        """True for sample data, False for measured traces, None when nobody can tell (no bundle.json):
        figures and results then carry an "unverified provenance" warning instead of a label."""
        if self.emulated:
            return True
        return True if self.kind == SAMPLE else None if self.kind == UNKNOWN else False

    @property
    def emulated(self) -> bool:
        """Collected with the real Neutrino over the emulated CUDA driver (``make dynamic-emulated``): the
        values are the emulator's fills and time model, synthetic like the sample's."""
        return self.kind == DYNAMIC and self.manifest.get("emulated") is True

    @property
    def digests(self) -> dict[str, dict[str, Any]]:
        """sha256 and size of every file, keyed by bundle-relative POSIX path (empty when not recorded)."""
        files = self.manifest.get("files")
        return dict(files) if isinstance(files, dict) else {}

    @property
    def identity(self) -> Identity:
        """The bundle's digest (the paper archive's sha256, else one over the recorded file digests) and
        the line that names it in a verdict header (``bundle: paper, sha256 ..., not pinned in the repo``)."""
        return identity(self.kind, self.manifest)

    @property
    def generator(self) -> dict[str, Any] | None:
        """How a sample bundle was made (``generator_version``, ``scale``, ``seed``); None for other kinds."""
        if not self.manifest or self.kind != SAMPLE:
            return None
        return {k: self.manifest.get(k) for k in ("generator_version", "scale", "seed")}

    @property
    def warning(self) -> str | None:
        """What a results file must say about the data's provenance, if anything."""
        if self.kind_from == FROM_LAYOUT and self.manifest.get("kind") not in (None, SAMPLE):
            return (f"bundle.json says kind {self.manifest['kind']!r}, but the folder layout is the sample "
                    f"generator's ({SAMPLE_LAYOUT_MARKER.as_posix()} is there), so the data is labelled synthetic")
        if self.kind_from == FROM_LAYOUT:
            return ("bundle.json is missing; the folder layout is the sample generator's, so the data is "
                    "labelled synthetic")
        if self.kind == UNKNOWN:
            return "no bundle.json: where this data came from (GPU or the sample generator) is unknown"
        return None

    def collected(self, section: str) -> dict[str, Any]:
        """How a dynamic tree's ``section`` was collected (``bundle.json``'s ``sections.<name>``: time, CLI,
        workload family and its stand-ins); empty for other bundles."""
        sections = self.manifest.get("sections") if self.kind == DYNAMIC else None
        found = sections.get(section) if isinstance(sections, dict) else None
        return dict(found) if isinstance(found, dict) else {}

    def ground_truth(self, section: str) -> Any:
        """The sample generator's ground truth for ``section`` (e.g. ``block_sched``), if any (a copy:
        the caller may change it)."""
        truth = self.manifest.get("ground_truth", {})
        return copy.deepcopy(truth.get(section)) if isinstance(truth, dict) else None

    def provenance(self, input_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Where the data came from, as results files record it (``provenance`` in ``<section>.json``)."""
        prov: dict[str, Any] = {
            "bundle_kind": self.kind,
            "kind_from": self.kind_from,
            "synthetic": self.synthetic,
            **({"emulated": True} if self.emulated else {}),
            "bundle_root": str(self.manifest_root) if self.manifest_root else None,
            "input": str(Path(input_path)) if input_path is not None else None,
            "suite_version": __version__,
        }
        if self.generator is not None:
            prov["generator"] = self.generator
        if self.warning:
            prov["warning"] = self.warning
        return prov

    # ------------------------------------------------------------------ where things are
    def path(self, *parts: str) -> Path:
        """``root/<parts>`` (a section's folder in the bundle, e.g. ``bundle.path("dmat")``)."""
        if self.root is None:
            raise ValueError("a path in no bundle has no bundle folders")
        return self.root.joinpath(*parts)

    def relative(self, path: str | os.PathLike[str]) -> str:
        """How results name an input folder or file: relative to the folder holding ``bundle.json``
        (``warp_sched/tail/Jan_23_...``), or the path as given when it is not inside it."""
        p = Path(path)
        if self.manifest_root is not None:
            try:
                return p.resolve().relative_to(self.manifest_root).as_posix()
            except ValueError:
                pass
        return str(p)

    def trace_dirs(self, *parts: str, recursive: bool = False) -> list[Path]:
        """The trace directories in ``root/<parts>``, oldest first, newest last: ordered by the time in
        their names (``neutrino_ae/formats/tracedir.py``, the one rule)."""
        from neutrino_ae.formats.tracedir import find_trace_dirs  # pandas: only when a section asks

        return find_trace_dirs(self.path(*parts), recursive=recursive)


def _kind(found: Found) -> tuple[str, str]:
    """The kind and how it is known: the sample layout's own evidence first (a manifest saying ``paper``
    over the sample's folders does not make them measurements), then ``bundle.json``."""
    manifest = found.manifest
    if manifest and (manifest["kind"] == SAMPLE or found.layout_root is None):
        return str(manifest["kind"]), FROM_MANIFEST
    if found.layout_root is not None:
        return SAMPLE, FROM_LAYOUT
    return UNKNOWN, FROM_NOTHING


def open_bundle(root: str | os.PathLike[str], verify: bool = True) -> Bundle:
    """The bundle a run reads at ``root``, top to bottom: its ``bundle.json`` (at or above ``root``) read once
    and checked as a schema (``bundle/manifest.py``); unless ``verify`` is False, its files checked against it
    with the verified-stamp cache (``bundle/trust.py``: a changed, missing or added file, or a paper archive
    that does not match its pin, raises one ``BundleError`` line); the :class:`Bundle` built."""
    root = Path(root)
    found = verified_bundle(root) if verify else find_bundle(root)
    return Bundle(root, *_kind(found), found.manifest_root, found.manifest)


def bundle_of(path: str | os.PathLike[str]) -> Bundle:
    """The bundle holding ``path`` (a trace file or folder a per-figure command line was given): found
    by walking up to the nearest ``bundle.json`` (else the sample layout), read once per bundle root
    while its ``bundle.json`` is unchanged. A path in no bundle gives a Bundle of kind ``unknown``
    whose ``root`` is None."""
    found = find_bundle(path)
    root = found.manifest_root if found.manifest else found.layout_root
    return Bundle(root, *_kind(found), found.manifest_root, found.manifest)
