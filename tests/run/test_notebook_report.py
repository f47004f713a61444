"""The executed static notebook as a reviewer reads it (issue 25): figures as real image outputs, the
HTML export embedding every one of them, Table 2 as one table in the paper's layout, no machine paths
or progress chatter in the outputs, the verdict under the title and its table once.

One run of the public commands on the small sample bundle (``neutrino-ae run static``: the run of the
whole test session, conftest ``sample_run``; then ``python -m neutrino_ae.run.report``), shared by the
tests of this module."""

from __future__ import annotations

import base64
import io
import json
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

from neutrino_ae.report.section import registry

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


def _declared_figures(out: Path) -> list[str]:
    """The figures the sections declare for the notebook (``notebook_figures``, else the PNGs of ``notebook_show``;
    a section that names none shows every PNG it wrote under ``out``)."""
    names = []
    for sec in registry.sections():
        if sec.notebook_figures:
            names += [key for key, _ in sec.notebook_figures]
        elif sec.notebook_show is None:
            names += [p.name for p in sorted((out / sec.name).glob("*.png"))]
        else:
            names += [n for n in sec.notebook_show if n.endswith(".png")]
    return names


def test_every_declared_figure_is_an_image_output_with_alt_text_and_its_display_width(run):
    figures = _figures(run["nb"])
    declared = _declared_figures(run["out"])
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
    assert len(embedded) == len(_declared_figures(run["out"])) == len(alts)
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
    # The one verdict table, at the end (the top cell names only the claims that did not pass: none here).
    assert everything.count('class="neutrino-ae-verdict"') == 1


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


def test_without_a_pdf_converter_the_pdf_is_skipped_with_one_line_saying_how_to_get_one(run, monkeypatch, capsys):
    """The command's ``main`` in this process (as ``python -m neutrino_ae.run.report`` calls it, through
    ``run_main``); the command as a process is run by the ``run`` fixture and the exit-2 test above."""
    import importlib.util

    from neutrino_ae.report.command.script import run_main
    from neutrino_ae.run import report

    if importlib.util.find_spec("playwright") is not None:
        pytest.skip("Playwright is installed here: webpdf is a converter")
    monkeypatch.setenv("NEUTRINO_AE_CHROMIUM", "/nonexistent/chromium")
    executed = str(run["out"] / "static.executed.ipynb")
    assert run_main(report.main, [executed]) == 0
    out = capsys.readouterr()
    assert "PDF: skipped, no converter: install Debian's chromium" in out.out, out.err
    assert run_main(report.main, [executed, "--pdf", "always"]) == 2
    assert capsys.readouterr().err.strip() == "error: --pdf always: no PDF converter"


@pytest.fixture(scope="module")
def printed(run, tmp_path_factory) -> dict:
    """``make report``'s command with Debian's chromium: the PDF (``--pdf always``) and the render check at
    1400 px with a screenshot; the PDF's text as ``pdftotext -layout`` gives it (poppler-utils)."""
    from neutrino_ae.run.report import find_chromium

    if find_chromium() is None:
        pytest.skip("no chromium on PATH (apt-get install chromium; `make test` installs it as root): "
                    "the PDF and the render check need one")
    if shutil.which("pdftotext") is None:
        pytest.skip("no pdftotext (apt-get install poppler-utils; `make test` installs it as root)")
    shot = tmp_path_factory.mktemp("shot") / "page.png"
    proc = _report(run, "--pdf", "always", "--render-check", "--screenshot", str(shot))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pdf = run["out"] / "static.pdf"
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True,
                          timeout=120).stdout
    return {"proc": proc, "pdf": pdf, "shot": shot, "text": text, "out": run["out"]}


