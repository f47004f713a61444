"""What many tests share: one tiny sample bundle per test session (read it; copy it to change it)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_bundle(tmp_path_factory) -> Path:
    """The sample generator's smallest bundle (seed 0); tests must not modify it."""
    from neutrino_ae.sample.generate import generate_bundle

    return generate_bundle(tmp_path_factory.mktemp("tiny-bundle") / "traces", scale="tiny", progress=False)
