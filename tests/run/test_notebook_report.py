"""The executed static notebook as a reviewer reads it (issue 25): figures as real image outputs, the
HTML export embedding every one of them, Table 2 as one table in the paper's layout, no machine paths
or progress chatter in the outputs, the verdict under the title and its table once.

One run of the public commands on the small sample bundle (``neutrino-ae run static``: the run of the
whole test session, conftest ``sample_run``; then ``python -m neutrino_ae.run.report``), shared by the
tests of this module."""

from __future__ import annotations

import base64
import io
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from PIL import Image

from neutrino_ae.report import registry

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK_WIDTH_PX = 800  # the notebook's display width


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}


@pytest.fixture(scope="module")
def run(sample_run, tmp_path_factory) -> dict:
    """The shared run (conftest ``sample_run``: ``neutrino-ae run static -p bundle sample`` on the small
    bundle), its results copied here because the report writes static.html and static.pdf beside the
    executed notebook; ``ran_in`` are the folders the run itself used."""
    out = Path(shutil.copytree(sample_run.out, tmp_path_factory.mktemp("report") / "results"))
    executed = out / "static.executed.ipynb"
    report = subprocess.run([sys.executable, "-m", "neutrino_ae.run.report", str(executed), "--pdf", "never"],
                            capture_output=True, text=True, env=_env(), cwd=out.parent, timeout=300)
    assert report.returncode == 0, report.stdout + report.stderr
    return {"out": out, "ran_in": (sample_run.out, sample_run.traces), "run": sample_run.proc, "report": report,
            "nb": nbformat.read(executed, as_version=4), "html": (out / "static.html").read_text(encoding="utf-8")}


def _outputs(nb) -> list[tuple[str, dict]]:
    return [(c.get("id", ""), o) for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]


def _figures(nb) -> list[tuple[str, dict]]:
    return [(cid, o) for cid, o in _outputs(nb) if "image/png" in o.get("data", {})]


def _declared_figures() -> list[str]:
    """The figures the sections declare for the notebook (``notebook_figures``, else the PNGs of ``notebook_show``)."""
    names = []
    for sec in registry.sections():
        if sec.notebook_figures:
            names += [key for key, _ in sec.notebook_figures]
        else:
            names += [n for n in (sec.notebook_show or ()) if n.endswith(".png")]
    return names


def test_every_declared_figure_is_an_image_output_with_alt_text_and_its_display_width(run):
    figures = _figures(run["nb"])
    declared = _declared_figures()
    # The figures the text refers to are among them (the tail zoom, block_sched's per-SM and timeline figures).
    assert {"fig13d-sub.png", "block_sched_per_sm.png", "block_sched_timeline.png"} <= set(declared)
    shown = [Path(o["data"]["text/plain"].removeprefix("[figure] ")).name for _, o in figures]
    assert sorted(shown) == sorted(declared) and len(figures) == len(declared) >= 14, shown
    for _, o in figures:
        meta = o["metadata"]["image/png"]
        assert len(meta["alt"]) > 10, meta
        png = Image.open(io.BytesIO(base64.b64decode(o["data"]["image/png"])))
        dpi = png.info["dpi"][0]
        # Shown at 100 px per inch of figure (no scaling below 100 % zoom), never wider than the notebook.
        assert meta["width"] <= NOTEBOOK_WIDTH_PX, meta
        assert meta["width"] == pytest.approx(png.size[0] * 100 / dpi, abs=1), (meta, png.size, dpi)
        if "image/svg+xml" in o["data"]:
            assert o["data"]["image/svg+xml"].lstrip().startswith(("<?xml", "<svg"))
            assert o["metadata"]["image/svg+xml"]["alt"] == meta["alt"]
    # No figure hides in an HTML output as a data URI any more.
    assert not any("data:image" in str(o.get("data", {}).get("text/html", "")) for _, o in _outputs(run["nb"]))


class _Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict[str, str]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs))


def test_the_html_report_embeds_every_figure_with_its_alt_text(run):
    parser = _Images()
    parser.feed(run["html"])
    embedded = [i for i in parser.images if re.match(r"data:image/(png|svg\+xml);base64,", i.get("src", ""))]
    alts = [o["metadata"]["image/png"]["alt"] for _, o in _figures(run["nb"])]
    assert len(embedded) == len(_declared_figures()) == len(alts)
    assert [i.get("alt") for i in embedded] == alts
    assert all(int(i["width"]) <= NOTEBOOK_WIDTH_PX for i in embedded)
    assert "HTML: " in run["report"].stdout and "every figure embedded" in run["report"].stdout
    # The kernel-check cell's source is left out of the report (its tag); the notebook keeps it.
    assert "KernelLacksProject" not in run["html"]


