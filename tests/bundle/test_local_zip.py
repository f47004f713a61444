"""The paper's trace.zip from anywhere (issue 37 item 5).

A ``trace.zip`` downloaded by hand is given by its path (``-p bundle /path/to/trace.zip``, ``neutrino-ae
fetch --zip``): validated and extracted into the trace root as a download is, recorded with the file as
its source, nothing fetched. The same zip unzipped by hand into a folder (``-p bundle paper --trace-root
<folder>``) is recognised by its layout and recorded with the folder as its source. Both give the
paper-bundle verdict (kind ``paper``, its claims judged), not ``unknown``. Offline, the error says how to
use a local copy. The stand-in zip is two sections of the tiny sample bundle in the paper's layout.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from paper_site import build_paper_zip

from neutrino_ae.bundle import fetch, trust
from neutrino_ae.bundle.context import open_bundle
from neutrino_ae.bundle.manifest import MANIFEST, read_manifest
from neutrino_ae.cli import main
from neutrino_ae.errors import BundleError, NetworkError
from neutrino_ae.run import lock
from neutrino_ae.run.notebook import StaticNotebook

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def paper_zip(tiny_bundle, tmp_path) -> Path:
    """A trace.zip with the paper's layout, somewhere the suite never looks (a downloads folder)."""
    return build_paper_zip(tiny_bundle, tmp_path / "Downloads" / "trace.zip")


def _unzipped(archive: Path, folder: Path) -> Path:
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(folder)
    return folder


def _closed_port_url() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/trace.zip"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_stand_in_has_the_paper_layout(paper_zip, tmp_path):
    assert fetch.has_paper_layout(_unzipped(paper_zip, tmp_path / "by-hand"))


def test_is_zip_choice():
    assert fetch.is_zip_choice("/x/trace.zip") and fetch.is_zip_choice(Path("rel/TRACE.ZIP"))
    assert not any(fetch.is_zip_choice(v) for v in ("auto", "paper", "sample", "", None, 3, "/x/traces"))


def test_a_local_zip_is_extracted_and_recorded_as_its_source(paper_zip, tmp_path, caplog):
    root = tmp_path / "traces" / "paper"
    with caplog.at_level("INFO"):
        assert fetch.ensure_bundle(root, str(paper_zip), url=_closed_port_url()) == root
    assert "fetching" not in caplog.text and f"extracting {paper_zip}" in caplog.text
    manifest = read_manifest(root)
    assert manifest["kind"] == "paper" and manifest["source"] == str(paper_zip) and "url" not in manifest
    assert (manifest["sha256"], manifest["archive_bytes"]) == (_sha(paper_zip), paper_zip.stat().st_size)
    assert manifest["trust_on_first_use"] is True
    assert paper_zip.is_file(), "the user's archive is left where it was"
    bundle = open_bundle(root)
    assert (bundle.kind, bundle.kind_from, bundle.synthetic) == ("paper", "manifest", False)
    assert bundle.identity.digest == _sha(paper_zip)
    assert f"trusted on first use of {paper_zip}" in bundle.identity.line

    # Again: the same archive is reused; another one is refused unless forced; "auto" keeps it.
    assert fetch.use_paper_zip(root, paper_zip, progress=False) == root
    assert fetch.ensure_bundle(root, "auto", url=_closed_port_url(), progress=False) == root
    other = tmp_path / "other.zip"
    shutil.copy(paper_zip, other)
    with zipfile.ZipFile(other, "a") as zf:
        zf.writestr("dmat/extra.dmat", b"x")
    with pytest.raises(BundleError, match=r"not from .*other\.zip .*fetch --force --zip"):
        fetch.use_paper_zip(root, other, progress=False)
    fetch.use_paper_zip(root, other, force=True, progress=False)
    assert read_manifest(root)["sha256"] == _sha(other) and (root / "dmat" / "extra.dmat").is_file()