def test_with_chromium_a_pdf_and_the_render_check_at_1400_px(run, printed):
    proc, pdf, shot = printed["proc"], printed["pdf"], printed["shot"]
    assert pdf.read_bytes()[:5] == b"%PDF-" and f"PDF:  {pdf}" in proc.stdout
    found = re.search(r"page ([\d,]+) px tall, column ([\d,]+) px, (\d+) figures shown (\d+)-(\d+) px wide; smallest "
                      r"text in a figure ([\d.]+) px .*; verdict table ([\d,]+) x ([\d,]+) px in a ([\d,]+) px column, "
                      r"(\d+) claims", proc.stdout)
    assert found, proc.stdout
    num = lambda i: float(found.group(i).replace(",", ""))  # noqa: E731
    assert int(found.group(3)) == len(_declared_figures(printed["out"]))
    assert num(5) <= NOTEBOOK_WIDTH_PX and num(6) >= 9.0
    # The verdict table fits its column at 1400 px (it was 1,661 px wide in a 1,290 px one), every claim a row.
    claims = json.loads((run["out"] / "verdict.json").read_text())["claims"]
    assert num(7) <= num(9) and int(found.group(10)) == len(claims)
    # Laid out as on paper (the page's print CSS at the printable width), nothing is wider than the page
    # and no box scrolls or clips what it holds.
    assert "on paper (740 px, its print CSS): nothing wider than the page" in proc.stdout, proc.stdout
    with Image.open(shot) as im:
        assert im.size[0] == 1400 and im.size[1] == int(num(1))


def test_the_pdf_prints_every_claim_as_a_row_with_its_verdict(run, printed):
    """Every claim of verdict.json, in its order, is a row of the printed verdict table whose line starts
    with its verdict and its id (a table clipped by a scrolling box, or cut to its first columns, loses them)."""
    claims = json.loads((run["out"] / "verdict.json").read_text())["claims"]
    rows = re.findall(r"^\s*(PASS|DIFFERS|SKIPPED)\s+([a-z0-9][a-z0-9-]*[a-z0-9])\s", printed["text"], re.M)
    assert rows == [(c["status"], c["claim"]) for c in claims]
    # Each section's detail (what each claim checks, its source and tolerance) is printed open.
    for c in claims:
        assert c["claim"] in printed["text"].split("each claim in words", 1)[1]
    assert printed["text"].count("each claim in words, its source and tolerance") == len({c["section"] for c in claims})


class _Cells(HTMLParser):
    """A table's header and body rows as cell texts (cells spanning rows are left out: a PDF line holds
    a row's other cells, the spanning one sits on the line of the row in its middle)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self._skip = False

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell, self._skip = [], "rowspan" in dict(attrs)

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            if not self._skip:
                self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None


def test_the_pdf_keeps_every_column_of_table_2(run, printed):
    """Table 2 as the section wrote it (kernel_overhead.html): its probe column groups, each with slowdown
    and +regs, and every row's cells on one line of the PDF's text, the dmat group included."""
    cells = _Cells()
    cells.feed((run["out"] / "kernel_overhead" / "kernel_overhead.html").read_text(encoding="utf-8"))
    probes, subheads, *body = cells.rows
    assert "dmat" in probes and len(subheads) == 2 * len(probes) and len(body) >= 10
    lines = printed["text"].splitlines()

    def line_with(row: list[str]) -> bool:
        pattern = re.compile(r"\s+".join(re.escape(c) for c in row if c))
        return any(pattern.search(line) for line in lines)

    for row in (probes, subheads, *body):
        assert line_with(row), row


def test_the_pdf_draws_every_figure_whole_within_the_page(run, printed):
    """Every figure (PNG or SVG) is in the PDF as a tagged figure with its alt text, drawn inside the page's
    printable width and with the figure's own shape: a figure cut at the page's edge or by a scrolling box
    is narrower than its shape says (the three SVG figures were, before the print CSS)."""
    from pdf_layout import figures, page_width

    nb_figures = _figures(run["nb"])
    drawn = figures(printed["pdf"])
    assert [f.alt for f in drawn] == [o["metadata"]["image/png"]["alt"] for _, o in nb_figures]
    right = page_width(printed["pdf"]) - 10 / 25.4 * 72  # the 10 mm margin of the report's print CSS
    for f, (_, o) in zip(drawn, nb_figures, strict=True):
        with Image.open(io.BytesIO(base64.b64decode(o["data"]["image/png"]))) as png:
            shape = png.size[0] / png.size[1]
        assert f.page >= 0 and 0 <= f.box[0] and f.box[2] <= right + 0.5, (f.alt[:60], f.box, right)
        assert f.aspect == pytest.approx(shape, rel=0.02), (f.alt[:60], f.box, shape)
