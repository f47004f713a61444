"""fetch.py against misbehaving servers, hostile archives and leftovers of killed runs.

Every server here is a ThreadingHTTPServer on 127.0.0.1 whose handler is a plain function of
(request, request number); each one stops on its own (a 404 after a few dozen requests, a
bounded trickle), so a regression fails the test instead of hanging it. Zip bombs are tiny:
the limits are passed as parameters, never gigabytes on disk.
"""

from __future__ import annotations

import hashlib
import io
import os
import random
import re
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from neutrino_ae.bundle import disk, fetch
from neutrino_ae.bundle.download import limits as download_limits
from neutrino_ae.bundle.manifest import read_manifest
from neutrino_ae.errors import BundleError

pytestmark = pytest.mark.usefixtures("no_sleep")  # every test here: retries recorded, not slept (conftest.py)

Respond = Callable[["Handler", int], None]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # keep pytest output clean
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        srv = self.server
        with srv.lock:  # type: ignore[attr-defined]
            n = len(srv.requests)  # type: ignore[attr-defined]
            srv.requests.append(dict(self.headers))  # type: ignore[attr-defined]
        srv.respond(self, n)  # type: ignore[attr-defined]

    def reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
              send: int | None = None, length: bool = True) -> None:
        """Answer ``status``; send only ``send`` bytes of ``body`` and then drop the connection.

        ``length=False`` leaves out Content-Length: the body then ends when the connection
        closes (HTTP/1.0 style), so a truncated body looks complete.
        """
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if length:
            self.send_header("Content-Length", str(len(body)))
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body if send is None else body[:send])
        self.wfile.flush()
        if send is not None or not length:
            self.close_connection = True

    def range_start(self) -> int | None:
        rng = self.headers.get("Range")
        return None if rng is None else int(re.fullmatch(r"bytes=(\d+)-", rng).group(1))


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client hanging up mid-body is what these tests provoke; no tracebacks in the output


@contextmanager
def serve(respond: Respond) -> Iterator[tuple[str, list[dict[str, str]]]]:
    httpd = QuietServer(("127.0.0.1", 0), Handler)
    httpd.respond = respond  # type: ignore[attr-defined]
    httpd.requests = []  # type: ignore[attr-defined]
    httpd.lock = threading.Lock()  # type: ignore[attr-defined]
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/trace.zip", httpd.requests  # type: ignore[attr-defined]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def payload(n: int) -> bytes:
    return random.Random(n).randbytes(n)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_zip(entries: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, content in entries.items():
            zf.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), content, compress_type=compression)
    return buf.getvalue()


PAPER_ZIP = {"trace/block_sched/Jan/result/0.1.bin": b"\x01" * 64, "trace/dmat/fig1.dmat": b"dmat",
             "trace/exposed_latency/attn.csv": b"probe,ncu\n"}

# First answers drop after a bit over 1 MiB: the old reader lost a partly filled 1 MiB chunk
# when the connection dropped, so a shorter first answer would not even leave a .part to resume.
DROP = (1 << 20) + 5000
GIVE_UP_AFTER = 40  # every server answers 404 after this many requests, so the old code ends too


# ------------------------------------------------------------------------- item 10: bounded downloads


def test_growing_content_range_total_is_refused(tmp_path: Path) -> None:
    """Each answer announces a larger total, sends a bit over 1 MiB and drops: the .part grows forever.

    (Over 1 MiB because the old reader lost a partly filled 1 MiB chunk when the connection dropped.)
    """
    first = 4 << 20

    def respond(h: Handler, n: int) -> None:
        if n >= GIVE_UP_AFTER:
            return h.reply(404)
        total = first + (2 << 20) * n  # grows faster than the 1 MiB each answer delivers
        start = h.range_start() or 0
        body = bytes(total)[start:]
        if start:
            return h.reply(206, body, {"Content-Range": f"bytes {start}-{total - 1}/{total}"},
                           send=(1 << 20) + 1000)
        h.reply(200, body, send=(1 << 20) + 1000)

    with serve(respond) as (url, requests):
        with pytest.raises(BundleError, match=rf"announced {first} bytes.*now {first + (2 << 20)}") as err:
            fetch.download(url, tmp_path / "x.zip", backoff=0, progress=False)
    assert len(requests) == 2
    assert str(err.value).startswith(url) and "\n" not in str(err.value)
    assert not (tmp_path / "x.zip.part").exists()  # a file that changed under us is not resumed


