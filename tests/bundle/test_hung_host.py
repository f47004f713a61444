"""A host that accepts connections but never answers: bundle="auto" used to wait read timeout x
retries (6.5 minutes) before stopping. Until the server first answers, all attempts together are
bounded (download_limits.ANSWER_DEADLINE_S), a progress line says so, and the notebook stops with one
line that says how to run offline."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from neutrino_ae.bundle import download
from neutrino_ae.bundle.download import limits as download_limits
from neutrino_ae.errors import BundleError
from neutrino_ae.report.section import NotebookStop
from neutrino_ae.run import lock
from neutrino_ae.run.notebook import StaticNotebook


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A listening socket nobody ever reads from: connections complete (the kernel accepts them into
    the backlog), no byte is ever sent back."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        yield f"http://127.0.0.1:{server.getsockname()[1]}/trace.zip"


def test_the_default_bound_is_under_a_minute():
    assert 0 < download_limits.ANSWER_DEADLINE_S <= 60


def test_download_from_a_silent_host_ends_at_the_answer_deadline(silent_url, tmp_path: Path, caplog) -> None:
    start = time.monotonic()
    with pytest.raises(BundleError, match=r"no answer within 1 s \(the host accepts connections"):
        download.download(silent_url, tmp_path / "trace.zip", answer_deadline_s=1.0, timeout=(5.0, 60.0))
    assert time.monotonic() - start < 7  # the deadline, not the 5 s connect or 60 s read timeout
    assert f"contacting {silent_url} (giving up after 1 s without an answer)" in caplog.text  # logged at INFO


def test_auto_bundle_with_a_silent_host_stops_in_bounded_time(silent_url, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(download_limits, "ANSWER_DEADLINE_S", 1.5)  # the notebook's path, with a shorter bound
    monkeypatch.chdir(tmp_path)
    start = time.monotonic()
    try:
        with pytest.raises(NotebookStop) as info:
            StaticNotebook(bundle="auto", bundle_url=silent_url, output_dir=str(tmp_path / "out"))
    finally:
        lock.release_output_lock(tmp_path / "out")
    elapsed = time.monotonic() - start
    assert elapsed < 9, f"took {elapsed:.1f} s"
    message = str(info.value)
    assert "no answer within 1.5 s" in message and 'bundle="sample"' in message and "\n" not in message
    # The notebook's progress lines go to its run.log beside the results (the cell shows warnings only).
    assert "giving up after 1.5 s without an answer" in (tmp_path / "out" / "run.log").read_text()
    assert not (tmp_path / "traces" / "paper" / "bundle.json").exists()
