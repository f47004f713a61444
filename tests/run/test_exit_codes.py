"""Exit codes (issue 23 item 12, issue 25 item 4): a download that fails for the network or the
server exits 4, not 2 (bad input); a wrong URL stays bad input; every subcommand's ``--help`` and
the README's section on the command line list every exit code, 1 = a claim DIFFERS included."""

from __future__ import annotations

import http.server
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from neutrino_ae import cli

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}

# What the command line promises, typed here from the issue (not read from the code under test).
CODES = {0: "", 1: "DIFFERS", 2: "bad input", 3: "GPU", 4: "network", 5: "memory", 74: "disk full", 130: "interrupt",
         143: "SIGTERM"}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Answer(http.server.BaseHTTPRequestHandler):
    status = 503

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        self.send_response(self.server.status)  # type: ignore[attr-defined]
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


@pytest.fixture(autouse=True)
def instant_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    from neutrino_ae.bundle import download

    monkeypatch.setattr(download, "_sleep", lambda s: None)


def _fetch(tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(["fetch", "--trace-root", str(tmp_path / "t"), "--url", url])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, err
    return code, lines[0]


def test_unreachable_host_exits_4(tmp_path, capsys):
    url = f"http://127.0.0.1:{_closed_port()}/trace.zip"
    code, line = _fetch(tmp_path, url, capsys)
    assert code == 4, line
    assert line.startswith(f"error: {url}: could not connect after ")


def test_server_failing_after_its_retries_exits_4(tmp_path, capsys, server):
    server.status = 503
    url = f"http://127.0.0.1:{server.server_port}/trace.zip"
    code, line = _fetch(tmp_path, url, capsys)
    assert code == 4, line
    assert "HTTP 503" in line


def test_a_wrong_url_is_still_bad_input(tmp_path, capsys, server):
    server.status = 404
    code, line = _fetch(tmp_path, f"http://127.0.0.1:{server.server_port}/nope.zip", capsys)
    assert code == 2 and "HTTP 404" in line
    code, line = _fetch(tmp_path, "ftp://example.invalid/trace.zip", capsys)
    assert code == 2, line


def test_the_notebook_run_exits_4_when_the_paper_bundle_cannot_be_downloaded(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/trace.zip"
    proc = subprocess.run([sys.executable, "-m", "neutrino_ae", "run", "static", "-p", "bundle", "paper",
                           "-p", "bundle_url", url, "--trace-root", str(tmp_path / "traces"),
                           "--output-dir", str(tmp_path / "out")], capture_output=True, text=True, cwd=REPO,
                          env=ENV, timeout=300, check=False)
    assert proc.returncode == 4, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr and url in proc.stderr


def _listed(text: str) -> dict[int, str]:
    """``code: what`` pairs of an exit-code list (``  4  the network ...`` or ``- 4: ...``)."""
    found = {}
    for m in re.finditer(r"^\W*(\d{1,3})\b[:\s]+(.+)$", text, re.M):
        found[int(m.group(1))] = m.group(2)
    return found


@pytest.mark.parametrize("sub", [[], ["sample"], ["fetch"], ["run"], ["compare"]],
                         ids=["neutrino-ae", "sample", "fetch", "run", "compare"])
def test_every_help_lists_every_exit_code(sub, monkeypatch, capsys):
    # The command line's own entry point (``neutrino-ae`` is ``cli.main``) in this process: argparse prints the
    # help and exits 0. COLUMNS as a pipe gives a process (80): the width the lines wrap at.
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit) as info:
        cli.main([*sub, "--help"])
    out = capsys.readouterr()
    assert info.value.code in (0, None), out.err
    assert "exit codes:" in out.out
    listed = _listed(out.out.split("exit codes:", 1)[1])
    assert set(listed) == set(CODES), listed
    for code, word in CODES.items():
        assert word.lower() in listed[code].lower(), (code, listed[code])


def test_readme_lists_every_exit_code():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("Exit codes", 1)[1].split("\n## ", 1)[0]
    listed = _listed(section)
    assert set(listed) == set(CODES), listed
    assert "DIFFERS" in listed[1] and "network" in listed[4].lower()
