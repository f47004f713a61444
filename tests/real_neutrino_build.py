"""The real Neutrino built over the emulated driver once per test run (``tools/real_neutrino/harness.py``),
shared by every test process that runs it: a build is ~10 s of compiling per branch. Tests only run
the CLI from it (their traces go to their own work folders); none may change the install."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from shared_build import build_once

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools" / "real_neutrino"))

import harness  # noqa: E402


def shared_install(factory: pytest.TempPathFactory, branch: str = "artifact") -> harness.Install:
    """``branch`` built once this run, or the test skipped with what this machine lacks."""
    reason = harness.unavailable(branch)
    if reason:
        pytest.skip(reason)
    folder = build_once(factory, f"neutrino-{branch}", lambda f: harness.build(branch, f / "install"))
    return harness.installed(branch, folder / "install")