def test_total_attempts_are_bounded_even_with_progress(tmp_path: Path) -> None:
    """A server that honours Range but drops after 100 bytes every time makes progress forever."""
    data = payload(100_000)

    def respond(h: Handler, n: int) -> None:
        if n >= GIVE_UP_AFTER:
            return h.reply(404)
        start = h.range_start() or 0
        headers = {"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"} if start else {}
        h.reply(206 if start else 200, data[start:], headers, send=100)

    with serve(respond) as (url, requests):
        with pytest.raises(BundleError, match=r"gave up after 5 attempts \(500 of 100000 bytes"):
            fetch.download(url, tmp_path / "x.zip", backoff=0, max_attempts=5, progress=False)
    assert len(requests) == 5
    assert (tmp_path / "x.zip.part").stat().st_size == 500  # kept: a later run resumes it


def test_body_beyond_the_byte_limit_is_cut(tmp_path: Path) -> None:
    """No Content-Length (close-delimited body): only ``max_bytes`` bounds what is written."""
    data = payload(50_000)
    with serve(lambda h, n: h.reply(200, data, length=False)) as (url, _requests):
        with pytest.raises(BundleError, match="more than the limit of 10000 bytes"):
            fetch.download(url, tmp_path / "x.zip", max_bytes=10_000, progress=False)
    assert not (tmp_path / "x.zip.part").exists()
    assert not (tmp_path / "x.zip").exists()


def test_announced_size_over_the_byte_limit_fails_before_writing(tmp_path: Path) -> None:
    data = payload(50_000)
    with serve(lambda h, n: h.reply(200, data)) as (url, _requests):
        with pytest.raises(BundleError, match="announces 50000 bytes, more than the limit of 10000"):
            fetch.download(url, tmp_path / "x.zip", max_bytes=10_000, progress=False)
    assert not (tmp_path / "x.zip.part").exists() or (tmp_path / "x.zip.part").stat().st_size == 0


def test_trickle_ends_at_the_deadline(tmp_path: Path) -> None:
    """One byte every 20 ms never trips a read timeout; the overall deadline must end it."""
    stop = threading.Event()

    def respond(h: Handler, n: int) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "1000")
        h.end_headers()
        for _ in range(1000):  # at most 20 s, and it stops as soon as the client hangs up
            if stop.is_set():
                break
            try:
                h.wfile.write(b"x")
                h.wfile.flush()
            except OSError:
                break
            time.sleep(0.02)
        h.close_connection = True

    with serve(respond) as (url, _requests):
        t0 = time.monotonic()
        try:
            with pytest.raises(BundleError, match=r"not finished within 0\.5 s") as err:
                fetch.download(url, tmp_path / "x.zip", deadline_s=0.5, progress=False)
        finally:
            stop.set()
        assert time.monotonic() - t0 < 3
    assert str(err.value).startswith(url)


