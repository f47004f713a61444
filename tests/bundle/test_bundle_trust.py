"""A bundle is what it says it is (issue 22 item 2).

Through the paper-bundle path (a local HTTP server offering a ``trace.zip``): the archive's sha256 and
size are recorded on first download and shown in the verdict header; a file changed after extraction
(same size, mtime put back) is refused on the next run with one line naming it, exit 2, and the
previous run's verdict is gone; a pinned digest the archive does not match is refused, on the first
download and on a bundle fetched before the pin. On a sample bundle: a changed, missing or added file
is refused, and the verification cache never vouches for a file written since it was checked.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paper_site import serve_paper_zip

from neutrino_ae.bundle import fetch, trust
from neutrino_ae.bundle.context import open_bundle
from neutrino_ae.bundle.manifest import MANIFEST, read_manifest
from neutrino_ae.bundle.verified import VERIFIED
from neutrino_ae.errors import BundleError
from neutrino_ae.report.section import NotebookInputError
from neutrino_ae.run import lock
from neutrino_ae.run.notebook import StaticNotebook

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def paper_site(tiny_bundle, tmp_path):
    """(url, sha256, size) of a trace.zip with the paper's layout (two sections of the tiny bundle),
    served on 127.0.0.1."""
    with serve_paper_zip(tiny_bundle, tmp_path / "site") as site:
        yield site


def _run(url: str, traces: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neutrino_ae", "run", "static", "-p", "bundle", "paper",
                           "-p", "bundle_url", url, "--trace-root", str(traces), "--sections", "exposed_latency",
                           "--output-dir", str(out), "--report-only"],
                          capture_output=True, text=True, cwd=REPO, timeout=300, check=False)


def _flip_same_size(path: Path) -> None:
    """Change one byte, keeping the size and putting the mtime back (what a careful tool or a bit flip
    would leave)."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_paper_archive_digest_in_the_header_and_a_changed_file_is_refused_next_run(paper_site, tmp_path):
    url, digest, size = paper_site
    traces, out = tmp_path / "traces", tmp_path / "out"
    first = _run(url, traces, out)
    assert first.returncode == 0, first.stdout + first.stderr
    manifest = read_manifest(traces)
    assert (manifest["sha256"], manifest["archive_bytes"], manifest["trust_on_first_use"]) == (digest, size, True)
    header = f"bundle: paper, sha256 {digest} ({size:,} bytes), not pinned in the repo"
    assert header in " ".join(first.stdout.split()), first.stdout  # wrapped to the terminal's width there
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["bundle"]["digest"] == digest and verdict["bundle"]["pinned"] is False
    assert verdict["bundle"]["line"].startswith(header)
    assert verdict["claims"] and all(c["bundle_digest"] == digest and c["run_id"] == verdict["run_id"]
                                     for c in verdict["claims"])
    assert (out / "summary.json").is_file()
    good = (out / "verdict.json").read_bytes()

    changed = traces / "exposed_latency" / "attn.csv"
    _flip_same_size(changed)
    second = _run(url, traces, out)
    assert second.returncode == 2, second.stdout + second.stderr
    errors = [ln for ln in second.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and str(changed) in errors[0] and "sha256 mismatch" in errors[0], second.stderr
    assert "neutrino-ae fetch --force" in errors[0] and "Traceback" not in second.stderr
    # The refused run publishes nothing: the first run's verdict stays as it was (its own run id), and
    # nothing of the refused run is named verdict.json (docs/reliability.md).
    assert (out / "verdict.json").read_bytes() == good
    assert json.loads((out / "summary.json").read_text())["run_id"] == verdict["run_id"]


def test_a_pinned_digest_the_archive_does_not_match_is_refused(paper_site, tmp_path, monkeypatch):
    url, digest, _ = paper_site
    traces = tmp_path / "traces"
    other = hashlib.sha256(b"the published archive").hexdigest()

    def notebook() -> StaticNotebook:
        try:
            return StaticNotebook(bundle="paper", trace_root=str(traces), bundle_url=url,
                                  sections="exposed_latency", output_dir=str(tmp_path / "out"))
        finally:
            lock.release_output_lock(tmp_path / "out")

    # Pinned before the first download: the archive is downloaded, found different, and nothing extracted.
    monkeypatch.setattr(trust, "PAPER_ARCHIVE_SHA256", other)
    with pytest.raises(NotebookInputError, match=f"sha256 mismatch: expected {other}, got {digest}"):
        notebook()
    assert read_manifest(traces) is None and not (traces / "exposed_latency").exists()

    # Fetched while nothing was pinned, then the pin lands: every later run refuses the bundle.
    monkeypatch.setattr(trust, "PAPER_ARCHIVE_SHA256", None)
    assert "not pinned in the repo" in notebook().bundle.identity.line
    monkeypatch.setattr(trust, "PAPER_ARCHIVE_SHA256", other)
    with pytest.raises(NotebookInputError) as refused:
        notebook()
    message = str(refused.value)
    assert message.startswith(f"{traces / MANIFEST}: ") and digest in message and other in message
    assert "pinned in neutrino_ae/bundle/trust.py" in message and "\n" not in message
    with pytest.raises(BundleError, match="pinned"):
        open_bundle(traces)
    with pytest.raises(BundleError, match=f"not {other}"):
        fetch.fetch_paper_bundle(traces, url=url, progress=False)

    # The pin the archive does match: accepted, and the header says so.
    monkeypatch.setattr(trust, "PAPER_ARCHIVE_SHA256", digest.upper())
    found = notebook().bundle.identity
    assert found.pinned is True and found.line.startswith(f"bundle: paper, sha256 {digest}")
    assert "matches the digest pinned in the repo" in found.line


def test_a_kept_archive_is_checked_against_its_record(paper_site, tmp_path):
    url, digest, _ = paper_site
    root = fetch.fetch_paper_bundle(tmp_path / "traces", url=url, progress=False, keep_zip=True)
    archive = root / ".download" / "trace.zip"
    assert open_bundle(root).identity.digest == digest
    _flip_same_size(archive)
    with pytest.raises(BundleError, match="differs from the archive recorded in bundle.json") as refused:
        open_bundle(root)
    assert str(refused.value).startswith(str(archive))


def test_opening_a_bundle_reads_its_manifest_and_the_verified_cache_once(paper_site, tmp_path, monkeypatch):
    # Issue 49: opening reads top to bottom -- bundle.json read once, the files checked against it with the
    # verified-stamp cache read once and written at most once (the kept archive's entry with the files').
    url, digest, _ = paper_site
    root = fetch.fetch_paper_bundle(tmp_path / "traces", url=url, progress=False, keep_zip=True)
    (root / VERIFIED).unlink()  # nothing vouched for yet: the archive and every file are hashed
    calls: dict[str, int] = {"manifest": 0, "read": 0, "write": 0}

    def counting(name, real):
        def call(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return call

    from neutrino_ae.bundle import context, manifest

    monkeypatch.setattr(manifest, "read_manifest", counting("manifest", manifest.read_manifest))
    monkeypatch.setattr(trust, "read_verified", counting("read", trust.read_verified))
    monkeypatch.setattr(trust, "write_verified", counting("write", trust.write_verified))
    for module in (context, manifest):  # a cold start: bundle.json not read yet in this process
        if hasattr(module, "_read"):
            module._read.cache_clear()
    assert open_bundle(root).identity.digest == digest
    assert calls == {"manifest": 1, "read": 1, "write": 1}
    cache = json.loads((root / VERIFIED).read_text())["files"]
    assert ".download/trace.zip" in cache and set(read_manifest(root)["files"]) <= set(cache)
    calls.update(dict.fromkeys(calls, 0))
    open_bundle(root)  # again, nothing changed: the cache vouches for everything and is not rewritten
    assert calls == {"manifest": 0, "read": 1, "write": 0}


@pytest.fixture
def sample_copy(tiny_bundle, tmp_path) -> Path:
    return Path(shutil.copytree(tiny_bundle, tmp_path / "bundle"))


def test_a_same_size_edit_is_caught_although_the_cache_vouched_for_the_file(sample_copy):
    opened = open_bundle(sample_copy)  # hashes the copy once (new inodes) and caches the states
    cache = json.loads((sample_copy / VERIFIED).read_text())["files"]
    assert set(cache) == set(opened.digests), "every intact file is cached"
    target = sample_copy / "exposed_latency" / "gmm.csv"
    _flip_same_size(target)
    with pytest.raises(BundleError, match="sha256 mismatch") as refused:
        open_bundle(sample_copy)
    assert str(refused.value).startswith(f"{target}: ") and "neutrino-ae sample --force" in str(refused.value)


def test_missing_and_added_files_are_refused(sample_copy):
    gone = sample_copy / "exposed_latency" / "conv.csv"
    gone.unlink()
    with pytest.raises(BundleError, match="listed in bundle.json but missing") as refused:
        open_bundle(sample_copy)
    assert str(refused.value).startswith(f"{gone}: ")
    shutil.copy(sample_copy / "exposed_latency" / "attn.csv", gone)  # back, with another file's bytes
    added = sample_copy / "block_sched" / "Feb_01_00_00_00_1" / "result" / "0.1.bin"  # a newer "collection"
    added.parent.mkdir(parents=True)
    added.write_bytes(b"\0" * 16)
    with pytest.raises(BundleError) as refused:
        open_bundle(sample_copy)
    assert str(refused.value).startswith(f"{gone}: ") and "(and 1 more file(s))" in str(refused.value)
    problems = trust.file_problems(sample_copy, read_manifest(sample_copy))
    assert [p.path for p in problems] == [gone, added]
    assert problems[1].problem.startswith("not listed in bundle.json: added after the bundle was made")


def test_a_dynamic_tree_is_not_digested_and_says_so(tmp_path):
    from neutrino_ae.bundle.manifest import write_dynamic_manifest

    write_dynamic_manifest(tmp_path, sections={"dmat": {}})
    (tmp_path / "dmat").mkdir()
    (tmp_path / "dmat" / "anything.bin").write_bytes(b"1")
    found = open_bundle(tmp_path).identity
    assert found.digest is None and found.line == "bundle: dynamic, no digest (collected traces are not digested)"
