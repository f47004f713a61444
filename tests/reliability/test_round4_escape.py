"""Issue 47, family 1, through the public commands: what a bundle, a trace, a tool or a summary says is
data wherever it goes. A tiny sample bundle whose trace folders are named as markup, a link and a
terminal control sequence, and whose probe names start formulas, run through ``neutrino-ae run static``
and ``make report``'s ``python -m neutrino_ae.run.report``; ``block_sched.py`` and ``neutrino-ae compare``
on the same; ``neutrino-ae run dynamic`` with an ``nvidia-smi`` whose error is markup and a collected
trace whose ``kernel.info`` names its analysis hook with backticks. Each failed on main 46f3f36."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from bundle_edit import reseal

from tests.reliability.faultkit import REPO, cli_env

IMG = "x<img src=x onerror=alert(document.domain)>\x1b]0;owned\x07"
LINK = "x](javascript:alert(10))\x1b[2J"
PROBES = {"gmem_bytes": '=HYPERLINK("http://x","y")', "tensorop_count": "@SUM(1)<img src=x onerror=alert(3)>"}
#: What a terminal must never get: every control character but newline and tab, and the bidi overrides.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class _Live(HTMLParser):
    """What in a page could run or lead somewhere unmeant: event attributes, images not embedded by us,
    scripts that are not the template's, links with a scheme other than http(s)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if any(name.startswith("on") for name in a):
            self.found.append(f"<{tag} {a}>")
        if tag == "img" and not str(a.get("src", "")).startswith("data:image/"):
            self.found.append(f"<img {a}>")
        if tag in ("a", "area") and re.match(r"\s*(?![hH][tT][tT][pP][sS]?:)[A-Za-z][\w+.-]*:", a.get("href") or ""):
            self.found.append(f"<a {a}>")
        if tag in ("svg", "iframe", "object", "embed"):
            self.found.append(f"<{tag}>")

    handle_startendtag = handle_starttag


def live_markup(page: str) -> list[str]:
    parser = _Live()
    parser.feed(page)
    return parser.found


def _run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env or cli_env(), capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture(scope="module")
def hostile(tiny_bundle, tmp_path_factory):
    """The run and its report, on the tiny sample bundle with hostile folder and probe names."""
    tmp = tmp_path_factory.mktemp("hostile")
    traces, out = tmp / "traces", tmp / "out"
    shutil.copytree(tiny_bundle, traces)
    (block,) = [d for d in (traces / "block_sched").iterdir() if d.name.startswith(("Jan", "Feb"))]
    block.rename(block.with_name(IMG))
    (tail,) = (traces / "warp_sched" / "tail").iterdir()
    tail.rename(tail.with_name(LINK))
    attn = traces / "exposed_latency" / "attn.csv"
    rows = list(csv.reader(attn.open()))
    with attn.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows([[PROBES.get(r[0], r[0]), *r[1:]] for r in rows])
    reseal(traces)
    run = _run("-m", "neutrino_ae", "-q", "run", "static", "--sections", "block_sched,warp_sched,exposed_latency",
               "--trace-root", str(traces), "--output-dir", str(out), "--report-only", cwd=tmp)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = _run("-m", "neutrino_ae.run.report", str(out / "static.executed.ipynb"), "--pdf", "never", cwd=tmp)
    assert report.returncode == 0, report.stderr
    return {"tmp": tmp, "traces": traces, "out": out, "run": run, "report": report,
            "html": (out / "static.html").read_text(encoding="utf-8")}


def test_folder_and_probe_names_are_text_in_the_report(hostile):
    """The Perfetto links, the tables and the summary name the folders and probes; the page runs none of it."""
    page = hostile["html"]
    assert live_markup(page) == []
    assert "x&lt;img src=x onerror=alert(document.domain)&gt;" in page  # shown, as text
    assert "x](javascript:alert(10))" in page