def test_trickle_is_dropped_as_too_slow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below the minimum rate over the window, a connection counts as failed without progress."""
    monkeypatch.setattr(download_limits, "STALL_WINDOW_S", 0.2)
    monkeypatch.setattr(download_limits, "MIN_RATE", 1000)

    def respond(h: Handler, n: int) -> None:
        h.send_response(200)
        h.send_header("Content-Length", "1000")
        h.end_headers()
        for _ in range(100):  # 50 B/s for at most 2 s, less once the client hangs up
            try:
                h.wfile.write(b"x")
                h.wfile.flush()
            except OSError:
                break
            time.sleep(0.02)
        h.close_connection = True

    with serve(respond) as (url, requests):
        with pytest.raises(BundleError, match=r"kept failing after 2 attempts \(too slow: \d+ B/s"):
            fetch.download(url, tmp_path / "x.zip", retries=1, backoff=0, progress=False)
    assert len(requests) == 2


def test_disk_is_checked_when_content_length_is_absent(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    data = payload(3 << 20)
    calls: list[Path] = []

    def free(directory: Path) -> int:
        calls.append(directory)
        return 10 << 30 if len(calls) == 1 else 1 << 20  # the disk fills up while we write

    monkeypatch.setattr(disk, "free_bytes", free)
    with serve(lambda h, n: h.reply(200, data, length=False)) as (url, _requests):
        with pytest.raises(BundleError, match=r"free space .* while downloading") as err:
            fetch.download(url, tmp_path / "x.zip", progress=False)
    assert "\n" not in str(err.value) and len(calls) >= 2
    assert (tmp_path / "x.zip.part").stat().st_size < len(data)


def test_disk_is_checked_again_before_a_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = payload(200_000)

    def respond(h: Handler, n: int) -> None:
        start = h.range_start() or 0
        headers = {"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"} if start else {}
        h.reply(206 if start else 200, data[start:], headers, send=1000 if n == 0 else None)

    frees = iter([10 << 30, 1000])
    monkeypatch.setattr(disk, "free_bytes", lambda d: next(frees, 1000))
    with serve(respond) as (url, requests):
        with pytest.raises(BundleError, match="of disk but"):
            fetch.download(url, tmp_path / "x.zip", backoff=0, progress=False)
    assert len(requests) == 2


# -------------------------------------------------------------------- item 12: what a .part belongs to


def test_resume_sends_if_range_and_a_changed_file_restarts(tmp_path: Path) -> None:
    """The file is replaced on the server between two attempts: no old/new byte mix may result."""
    old, new = payload(3 << 20), payload((3 << 20) + 1)[: 3 << 20]

    def respond(h: Handler, n: int) -> None:
        data, etag = (old, '"v1"') if n == 0 else (new, '"v2"')
        start = h.range_start()
        if start and h.headers.get("If-Range") in (None, etag):
            headers = {"ETag": etag, "Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"}
            return h.reply(206, data[start:], headers)
        h.reply(200, data, {"ETag": etag}, send=DROP if n == 0 else None)

    with serve(respond) as (url, requests):
        dest, digest = fetch.download_with_digest(url, tmp_path / "x.zip", backoff=0, progress=False)
    assert requests[1]["Range"] == f"bytes={DROP}-" and requests[1]["If-Range"] == '"v1"'
    assert dest.read_bytes() == new and digest == sha(new)
    assert not (tmp_path / "x.zip.part.json").exists()


def test_206_with_another_etag_is_not_appended(tmp_path: Path) -> None:
    """A server that ignores If-Range but names the new version in its 206 answer."""
    old, new = payload(3 << 20), payload((3 << 20) + 1)[: 3 << 20]

    def respond(h: Handler, n: int) -> None:
        data, etag = (old, '"v1"') if n == 0 else (new, '"v2"')
        start = h.range_start()
        if start:
            headers = {"ETag": etag, "Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"}
            return h.reply(206, data[start:], headers)
        h.reply(200, data, {"ETag": etag}, send=DROP if n == 0 else None)

    with serve(respond) as (url, requests):
        dest = fetch.download(url, tmp_path / "x.zip", backoff=0, progress=False)
    assert dest.read_bytes() == new
    assert "Range" not in requests[-1]


@pytest.mark.parametrize("meta", [None, '{"url": "http://elsewhere.example/other.zip", "etag": null}'])
def test_part_of_another_url_is_discarded(tmp_path: Path, meta: str | None) -> None:
    data = payload(5000)
    (tmp_path / "x.zip.part").write_bytes(b"bytes of some other archive")
    if meta is not None:
        (tmp_path / "x.zip.part.json").write_text(meta)

    def respond(h: Handler, n: int) -> None:
        start = h.range_start() or 0
        headers = {"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"} if start else {}
        h.reply(206 if start else 200, data[start:], headers)

    with serve(respond) as (url, requests):
        dest = fetch.download(url, tmp_path / "x.zip", progress=False)
    assert dest.read_bytes() == data
    assert all("Range" not in r for r in requests)


def _truncated_zip() -> bytes:
    data = make_zip({**PAPER_ZIP, "trace/dmat/big.dmat": payload(30_000)})
    return data[: len(data) * 2 // 3]


def _bad_crc_zip() -> bytes:
    content = b"A" * 1000
    data = bytearray(make_zip({**PAPER_ZIP, "trace/dmat/bad.dmat": content}, zipfile.ZIP_STORED))
    data[data.index(content) + 10] ^= 0xFF
    return bytes(data)


HTML = b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>log in first</body></html>\n"


@pytest.mark.parametrize("body, problem", [
    (_truncated_zip(), "not a valid zip archive"),
    (_bad_crc_zip(), "'trace/dmat/bad.dmat' is corrupt"),
    (HTML, "an HTML page, not a zip archive"),
])
def test_bad_archive_is_never_trusted_on_first_use(tmp_path: Path, body: bytes, problem: str) -> None:
    """Served with 200 and no Content-Length, so the download itself looks complete."""
    bodies = [body, make_zip(PAPER_ZIP)]
    with serve(lambda h, n: h.reply(200, bodies[min(n, 1)], length=False)) as (url, _requests):
        root = tmp_path / "traces"
        with pytest.raises(BundleError, match=re.escape(problem)) as err:
            fetch.fetch_paper_bundle(root, url=url, progress=False)
        assert str(err.value).startswith(url) and "\n" not in str(err.value)
        dl_dir = root / fetch.DOWNLOAD_DIR
        assert not (dl_dir / "trace.zip").exists() and not (dl_dir / "trace.zip.sha256").exists()
        assert not (dl_dir / "trace.zip.part").exists()
        # The next run downloads again instead of reusing what was recorded.
        fetch.fetch_paper_bundle(root, url=url, progress=False)
    assert read_manifest(root)["sha256"] == sha(bodies[1])


def test_kept_archive_that_is_invalid_names_force(tmp_path: Path) -> None:
    """An archive left by an older version (truncated, trusted on first use) is not reused silently."""
    root = tmp_path / "traces"
    dl_dir = root / fetch.DOWNLOAD_DIR
    dl_dir.mkdir(parents=True)
    bad = _truncated_zip()
    (dl_dir / "trace.zip").write_bytes(bad)
    (dl_dir / "trace.zip.sha256").write_text(f"{sha(bad)}  trace.zip\n")
    good = make_zip(PAPER_ZIP)
    with serve(lambda h, n: h.reply(200, good)) as (url, requests):
        with pytest.raises(BundleError, match="--force") as err:
            fetch.fetch_paper_bundle(root, url=url, progress=False)
        assert str(err.value).startswith(str(dl_dir / "trace.zip")) and "\n" not in str(err.value)
        assert requests == []
        fetch.fetch_paper_bundle(root, url=url, force=True, progress=False)
    assert read_manifest(root)["sha256"] == sha(good)


# ---------------------------------------------------------------------------------- item 11: zip bombs


def test_high_compression_ratio_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.zip").write_bytes(make_zip({"dmat/zeros.dmat": bytes(2 << 20)}))
    limits = fetch.ExtractLimits(max_bytes=1 << 30, max_ratio=100, ratio_above=1 << 20)
    with pytest.raises(BundleError, match=r"a\.zip: .*expands .* ratio \d+.* more than 100") as err:
        fetch.extract_zip(tmp_path / "a.zip", tmp_path / "root", limits=limits)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "root").exists() or not any((tmp_path / "root").iterdir())


def test_total_uncompressed_size_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "a.zip").write_bytes(make_zip({f"dmat/{i}.dmat": payload(10_000 + i) for i in range(3)}))
    limits = fetch.ExtractLimits(max_bytes=20_000)
    with pytest.raises(BundleError, match=r"expands to 30003 bytes, more than the limit of 20000"):
        fetch.extract_zip(tmp_path / "a.zip", tmp_path / "root", limits=limits)
    assert not (tmp_path / "root").exists() or not any((tmp_path / "root").iterdir())


def test_lying_directory_is_caught_while_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The central directory says 100 bytes; the member stream yields 50 000 (stand-in for a lie)."""
    (tmp_path / "a.zip").write_bytes(make_zip({"dmat/a.dmat": b"x" * 100}))
    real_open = zipfile.ZipFile.open

    def lying_open(self: zipfile.ZipFile, name: object, *args: object, **kwargs: object) -> object:
        real_open(self, name, *args, **kwargs).close()
        return io.BytesIO(bytes(50_000))

    monkeypatch.setattr(zipfile.ZipFile, "open", lying_open)
    limits = fetch.ExtractLimits(max_bytes=10_000)
    with pytest.raises(BundleError, match=r"'dmat/a\.dmat' expands beyond the 100 bytes"):
        fetch.extract_zip(tmp_path / "a.zip", tmp_path / "root", limits=limits)
    assert not (tmp_path / "root").exists() or not any((tmp_path / "root").iterdir())


