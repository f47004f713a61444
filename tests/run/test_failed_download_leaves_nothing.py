"""static.ipynb's first run with ``bundle = "auto"`` and no network (issue 46 item 3): one line, and no
empty ``traces/paper/.download`` left behind to puzzle the next run."""

from __future__ import annotations

import pytest

from neutrino_ae.report.section import NotebookNetworkError
from neutrino_ae.run.notebook import StaticNotebook


def test_a_failed_first_download_leaves_no_folders(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotebookNetworkError, match='bundle="sample"'):
        StaticNotebook(bundle="auto", bundle_url="http://127.0.0.1:9/trace.zip", output_dir="out/")
    assert not (tmp_path / "traces").exists()
    (tmp_path / "traces" / "paper").mkdir(parents=True)  # a folder the user made stays, empty or not
    with pytest.raises(NotebookNetworkError):
        StaticNotebook(bundle="auto", bundle_url="http://127.0.0.1:9/trace.zip", output_dir="out/")
    assert sorted(p.name for p in (tmp_path / "traces").rglob("*")) == ["paper"]
