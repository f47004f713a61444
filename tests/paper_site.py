"""A local stand-in for the paper's download site: a trace.zip with the paper's layout, served on
127.0.0.1 (tests that exercise the paper-bundle path share it)."""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Two sections of the tiny sample bundle, laid out as the paper's archive lays them out.
PAPER_SECTIONS = ("exposed_latency", "dmat")


def build_paper_zip(bundle: Path, archive: Path) -> Path:
    """``archive`` (a trace.zip with the paper's layout) made from :data:`PAPER_SECTIONS` of ``bundle``."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive, "w") as zf:
        for sub in PAPER_SECTIONS:
            for path in sorted((bundle / sub).rglob("*")):
                if path.is_file():
                    zf.write(path, path.relative_to(bundle).as_posix())
    return archive


@contextmanager
def serve_folder(site: Path) -> Iterator[str]:
    """``http://127.0.0.1:<port>``, serving the files of ``site`` while the block runs."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()


@contextmanager
def serve_paper_zip(bundle: Path, site: Path) -> Iterator[tuple[str, str, int]]:
    """(url, sha256, size) of ``site/trace.zip`` built from ``bundle``, served while the block runs."""
    data = build_paper_zip(bundle, site / "trace.zip").read_bytes()
    with serve_folder(site) as base:
        yield f"{base}/trace.zip", hashlib.sha256(data).hexdigest(), len(data)