def test_lying_directory_in_a_real_zip_ends_in_one_line(tmp_path: Path) -> None:
    """Patch the central directory to claim 100 bytes for 200 000 zeros: nothing big is written."""
    data = bytearray(make_zip({"dmat/a.dmat": bytes(200_000)}))
    cd = data.rindex(b"PK\x01\x02")
    data[cd + 24:cd + 28] = (100).to_bytes(4, "little")  # uncompressed size in the central directory
    (tmp_path / "a.zip").write_bytes(bytes(data))
    with pytest.raises(BundleError, match=r"a\.zip: entry 'dmat/a\.dmat'") as err:
        fetch.extract_zip(tmp_path / "a.zip", tmp_path / "root", limits=fetch.ExtractLimits(max_bytes=1000))
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------------ item 13: leftovers of kill -9


def _age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_stale_leftovers_are_cleaned_but_not_a_live_runs(tmp_path: Path) -> None:
    """kill -9 during extraction or an atomic write leaves .extract-*/.tmp-*; the next run removes them."""
    root = tmp_path / "traces"
    dl_dir = root / fetch.DOWNLOAD_DIR
    dl_dir.mkdir(parents=True)
    dead_pid = 4_194_400  # above any Linux pid_max, so no such process
    dead = root / (fetch.staging_prefix(dead_pid) + "abc123")  # fresh, but its owner is gone
    stale_unowned = [root / ".extract-k2j4h5g6", root / ".extract-1-otherhost-k2j4h5",
                     root / ".bundle.tmp-x1y2z3.json", dl_dir / ".trace.zip.tmp-q9w8e7.sha256"]
    live_run = root / (fetch.staging_prefix() + "def456")  # a concurrent run (this process)
    live = [live_run, root / ".extract-fresh123", root / ".extract-1-otherhost-fresh1",
            root / ".bundle.tmp-fresh1.json", root / ".notes.tmp-abc123.txt"]  # the last is not ours
    for p in [dead, *stale_unowned, *live, dl_dir / "trace.zip.part"]:
        if "extract" in p.name:
            p.mkdir()
            (p / "half.bin").write_bytes(b"x")
        else:
            p.write_bytes(b"x")
    for p in [*stale_unowned, live_run, live[-1]]:  # old too: a pid or a foreign name protects them
        _age(p, 2 * 3600)
    reused_pid = root / (fetch.staging_prefix(os.getpid()) + "ghi789")  # alive, but two days old
    reused_pid.mkdir()
    _age(reused_pid, 2 * 86400)
    stale = [dead, reused_pid, *stale_unowned]

    good = make_zip(PAPER_ZIP)

    def respond(h: Handler, n: int) -> None:
        start = h.range_start()
        if start:  # the .part above has no record of its URL, so it must not be resumed
            return h.reply(416, headers={"Content-Range": f"bytes */{len(good)}"})
        h.reply(200, good)

    with serve(respond) as (url, _requests):
        fetch.fetch_paper_bundle(root, url=url, progress=False)
    assert [p for p in stale if p.exists()] == []
    assert [p.name for p in live if not p.exists()] == []
    assert read_manifest(root)["sha256"] == sha(good)