def test_a_local_zip_is_checked_like_a_download(paper_zip, tmp_path, monkeypatch):
    with pytest.raises(BundleError, match="not found"):
        fetch.ensure_bundle(tmp_path / "t1", str(tmp_path / "missing.zip"), progress=False)
    broken = tmp_path / "broken.zip"
    broken.write_bytes(paper_zip.read_bytes()[:-100])
    with pytest.raises(BundleError):
        fetch.use_paper_zip(tmp_path / "t2", broken, progress=False)
    assert not (tmp_path / "t2" / MANIFEST).exists()
    with pytest.raises(BundleError, match="the sha256 given"):
        fetch.use_paper_zip(tmp_path / "t3", paper_zip, sha256="1" * 64, progress=False)
    # Once the digest is pinned, the archive must match it...
    monkeypatch.setattr(trust, "PAPER_ARCHIVE_SHA256", "2" * 64)
    with pytest.raises(BundleError, match="pinned"):
        fetch.use_paper_zip(tmp_path / "t4", paper_zip, progress=False)
    assert not (tmp_path / "t4").exists()
    monkeypatch.setattr(trust, "PAPER_ARCHIVE_SHA256", _sha(paper_zip))
    root = fetch.use_paper_zip(tmp_path / "t5", paper_zip, progress=False)
    assert open_bundle(root).identity.pinned is True
    # ... and a folder unzipped by hand cannot be checked against it: the archive itself is asked for.
    with pytest.raises(BundleError, match="pass the trace.zip itself"):
        fetch.ensure_bundle(_unzipped(paper_zip, tmp_path / "by-hand"), "paper", url=_closed_port_url())


def test_a_folder_unzipped_by_hand_is_the_papers(paper_zip, tmp_path):
    folder = _unzipped(paper_zip, tmp_path / "anywhere" / "trace")
    assert open_bundle(folder).kind == "unknown"  # before: nobody said what it is
    assert fetch.ensure_bundle(folder, "paper", url=_closed_port_url(), progress=False) == folder
    manifest = read_manifest(folder)
    assert manifest["kind"] == "paper" and manifest["source"] == str(folder.resolve())
    assert manifest["unzipped_by_hand"] is True and "sha256" not in manifest and "url" not in manifest
    bundle = open_bundle(folder)
    assert (bundle.kind, bundle.synthetic) == ("paper", False)
    assert "unzipped by hand at" in bundle.identity.line
    # "auto" records one too, and a file added later is caught like in any recorded bundle.
    auto = _unzipped(paper_zip, tmp_path / "auto")
    assert fetch.ensure_bundle(auto, "auto", url=_closed_port_url(), progress=False) == auto
    assert open_bundle(auto).kind == "paper"
    (auto / "dmat" / "added.dmat").write_bytes(b"x")
    with pytest.raises(BundleError, match="not listed in bundle.json"):
        open_bundle(auto)


def test_a_sample_unzipped_by_hand_stays_synthetic(tiny_bundle, tmp_path):
    folder = tmp_path / "bare"
    shutil.copytree(tiny_bundle, folder)
    (folder / MANIFEST).unlink()
    assert fetch.ensure_bundle(folder, "auto", url=_closed_port_url(), progress=False) == folder
    assert read_manifest(folder) is None and open_bundle(folder).kind == "sample"


def test_a_read_only_folder_unzipped_by_hand_is_left_as_it_is(paper_zip, tmp_path, monkeypatch):
    folder = _unzipped(paper_zip, tmp_path / "ro")

    def read_only(root, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(root))

    monkeypatch.setattr(fetch, "write_manifest", read_only)  # root (CI) writes into a chmod 555 folder
    assert fetch.ensure_bundle(folder, "paper", url=_closed_port_url(), progress=False) == folder
    assert read_manifest(folder) is None and open_bundle(folder).kind == "unknown"


