"""What the bundle tests share."""

from __future__ import annotations

import pytest

from neutrino_ae.bundle import download


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The download's retry waits, recorded instead of slept (in the order asked for)."""
    delays: list[float] = []
    monkeypatch.setattr(download, "_sleep", delays.append)
    return delays