def test_summary_and_results_markdown_render_inert(hostile):
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    out = hostile["out"]
    mds = [out / "summary.md", *out.glob("*/*.md")]
    assert len(mds) > 3
    for md in mds:
        assert live_markup(markdown2html_mistune(md.read_text(encoding="utf-8"))) == [], md


def test_probe_names_never_start_a_formula_in_the_results_csvs(hostile):
    """Probe names starting = or @ are written with a leading quote; numbers, negative ones too, as they are."""
    cells = [c for f in (hostile["out"] / "exposed_latency").glob("*.csv") for row in csv.reader(f.open())
             for c in row]
    names = [c for c in cells if "HYPERLINK" in c or "SUM(1)" in c]
    assert names and all(c.startswith("'") for c in names), names
    for c in cells:
        if c[:1] in ("=", "+", "-", "@", "\t", "\r"):
            float(c)  # a number, never a formula


def test_the_run_prints_no_control_sequence(hostile):
    """``run`` lists the trace folders it read (and the verdict header): their ESC sequences shown escaped."""
    run = hostile["run"]
    assert not CONTROL.search(run.stdout + run.stderr), repr(CONTROL.findall(run.stdout + run.stderr))
    assert "\\x1b]0;owned\\x07" in run.stdout and "\\x1b[2J" in run.stdout


def test_block_sched_script_prints_no_control_sequence(hostile, tmp_path):
    proc = _run(str(REPO / "block_sched" / "block_sched.py"), str(hostile["traces"] / "block_sched" / IMG),
                "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "\\x1b]0;owned\\x07" in proc.stdout + proc.stderr
    assert not CONTROL.search(proc.stdout + proc.stderr), repr(proc.stdout + proc.stderr)


def test_compare_prints_summary_keys_escaped(hostile, tmp_path):
    summary = json.loads((hostile["out"] / "summary.json").read_text())
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(summary))
    summary["results"][0]["key"] += "\x1b]0;owned\x07\x1b[2J\u202e"
    b.write_text(json.dumps(summary))
    proc = _run("-m", "neutrino_ae", "compare", str(a), str(b), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "\\x1b]0;owned\\x07\\x1b[2J\\u202e" in proc.stdout
    assert not CONTROL.search(proc.stdout + proc.stderr), repr(proc.stdout)


def test_dynamic_tour_and_verdict_keep_a_tools_words_as_text(tmp_path):
    """``nvidia-smi``'s error (markup, a link, ESC) in the verdict cells, and a collected trace whose
    ``kernel.info`` names its hook with backticks and a tag, in the tour's code spans: all text."""
    bin_dir, traces, out = tmp_path / "bin", tmp_path / "traces", tmp_path / "out"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\nprintf 'NVIDIA-SMI has failed <img src=x onerror=alert(7)> \\033]0;owned\\007 "
                   "[x](javascript:alert(8))\\n' >&2\nexit 9\n")
    smi.chmod(0o755)
    trace = traces / "block_sched" / "trace" / "Nov24_001920_24870"
    shutil.copytree(REPO / "tests" / "data" / "genuine" / "artifact" / "block_sched", trace)
    (info,) = trace.glob("kernel/*/kernel.info")
    lines = info.read_text().splitlines()
    lines[-1] = lines[-1].rsplit("/", 1)[0] + "/x`<img src=x onerror=alert(9)>`.py"
    info.write_text("\n".join(lines) + "\n")
    env = cli_env(PATH=":".join([str(bin_dir), str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
    run = _run("-m", "neutrino_ae", "-q", "run", "dynamic", "--output-dir", str(out), "--trace-root", str(traces),
               "--allow-skip", cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert not CONTROL.search(run.stdout + run.stderr)
    report = _run("-m", "neutrino_ae.run.report", str(out / "dynamic.executed.ipynb"), "--pdf", "never", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    page = (out / "dynamic.html").read_text(encoding="utf-8")
    assert live_markup(page) == []
    assert "<code>x`&lt;img src=x onerror=alert(9)&gt;`.py</code>" in page  # the hook, whole, in one code span
    assert "onerror=alert(7)&gt;" in page  # nvidia-smi's words, shown
