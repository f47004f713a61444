"""fetch.py against a real HTTP server on 127.0.0.1 (Range, dropped connections, faults) and crafted zips."""

from __future__ import annotations

import hashlib
import io
import json
import random
import re
import socket
import stat
import threading
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from neutrino_ae.bundle import disk, fetch
from neutrino_ae.bundle.manifest import read_manifest, write_manifest
from neutrino_ae.errors import BundleError

pytestmark = pytest.mark.usefixtures("no_sleep")  # every test here: retries recorded, not slept (conftest.py)

MiB = 1 << 20


@dataclass
class ServerState:
    data: bytes = b""
    status: int | None = None      # fixed error status for every request
    fail_5xx: int = 0               # answer 503 this many times first
    drop_after: int | None = None   # first body: send this many bytes, then close the connection
    ignore_range: bool = False
    requests: list[dict[str, str]] = field(default_factory=list)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # keep pytest output clean
        pass

    def _plain(self, status: int, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        st: ServerState = self.server.state  # type: ignore[attr-defined]
        st.requests.append(dict(self.headers))
        if st.status is not None:
            return self._plain(st.status)
        if st.fail_5xx > 0:
            st.fail_5xx -= 1
            return self._plain(503)
        data, start = st.data, 0
        rng = self.headers.get("Range")
        if rng and not st.ignore_range:
            start = int(re.fullmatch(r"bytes=(\d+)-", rng).group(1))
            if start >= len(data):
                return self._plain(416, {"Content-Range": f"bytes */{len(data)}"})
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if st.drop_after is not None:
            cut, st.drop_after = st.drop_after, None
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[tuple[str, ServerState]]:
    state = ServerState()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.state = state  # type: ignore[attr-defined]
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/trace.zip", state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/trace.zip"


def payload(n: int = 3 * MiB) -> bytes:
    return random.Random(0).randbytes(n)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_zip(entries: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, content in entries.items():
            zf.writestr(zipfile.ZipInfo(name), content)
    return buf.getvalue()


# ------------------------------------------------------------------------------------------- download


def test_download_verifies_sha256_and_records_digest(server, tmp_path: Path) -> None:
    url, st = server
    st.data = payload()
    dest = fetch.download(url, tmp_path / "x.zip", sha256=sha(st.data).upper(), progress=False)
    assert dest.read_bytes() == st.data
    assert not (tmp_path / "x.zip.part").exists()
    assert (tmp_path / "x.zip.sha256").read_text().split()[0] == sha(st.data)
    assert st.requests[0]["Accept-Encoding"] == "identity"
    # A verified file is reused without asking the server again.
    fetch.download(url, dest, sha256=sha(st.data), progress=False)
    assert len(st.requests) == 1


def test_dropped_connection_resumes_with_range(server, tmp_path: Path, no_sleep: list[float]) -> None:
    url, st = server
    st.data = payload()
    st.drop_after = MiB + MiB // 2
    dest, digest = fetch.download_with_digest(url, tmp_path / "x.zip", backoff=0.25, progress=False)
    assert dest.read_bytes() == st.data
    assert digest == sha(st.data)  # trust on first use: the digest of what arrived
    assert len(st.requests) == 2
    assert "Range" not in st.requests[0]
    start = int(re.fullmatch(r"bytes=(\d+)-", st.requests[1]["Range"]).group(1))
    assert 0 < start <= MiB + MiB // 2
    assert no_sleep == [0.25]


def test_server_ignoring_range_restarts_from_zero(server, tmp_path: Path) -> None:
    url, st = server
    st.data = payload()
    st.drop_after = MiB + 100
    st.ignore_range = True
    dest = fetch.download(url, tmp_path / "x.zip", sha256=sha(st.data), backoff=0, progress=False)
    assert "Range" in st.requests[1]
    assert dest.read_bytes() == st.data  # not the first MiB twice


def test_complete_part_answered_416_is_finished(server, tmp_path: Path) -> None:
    url, st = server
    st.data = payload(1000)
    (tmp_path / "x.zip.part").write_bytes(st.data)
    # The record that says which URL the .part belongs to (a .part without one is discarded).
    (tmp_path / "x.zip.part.json").write_text(json.dumps({"url": url, "etag": None, "total": 1000}))
    dest = fetch.download(url, tmp_path / "x.zip", sha256=sha(st.data), progress=False)
    assert dest.read_bytes() == st.data
    assert st.requests[0]["Range"] == "bytes=1000-"


def test_5xx_is_retried(server, tmp_path: Path, no_sleep: list[float]) -> None:
    url, st = server
    st.data = payload(5000)
    st.fail_5xx = 2
    fetch.download(url, tmp_path / "x.zip", backoff=1, progress=False)
    assert no_sleep == [1, 2]
    assert (tmp_path / "x.zip").read_bytes() == st.data


def test_persistent_5xx_gives_up(server, tmp_path: Path, no_sleep: list[float]) -> None:
    url, st = server
    st.status = 503
    with pytest.raises(BundleError, match="kept failing after 4 attempts"):
        fetch.download(url, tmp_path / "x.zip", retries=3, backoff=0, progress=False)
    assert len(st.requests) == 4


@pytest.mark.parametrize("status, word", [(404, "not found"), (403, "forbidden")])
def test_404_and_403_fail_at_once(server, tmp_path: Path, status: int, word: str) -> None:
    url, st = server
    st.status = status
    with pytest.raises(BundleError) as err:
        fetch.download(url, tmp_path / "x.zip", progress=False)
    assert str(err.value).startswith(url) and f"HTTP {status} ({word})" in str(err.value)
    assert len(st.requests) == 1
    assert not any(tmp_path.iterdir())


def test_wrong_checksum_leaves_no_file(server, tmp_path: Path) -> None:
    url, st = server
    st.data = payload(10_000)
    with pytest.raises(BundleError, match=f"expected {'0' * 64}, got {sha(st.data)}"):
        fetch.download(url, tmp_path / "x.zip", sha256="0" * 64, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_malformed_expected_digest(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="not 64 hex digits"):
        fetch.download("http://127.0.0.1:9/x", tmp_path / "x", sha256="abc", progress=False)


def test_unreachable_host_fails_after_few_quick_retries(tmp_path: Path, no_sleep: list[float]) -> None:
    url = closed_port_url()
    with pytest.raises(BundleError, match="could not connect after 3 attempts"):
        fetch.download(url, tmp_path / "x.zip", retries=10, backoff=5, progress=False)
    assert no_sleep == [0.5, 1.0]


def test_disk_check_before_writing(server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url, st = server
    st.data = payload(10_000)
    monkeypatch.setattr(disk, "free_bytes", lambda d: 5)
    with pytest.raises(BundleError, match=r"needs 9\.8 KiB of disk .* has only 5 B free"):
        fetch.download(url, tmp_path / "x.zip", progress=False)
    assert not (tmp_path / "x.zip.part").exists() or (tmp_path / "x.zip.part").stat().st_size == 0


def test_progress_bar_goes_to_stderr(server, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url, st = server
    st.data = payload(5000)
    fetch.download(url, tmp_path / "x.zip", progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "x.zip" in captured.err and "100%" in captured.err


# -------------------------------------------------------------------------------------------- extract


def test_extract_strips_single_wrapper_folder(tmp_path: Path) -> None:
    z = tmp_path / "a.zip"
    z.write_bytes(make_zip({"trace/": b"", "trace/dmat/fig1.dmat": b"d", "trace/block_sched/r/0.bin": b"b"}))
    out = fetch.extract_zip(z, tmp_path / "root")
    assert sorted(p.relative_to(tmp_path / "root").as_posix() for p in out) == [
        "block_sched/r/0.bin", "dmat/fig1.dmat"]
    assert (tmp_path / "root/dmat/fig1.dmat").read_bytes() == b"d"
    assert [p.name for p in (tmp_path / "root").iterdir() if p.name.startswith(".")] == []


def test_extract_keeps_a_lone_section_folder(tmp_path: Path) -> None:
    z = tmp_path / "a.zip"
    z.write_bytes(make_zip({"dmat/fig1.dmat": b"d"}))
    fetch.extract_zip(z, tmp_path / "root")
    assert (tmp_path / "root/dmat/fig1.dmat").is_file()


@pytest.mark.parametrize("name, why", [
    ("../evil", "'..' component"),
    ("ok/../../evil", "'..' component"),
    ("/abs/evil", "absolute path"),
    ("C:/evil", "drive letter"),
    ("..\\evil", "'..' component"),
])
def test_extract_refuses_escaping_names(tmp_path: Path, name: str, why: str) -> None:
    z = tmp_path / "in" / "a.zip"
    z.parent.mkdir()
    z.write_bytes(make_zip({"dmat/fig1.dmat": b"d", name: b"pwned"}))
    dest = tmp_path / "in" / "root"
    with pytest.raises(BundleError, match=re.escape(why)) as err:
        fetch.extract_zip(z, dest)
    assert str(z) in str(err.value)
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert written == ["in", "in/a.zip"]  # nothing extracted anywhere, not even the good entry


def test_extract_refuses_symlink_entry(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("dmat/fig1.dmat", b"d")
        link = zipfile.ZipInfo("dmat/link")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
    (tmp_path / "a.zip").write_bytes(buf.getvalue())
    with pytest.raises(BundleError, match="symbolic link"):
        fetch.extract_zip(tmp_path / "a.zip", tmp_path / "root")
    assert not (tmp_path / "root" / "dmat").exists()


def test_extract_refuses_duplicates(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate we are crafting
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("dmat/a.dmat", b"1")
            zf.writestr("dmat/./a.dmat", b"2")
    (tmp_path / "a.zip").write_bytes(buf.getvalue())
    with pytest.raises(BundleError, match="duplicate entry"):
        fetch.extract_zip(tmp_path / "a.zip", tmp_path / "root")


def test_extract_truncated_zip(tmp_path: Path) -> None:
    data = make_zip({"dmat/fig1.dmat": payload(50_000), "dmat/fig2.dmat": b"x"})
    (tmp_path / "a.zip").write_bytes(data[: len(data) // 2])
    with pytest.raises(BundleError, match=r"a\.zip: not a valid zip archive \(truncated"):
        fetch.extract_zip(tmp_path / "a.zip", tmp_path / "root")
    assert not (tmp_path / "root").exists() or not any((tmp_path / "root").iterdir())


def test_extract_crc_error_leaves_nothing(tmp_path: Path) -> None:
    content = b"A" * 1000
    data = bytearray(make_zip({"dmat/ok.dmat": b"fine", "dmat/bad.dmat": content}, zipfile.ZIP_STORED))
    at = data.index(content)
    data[at + 10] ^= 0xFF
    (tmp_path / "a.zip").write_bytes(bytes(data))
    with pytest.raises(BundleError, match=r"'dmat/bad\.dmat' is corrupt .*CRC"):
        fetch.extract_zip(tmp_path / "a.zip", tmp_path / "root")
    assert list((tmp_path / "root").iterdir()) == []


def test_extract_disk_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.zip").write_bytes(make_zip({"dmat/a.dmat": b"0" * 100_000}))
    monkeypatch.setattr(disk, "free_bytes", lambda d: 1000)
    with pytest.raises(BundleError, match="needs 97.7 KiB of disk"):
        fetch.extract_zip(tmp_path / "a.zip", tmp_path / "root")


def test_extract_overwrite_rules(tmp_path: Path) -> None:
    (tmp_path / "a.zip").write_bytes(make_zip({"dmat/new.dmat": b"n"}))
    (tmp_path / "root" / "dmat").mkdir(parents=True)
    (tmp_path / "root" / "dmat" / "old.dmat").write_bytes(b"o")
    with pytest.raises(BundleError, match="already exists"):
        fetch.extract_zip(tmp_path / "a.zip", tmp_path / "root")
    fetch.extract_zip(tmp_path / "a.zip", tmp_path / "root", overwrite=True)
    assert sorted(p.name for p in (tmp_path / "root" / "dmat").iterdir()) == ["new.dmat"]


# -------------------------------------------------------------------------------------------- bundles

PAPER_ZIP = {"trace/block_sched/Jan/result/0.1.bin": b"\x01" * 64, "trace/dmat/fig1.dmat": b"dmat",
             "trace/exposed_latency/attn.csv": b"probe,ncu\n"}


def test_fetch_paper_bundle_then_reuse_offline(server, tmp_path: Path) -> None:
    url, st = server
    st.data = make_zip(PAPER_ZIP)
    root = fetch.fetch_paper_bundle(tmp_path / "traces", url=url, progress=False)
    assert (root / "dmat" / "fig1.dmat").read_bytes() == b"dmat"
    manifest = read_manifest(root)
    assert manifest["kind"] == "paper" and manifest["url"] == url
    assert manifest["sha256"] == sha(st.data) and manifest["trust_on_first_use"] is True
    assert "dmat/fig1.dmat" in manifest["files"]
    assert not (root / fetch.DOWNLOAD_DIR).exists()  # the archive is not kept by default

    offline = closed_port_url()
    assert fetch.fetch_paper_bundle(root, url=offline, progress=False) == root
    assert fetch.ensure_bundle(root, "auto", url=offline, progress=False) == root
    assert fetch.ensure_bundle(root, "paper", url=offline, progress=False) == root
    assert len(st.requests) == 1
    with pytest.raises(BundleError, match="run `neutrino-ae fetch --force --trace-root"):
        fetch.fetch_paper_bundle(root, url=offline, sha256="1" * 64, progress=False)


def test_fetch_paper_bundle_force_refetches(server, tmp_path: Path) -> None:
    url, st = server
    st.data = make_zip(PAPER_ZIP)
    root = fetch.fetch_paper_bundle(tmp_path / "traces", url=url, sha256=sha(st.data), progress=False)
    assert read_manifest(root)["trust_on_first_use"] is False
    st.data = make_zip({**PAPER_ZIP, "trace/dmat/fig1.dmat": b"v2"})
    fetch.fetch_paper_bundle(root, url=url, force=True, progress=False)
    assert (root / "dmat" / "fig1.dmat").read_bytes() == b"v2"
    assert read_manifest(root)["sha256"] == sha(st.data)


def test_fetch_refuses_source_tree(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    with pytest.raises(BundleError, match="is the source tree"):
        fetch.fetch_paper_bundle(tmp_path, url=closed_port_url(), progress=False)


def test_auto_without_bundle_and_offline_is_actionable(tmp_path: Path) -> None:
    with pytest.raises(BundleError) as err:
        fetch.ensure_bundle(tmp_path / "traces", "auto", url=closed_port_url(), progress=False)
    msg = str(err.value)
    assert "\n" not in msg
    assert "could not be fetched" in msg and "could not connect" in msg
    assert 'bundle="sample"' in msg and "-p bundle sample" in msg
    assert not (tmp_path / "traces" / "bundle.json").exists()


def test_paper_offline_fails_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="could not connect after 3 attempts") as err:
        fetch.ensure_bundle(tmp_path / "traces", "paper", url=closed_port_url(), progress=False)
    assert "\n" not in str(err.value)


def test_auto_reuses_hand_extracted_layout(tmp_path: Path) -> None:
    for name, content in PAPER_ZIP.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content)
    root = tmp_path / "trace"
    assert fetch.has_paper_layout(root)
    assert fetch.ensure_bundle(root, "auto", url=closed_port_url(), progress=False) == root


def test_code_folders_are_not_a_paper_layout(tmp_path: Path) -> None:
    for d in fetch.PAPER_ZIP_DIRS:
        (tmp_path / d).mkdir()
        (tmp_path / d / "analysis.py").write_text("")
    assert not fetch.has_paper_layout(tmp_path)


def fake_generator(calls: list[tuple[Path, str, int]]):
    def generate(out: Path, scale: str = "small", seed: int = 0, progress: bool = True) -> Path:
        calls.append((Path(out), scale, seed))
        (Path(out) / "dmat").mkdir(parents=True, exist_ok=True)
        (Path(out) / "dmat" / "fig1.dmat").write_bytes(b"synthetic")
        write_manifest(out, "sample", scale=scale, seed=seed)
        return Path(out)
    return generate


def test_sample_bundle_generated_once_and_regenerated_on_change(tmp_path: Path) -> None:
    calls: list[tuple[Path, str, int]] = []
    gen = fake_generator(calls)
    root = tmp_path / "traces"
    assert fetch.ensure_sample_bundle(root, generator=gen, progress=False) == root
    assert fetch.ensure_sample_bundle(root, generator=gen, progress=False) == root
    assert len(calls) == 1
    fetch.ensure_sample_bundle(root, seed=3, generator=gen, progress=False)
    assert calls[-1][1:] == ("small", 3)
    assert json.loads((root / "bundle.json").read_text())["seed"] == 3
    fetch.ensure_sample_bundle(root, seed=3, force=True, generator=gen, progress=False)
    assert len(calls) == 3


def test_interrupted_generation_leaves_old_bundle(tmp_path: Path) -> None:
    root = tmp_path / "traces"
    fetch.ensure_sample_bundle(root, generator=fake_generator([]), progress=False)

    def interrupted(out: Path, **kwargs: object) -> Path:
        (Path(out) / "dmat").mkdir(parents=True)
        (Path(out) / "dmat" / "fig1.dmat").write_bytes(b"half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fetch.ensure_sample_bundle(root, force=True, generator=interrupted, progress=False)
    assert (root / "dmat" / "fig1.dmat").read_bytes() == b"synthetic"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces"]


def test_sample_never_replaces_other_data(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep")
    with pytest.raises(BundleError, match="not empty and has no bundle.json"):
        fetch.ensure_sample_bundle(tmp_path, generator=fake_generator([]), progress=False)
    write_manifest(tmp_path, "paper")
    with pytest.raises(BundleError, match="holds a paper bundle"):
        fetch.ensure_sample_bundle(tmp_path, force=True, generator=fake_generator([]), progress=False)
    assert (tmp_path / "mine.txt").read_text() == "keep"


def test_fetch_and_sample_refuse_a_file_as_trace_root(tmp_path: Path) -> None:
    # The `neutrino-ae fetch` / `sample` commands call these directly, not through ensure_bundle.
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    with pytest.raises(BundleError, match="is not a folder; trace_root must be a folder"):
        fetch.fetch_paper_bundle(afile, url="http://127.0.0.1:9/trace.zip", progress=False)
    with pytest.raises(BundleError, match="is not a folder; trace_root must be a folder"):
        fetch.ensure_sample_bundle(afile, generator=fake_generator([]), progress=False)
    assert afile.read_text() == "not a folder\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_unknown_bundle_kind(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="unknown bundle 'papr'"):
        fetch.ensure_bundle(tmp_path, "papr")


def test_force_discards_a_stale_partial_download(server, tmp_path: Path) -> None:
    url, st = server
    st.data = make_zip(PAPER_ZIP)
    part = tmp_path / "traces" / fetch.DOWNLOAD_DIR / "trace.zip.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(b"garbage from another archive")
    root = fetch.fetch_paper_bundle(tmp_path / "traces", url=url, force=True, progress=False)
    assert read_manifest(root)["sha256"] == sha(st.data)
    assert all("Range" not in r for r in st.requests)