def test_table_2_is_one_table_in_the_papers_layout_with_the_csv_beside_it(run):
    cells = [o for cid, o in _outputs(run["nb"]) if cid == "kernel-overhead"]
    tables = [o["data"]["text/html"] for o in cells if "<table" in o.get("data", {}).get("text/html", "")]
    assert len(tables) == 1
    wide = pd.read_csv(run["out"] / "kernel_overhead" / "kernel_overhead.csv")
    probes = [c.removesuffix(" slowdown") for c in wide.columns if c.endswith(" slowdown")]
    assert probes and all(f"{p} +regs" in wide.columns for p in probes)
    table = tables[0]
    # One column pair per probe (slowdown, registers), one row per kernel.
    assert [m for m in re.findall(r"<th colspan='2'>([^<]+)</th>", table)] == probes
    assert table.count("<th>slowdown</th>") == table.count("<th>+regs</th>") == len(probes)
    body = table.split("<tbody>")[1]
    assert body.count("<tr>") == len(wide)
    assert "kernel_overhead.csv" in str([o.get("data") for o in cells])
    # The 160-column text dump is folded away, not shown open.
    assert not any(o.get("data", {}).get("text/html", "").startswith("<pre") for o in cells)


def _all_output_text(nb) -> str:
    parts = []
    for _, o in _outputs(nb):
        parts.append(o.get("text", ""))
        parts += [v for k, v in o.get("data", {}).items() if k.startswith("text/") and isinstance(v, str)]
    return "\n".join(parts)


def test_outputs_name_no_folder_of_the_machine_and_carry_no_progress_chatter(run):
    text = _all_output_text(run["nb"])
    for folder in (*run["ran_in"], run["out"]):
        assert str(folder.resolve()) not in text and str(folder) not in text, folder
    assert "worker process" not in text and "computed in" not in text
    assert "TCP" not in text and "TCP" not in run["run"].stderr, run["run"].stderr[:500]


def test_the_verdict_is_under_the_title_with_the_caveat_and_its_table_once(run):
    nb = run["nb"]
    assert nb.cells[0].id == "intro" and nb.cells[0].source.startswith("# ")
    top = nb.cells[1]
    assert top.id == "verdict-top" and top.source.startswith("## Verdict: PASS · SYNTHETIC sample data\n")
    assert "checks the pipeline" in top.source.splitlines()[2]
    everything = "\n".join(c.source for c in nb.cells) + _all_output_text(nb)
    assert everything.count("| section | claim | kind | expected | obtained | tolerance | verdict |") == 1


def test_report_without_an_executed_notebook_is_one_line_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "neutrino_ae.run.report", str(tmp_path / "none.ipynb")],
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'none.ipynb'}: no executed notebook (run `make run` or `neutrino-ae run static` first)"]


def _report(run: dict, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "neutrino_ae.run.report",
                           str(run["out"] / "static.executed.ipynb"), *args],
                          capture_output=True, text=True, env={**_env(), **env}, timeout=300)


def test_without_a_pdf_converter_the_pdf_is_skipped_with_one_line_saying_how_to_get_one(run):
    import importlib.util

    if importlib.util.find_spec("playwright") is not None:
        pytest.skip("Playwright is installed here: webpdf is a converter")
    proc = _report(run, NEUTRINO_AE_CHROMIUM="/nonexistent/chromium")
    assert proc.returncode == 0, proc.stderr
    assert "PDF: skipped, no converter: install Debian's chromium" in proc.stdout
    always = _report(run, "--pdf", "always", NEUTRINO_AE_CHROMIUM="/nonexistent/chromium")
    assert always.returncode == 2 and always.stderr.strip() == "error: --pdf always: no PDF converter"


def test_with_chromium_a_pdf_and_the_render_check_at_1400_px(run, tmp_path):
    from neutrino_ae.run.report import find_chromium

    if find_chromium() is None:
        pytest.skip("no chromium on PATH (apt-get install chromium): the PDF and render check need one")
    shot = tmp_path / "page.png"
    proc = _report(run, "--render-check", "--screenshot", str(shot))
    assert proc.returncode == 0, proc.stderr
    pdf = run["out"] / "static.pdf"
    assert pdf.read_bytes()[:5] == b"%PDF-" and f"PDF:  {pdf}" in proc.stdout
    found = re.search(r"page ([\d,]+) px tall, (\d+) figures shown (\d+)-(\d+) px wide; smallest text in a figure "
                      r"([\d.]+) px", proc.stdout)
    assert found, proc.stdout
    assert int(found.group(2)) == len(_declared_figures())
    assert int(found.group(4)) <= NOTEBOOK_WIDTH_PX and float(found.group(5)) >= 9.0
    with Image.open(shot) as im:
        assert im.size[0] == 1400 and im.size[1] == int(found.group(1).replace(",", ""))
