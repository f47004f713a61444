"""Tests that change a bundle's data on purpose say what the changed bundle is (issue 22: every run
refuses a bundle whose files no longer match its ``bundle.json``)."""

from __future__ import annotations

import json
from pathlib import Path

from neutrino_ae.bundle.manifest import MANIFEST, file_digests


def reseal(root: Path) -> Path:
    """Record the digests of the files as they are now: the bundle as if its maker had written this
    data (a wrong trace, a buggy generator), which a run then reads and judges."""
    manifest = json.loads((root / MANIFEST).read_text())
    manifest["files"] = file_digests(root)
    (root / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return root


def undigested(root: Path) -> Path:
    """Drop the recorded digests: a tree nobody digested (like a hand-extracted trace.zip), which a run
    reads as it is; what then guards a run's cached results is the runner's input fingerprint."""
    manifest = json.loads((root / MANIFEST).read_text())
    manifest["files"] = {}
    (root / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return root
