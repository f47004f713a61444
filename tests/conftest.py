"""What many tests share: one tiny sample bundle per test session (read it; copy it to change it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI judges a submission once: there the fuzz tests draw the same examples every run (a failure
# reproduces); a developer's run explores new ones and keeps what failed in .hypothesis/.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def tiny_bundle(tmp_path_factory) -> Path:
    """The sample generator's smallest bundle (seed 0); tests must not modify it."""
    from neutrino_ae.sample.generate import generate_bundle

    return generate_bundle(tmp_path_factory.mktemp("tiny-bundle") / "traces", scale="tiny", progress=False)


@pytest.fixture(autouse=True)
def _fresh_logging():
    """Each test starts without the console/run.log handlers an earlier one installed in this process
    (the notebooks' set-up installs them, as in a kernel)."""
    from neutrino_ae import logs

    yield
    logs.reset()