def test_garbled_archives_give_one_line(tmp_path: Path) -> None:
    """Random byte flips and cuts: zipfile raises more than BadZipFile (NotImplementedError for a
    garbled version field, UnicodeDecodeError for a garbled name); all must become BundleError."""
    base = make_zip({**PAPER_ZIP, "trace/dmat/b.dmat": bytes(range(256)) * 20})
    rng = random.Random(1)
    limits = fetch.ExtractLimits(max_bytes=1 << 20)
    archive = tmp_path / "a.zip"
    for i in range(400):
        data = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data))]
        archive.write_bytes(bytes(data))
        for dest in (None, tmp_path / f"r{i}"):
            try:
                if dest is None:
                    fetch.validate_zip(archive, limits)
                else:
                    fetch.extract_zip(archive, dest, limits=limits)
            except BundleError as exc:
                assert "\n" not in str(exc)


def test_auto_with_an_existing_bundle_cleans_leftovers(tmp_path: Path) -> None:
    root = tmp_path / "traces"
    (root / "dmat").mkdir(parents=True)
    (root / "bundle.json").write_text('{"kind": "paper"}')
    leftover = root / (fetch.staging_prefix(4_194_400) + "abc123")
    leftover.mkdir()
    assert fetch.ensure_bundle(root, "auto", url="http://127.0.0.1:9/unused", progress=False) == root
    assert not leftover.exists()