def test_offline_errors_say_how_to_use_a_local_copy(tmp_path, no_sleep):
    for choice in ("paper", "auto"):
        with pytest.raises(NetworkError) as err:
            fetch.ensure_bundle(tmp_path / choice, choice, url=_closed_port_url(), progress=False)
        message = str(err.value)
        assert "\n" not in message and "could not connect" in message
        assert "-p bundle /path/to/trace.zip" in message and "--trace-root <folder>" in message
    assert no_sleep, "a closed port is retried before the error (test_fetch.py times the retries)"


def test_a_failed_fetch_leaves_nothing_behind(tmp_path, no_sleep, capsys):
    """`neutrino-ae fetch` with no network (issue 46 item 3): exit 4, one line, and no empty trace root or
    `.download/` left to puzzle the next run; a trace root the user made stays."""
    root = tmp_path / "traces"
    assert main(["-q", "fetch", "--url", _closed_port_url(), "--trace-root", str(root)]) == 4
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not root.exists()
    root.mkdir()
    assert main(["-q", "fetch", "--url", _closed_port_url(), "--trace-root", str(root)]) == 4
    assert list(root.iterdir()) == []


def test_fetch_zip_on_the_command_line(paper_zip, tmp_path, capsys):
    root = tmp_path / "traces"
    assert main(["fetch", "--zip", str(paper_zip), "--trace-root", str(root)]) == 0
    assert read_manifest(root)["source"] == str(paper_zip)
    assert main(["fetch", "--zip", str(tmp_path / "nope.zip"), "--trace-root", str(tmp_path / "t")]) == 2
    assert "nope.zip" in capsys.readouterr().err


def _judged(verdict: dict) -> None:
    assert verdict["bundle_kind"] == "paper" and verdict["scope"] == "the paper's traces"
    published = [c for c in verdict["claims"] if not c["source"].startswith("sample model")]
    assert published and all(c["status"] in ("PASS", "DIFFERS") for c in published), published


def test_run_static_on_a_zip_from_anywhere(paper_zip, tmp_path):
    """`neutrino-ae run static -p bundle trace.zip` (a relative path, from the downloads folder)."""
    traces, out = tmp_path / "traces", tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "neutrino_ae", "run", "static", "-p", "bundle", "trace.zip",
                           "--trace-root", str(traces), "--sections", "exposed_latency", "--output-dir", str(out),
                           "--report-only"], capture_output=True, text=True, cwd=paper_zip.parent, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "fetching" not in done.stdout + done.stderr
    assert f"paper traces from {paper_zip}" in (out / "static.executed.ipynb").read_text()
    assert read_manifest(traces)["source"] == str(paper_zip)
    _judged(json.loads((out / "verdict.json").read_text()))


def test_static_notebook_on_a_folder_unzipped_by_hand(paper_zip, tmp_path, capsys):
    folder = _unzipped(paper_zip, tmp_path / "unzipped")
    out = tmp_path / "out"
    try:
        nb = StaticNotebook(bundle="paper", trace_root=str(folder), bundle_url=_closed_port_url(),
                            sections="exposed_latency", output_dir=str(out))
        assert nb.kind == "paper"
        nb.summary()
    finally:
        lock.release_output_lock(out)
    assert f"paper traces from {folder.resolve()}" in capsys.readouterr().out
    _judged(json.loads((out / "verdict.json").read_text()))
    assert json.loads((out / "summary.json").read_text())["bundle_kind"] == "paper"


def test_a_folder_holding_the_unzipped_wrapper_folder_points_at_it(paper_zip, tmp_path):
    outer = tmp_path / "unzipped"
    inner = _unzipped(paper_zip, outer / "trace")
    with pytest.raises(BundleError, match=f"one folder down, in {inner}.*--trace-root {inner}"):
        fetch.ensure_bundle(outer, "paper", url=_closed_port_url(), progress=False)
    assert not (outer / MANIFEST).exists()
