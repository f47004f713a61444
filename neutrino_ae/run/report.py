"""``make report``: an executed notebook as a standalone HTML page beside it, and a PDF when a converter
is present.

    python -m neutrino_ae.run.report [results/static/static.executed.ipynb] [--pdf auto|always|never]

The page is nbconvert's ``lab`` HTML with every figure embedded (``data:`` URIs; the notebook's image
outputs carry their display width and alt text, which this template writes into each ``<img>``); it
is written next to the executed notebook as ``<name>.html`` (``results/static/static.html``), so its
links to the results files work where the folder is moved. The PDF (``<name>.pdf``) is printed from
that page by a headless Chromium: Playwright's (nbconvert's ``webpdf``) when installed, else a
``chromium``/``google-chrome`` on PATH (``$NEUTRINO_AE_CHROMIUM`` names another); with neither, the
PDF is skipped and one line says so. Exit codes: 0 written (PDF skipped included, unless
``--pdf always``), 2 bad input (no executed notebook, unreadable JSON) or no PDF converter with
``--pdf always``, 1 a converter that failed.
"""

from __future__ import annotations

import argparse
import html as html_lib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from neutrino_ae.atomic import atomic_path, write_text
from neutrino_ae.errors import InputError, NeutrinoAEError
from neutrino_ae.escape import terminal
from neutrino_ae.proctree import run_bounded
from neutrino_ae.report.command.layout import STATIC_RESULTS
from neutrino_ae.report.command.script import run_main
from neutrino_ae.run.publish import FAILED_KEY, failed_name

#: nbconvert's lab template, with each image's alt text and display width from its output metadata.
TEMPLATE_NAME = "neutrino_ae_report.html.j2"
TEMPLATE = r"""
{%- extends 'lab/index.html.j2' -%}
{%- macro img_attrs(out, mime) -%}
{%- set alt = out | get_metadata('alt', mime) -%}
{%- if alt is not none %} alt="{{ alt | escape_html }}"{% endif -%}
{%- set width = out | get_metadata('width', mime) -%}
{%- if width is not none %} width="{{ width | escape_html }}"{% endif -%}
{%- endmacro -%}
{% block data_png scoped %}
<div class="jp-RenderedImage jp-OutputArea-output {{ extra_class }}">
<img src="data:image/png;base64,{{ output.data['image/png'] | escape_html }}"{{ img_attrs(output, 'image/png') }}>
</div>
{%- endblock data_png %}
{% block data_svg scoped %}
<div class="jp-RenderedSVG jp-OutputArea-output {{ extra_class }}" data-mime-type="image/svg+xml">
<img src="data:image/svg+xml;base64,{{ output.data['image/svg+xml'] | text_base64 | escape_html }}"
{{- img_attrs(output, 'image/svg+xml') }}>
</div>
{%- endblock data_svg %}
{%- block html_head_css -%}
{{ super() }}
<style type="text/css">
{{ resources.report_css }}
</style>
<script>
/* On paper the verdict's folded details (each claim's source and tolerance) are printed open. */
window.addEventListener('beforeprint', () => {
  document.querySelectorAll('.neutrino-ae-verdict details').forEach(d => { d.open = true; });
});
</script>
{%- endblock html_head_css -%}
"""

#: The report's own CSS, after JupyterLab's: on screen an SVG figure shrinks with its column as a PNG does; on
#: paper (the PDF) nothing is clipped: no prompts, outputs as blocks as wide as the page, figures scaled to it,
#: wide tables set small enough to fit (Table 2 with its probe column groups), text dumps wrapped, nothing in a
#: scrolling box, a verdict row or a table row never split over two pages.
REPORT_CSS = """
.jp-RenderedSVG img, .jp-RenderedImage img { max-width: 100%; height: auto; }
.neutrino-ae-verdict-table code { white-space: normal; overflow-wrap: anywhere; }
@media print {
  @page { margin: 10mm; }
  body, main { width: auto !important; }
  .jp-InputPrompt, .jp-OutputPrompt { display: none !important; }
  .jp-Cell, .jp-Cell-inputWrapper, .jp-Cell-outputWrapper, .jp-OutputArea, .jp-OutputArea-child,
  .jp-InputArea { display: block !important; overflow: visible !important; max-width: 100% !important; }
  .jp-OutputArea-output, .jp-RenderedHTMLCommon, .jp-InputArea-editor, .neutrino-ae-table, .neutrino-ae-verdict {
    display: block !important; overflow: visible !important; width: auto !important; max-width: 100% !important; }
  img, svg { max-width: 100% !important; height: auto !important; break-inside: avoid; }
  pre, .jp-InputArea-editor pre, .cm-editor pre { white-space: pre-wrap !important; overflow-wrap: anywhere; }
  .jp-RenderedHTMLCommon table { max-width: 100% !important; }
  .jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th { overflow-wrap: anywhere; }
  .neutrino-ae-table table { font-size: 11px !important; max-width: 100% !important; table-layout: auto !important; }
  .neutrino-ae-table th, .neutrino-ae-table td { padding: 1px 4px !important; }
  .neutrino-ae-verdict-table { font-size: 10px !important; }
  .neutrino-ae-verdict-table col:nth-child(3) { width: 34% !important; }
  .neutrino-ae-verdict-table code { font-size: 10px !important; }
  tr { break-inside: avoid; }
  .jp-OutputArea-child { break-inside: auto; }
}
"""

REMOVE_INPUT_TAG = "remove-input"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
PDF_TIMEOUT_S = 180


class ConverterFailed(NeutrinoAEError):
    """A PDF converter ran and failed (exit 1: the run's output is fine, its export is not)."""

    exit_code = 1
NO_PDF = ("PDF: skipped, no converter: install Debian's chromium (apt-get install chromium) or "
          "Playwright (pip install 'nbconvert[webpdf]' && playwright install chromium)")


def default_notebook() -> Path:
    return Path(STATIC_RESULTS) / "static.executed.ipynb"


def html_name(executed: Path) -> Path:
    """``static.executed.ipynb`` -> ``static.html`` beside it."""
    stem = executed.name.removesuffix(".ipynb").removesuffix(".executed")
    return executed.with_name(f"{stem}.html")


def write_html(executed: str | os.PathLike[str], out: str | os.PathLike[str] | None = None) -> Path:
    """The executed notebook as one self-contained HTML page (every figure embedded); returns its path."""
    import nbformat
    from nbconvert import HTMLExporter

    executed = Path(executed)
    if not executed.is_file():
        raise InputError(executed, "no executed notebook (run `make run` or `neutrino-ae run static` first)")
    try:
        nb = nbformat.read(executed, as_version=4)
    except (ValueError, TypeError, KeyError) as exc:  # nbformat raises these for bad JSON / a bad notebook
        raise InputError(executed, f"not a readable notebook: {str(exc).splitlines()[0][:200]}") from None
    failed = nb.metadata.get(FAILED_KEY)
    if failed is not None or executed.name.endswith(".failed.ipynb"):
        raise InputError(executed, f"the notebook of a failed run ({failed or 'failed'}); a report is made of a "
                                   "run that finished: fix the error and rerun `make run`") from None
    body, _ = _export(HTMLExporter, nb, html_name(executed).stem)
    run_id = _run_id(executed.parent)
    if run_id is not None:  # the run this page shows: a later run marks the page stale (mark_stale)
        body = body.replace("<head>", f'<head>\n<meta name="{RUN_META}" content="{html_lib.escape(run_id)}">', 1)
    return write_text(Path(out) if out else html_name(executed), body)


#: The ``<meta>`` naming the run a page shows (``summary.json``'s ``run_id`` when the page was made).
RUN_META = "neutrino-ae-run"
STALE_ID = "neutrino-ae-stale"
_META_RE = re.compile(rf'<meta name="{RUN_META}" content="([^"]*)">')


def _run_id(folder: Path) -> str | None:
    try:
        run_id = json.loads((folder / "summary.json").read_text(encoding="utf-8")).get("run_id")
    except (OSError, ValueError, AttributeError):
        return None
    return run_id if isinstance(run_id, str) else None


def mark_stale(folder: str | os.PathLike[str]) -> list[Path]:
    """After a run wrote its summary into ``folder``: every report page there (``make report``'s
    ``<name>.html``) that shows another run gets a banner at its top saying so and how to rebuild it, and
    its PDF is renamed ``<name>.stale.pdf``, so no page of an older run is shown as the newest. Returns the
    pages marked. A page already marked is left as it is."""
    folder = Path(folder)
    current, marked = _run_id(folder), []
    for page in sorted(folder.glob("*.html")):
        try:
            text = page.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        shown = _META_RE.search(text)
        if (shown is not None and shown.group(1) == current) or f'id="{STALE_ID}"' in text:
            continue
        which = f"run {html_lib.escape(shown.group(1))}" if shown else "an earlier run"
        banner = (f'<div id="{STALE_ID}" style="background:#b00020;color:#fff;padding:12px 16px;font:bold 16px '
                  f'sans-serif">STALE REPORT: this page shows {which}; a later run '
                  f'({html_lib.escape(current or "not recorded")}) has written this folder since. '
                  "Rebuild the page with <code>make report</code> (python -m neutrino_ae.run.report).</div>")
        body = re.search(r"<body[^>]*>", text)
        if body is None:
            continue
        text = text[:body.end()] + banner + text[body.end():]
        write_text(page, text)
        pdf = page.with_suffix(".pdf")
        if pdf.is_file():
            os.replace(pdf, page.with_name(f"{page.stem}.stale.pdf"))
        marked.append(page)
    return marked


def _export(exporter_class: type, nb: object, name: str) -> tuple[object, dict]:
    """``nb`` through ``exporter_class`` (nbconvert's HTMLExporter, or WebPDFExporter, which prints that
    HTML) with this module's template and CSS: the HTML page and the PDF printed by Playwright are the same."""
    from jinja2 import DictLoader
    from traitlets.config import Config

    # Cells tagged remove-input (the kernel check) show their outputs only.
    config = Config({"TagRemovePreprocessor": {"enabled": True, "remove_input_tags": {REMOVE_INPUT_TAG}}})
    exporter = exporter_class(config=config, template_name="lab",
                              extra_loaders=[DictLoader({TEMPLATE_NAME: TEMPLATE})], template_file=TEMPLATE_NAME)
    return exporter.from_notebook_node(nb, resources={"metadata": {"name": name}, "report_css": REPORT_CSS})


def warn_later_failure(executed: Path) -> str | None:
    """A failed run newer than ``executed`` beside it (``static.failed.ipynb``): say loudly, on stderr,
    that the report is the previous good run's; returns the line (None when there is no such run)."""
    failed = executed.with_name(failed_name(executed.name))
    try:
        if failed.stat().st_mtime_ns < executed.stat().st_mtime_ns:
            return None
    except OSError:
        return None
    line = (f"WARNING: the latest run FAILED (its notebook: {failed}); this report is of the previous run "
            f"that finished, {executed}")
    print(terminal(line), file=sys.stderr)
    return line


def find_chromium() -> str | None:
    """A Chromium to print with: ``$NEUTRINO_AE_CHROMIUM``, else the first of :data:`CHROMIUM_NAMES` on PATH."""
    named = os.environ.get("NEUTRINO_AE_CHROMIUM")
    if named:
        return shutil.which(named) or (named if Path(named).is_file() else None)
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


def chromium_command(chromium: str, profile: str, *args: str) -> list[str]:
    """A headless Chromium command line that starts clean and quiet: its own fresh profile (``profile``, a
    new folder), no background networking, component updates, sync or first-run steps."""
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}", *args]


def write_pdf(html: Path, executed: Path) -> tuple[Path | None, str]:
    """The PDF beside ``html``: (path, how) when written, (None, why not) when no converter is present.
    A Chromium on PATH prints ``html`` itself; without one, Playwright's (nbconvert's webpdf) prints the
    same page. A converter that runs and fails raises :class:`ConverterFailed`."""
    pdf = html.with_suffix(".pdf")
    chromium = find_chromium()
    if chromium is None:
        if importlib.util.find_spec("playwright") is None:
            return None, f"{NO_PDF} (no chromium on PATH, no Playwright)"
        try:
            return _webpdf(executed, pdf), "nbconvert webpdf (Playwright)"
        except Exception as exc:  # noqa: BLE001 - Playwright without its browser: no converter after all
            return None, (f"{NO_PDF} (webpdf failed: {type(exc).__name__}: "
                          f"{str(exc).splitlines()[0][:120] if str(exc) else ''})")
    with atomic_path(pdf) as tmp, tempfile.TemporaryDirectory(prefix="neutrino-ae-chromium-") as profile:
        cmd = chromium_command(chromium, profile, "--no-pdf-header-footer", f"--print-to-pdf={tmp}",
                               html.resolve().as_uri())
        try:
            proc = run_bounded(cmd, PDF_TIMEOUT_S, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except subprocess.TimeoutExpired:
            raise ConverterFailed(f"{chromium}: no PDF after {PDF_TIMEOUT_S} s") from None
        if proc.returncode != 0 or not Path(tmp).is_file() or Path(tmp).stat().st_size == 0:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
            raise ConverterFailed(f"{chromium}: printing {html} to PDF failed (exit {proc.returncode}): {last}")
    return pdf, f"{Path(chromium).name} --headless --print-to-pdf"


def _webpdf(executed: Path, pdf: Path) -> Path:
    import nbformat
    from nbconvert import WebPDFExporter

    body, _ = _export(WebPDFExporter, nbformat.read(executed, as_version=4), pdf.stem)
    with atomic_path(pdf) as tmp:
        Path(tmp).write_bytes(body)
    return pdf


#: Window width of the render check (a reviewer's browser).
RENDER_WIDTH_PX = 1400
#: The printable width of the PDF's page in CSS px: Chromium's default Letter paper, 8.5 in at 96 px per
#: inch, less REPORT_CSS's 10 mm margins.
PAPER_WIDTH_PX = round(8.5 * 96 - 2 * 10 / 25.4 * 96)
_PROBE_JS = ("<script>window.addEventListener('load',()=>{const r=e=>e.getBoundingClientRect(),w=e=>r(e).width;"
             "const col=document.querySelector('.jp-Cell'),W=window.innerWidth;"
             "const wide=[...document.querySelectorAll('main img, main table, main pre, main svg')]"
             ".filter(e=>r(e).right>W+1).map(e=>e.tagName.toLowerCase()+': '+(e.alt||e.className||'').slice(0,80));"
             "for(const e of document.querySelectorAll('main *')){if(getComputedStyle(e).overflowX!='visible'"
             "&&e.scrollWidth>e.clientWidth+1)wide.push('clipped '+e.tagName.toLowerCase()+': '"
             "+(e.textContent||'').trim().slice(0,60))}"
             "const o={height:document.documentElement.scrollHeight,column:col?w(col):0,window:W,"
             "scroll_width:document.documentElement.scrollWidth,wider_than_window:wide,"
             "images:[...document.images].map(w),"
             "verdict:[...document.querySelectorAll('.neutrino-ae-verdict')].map(v=>({width:Math.max(w(v),"
             "...[...v.querySelectorAll('table')].map(w)),height:r(v).height,"
             "rows:v.querySelectorAll('tr.neutrino-ae-claim').length,"
             "column:w(v.closest('.jp-OutputArea-output,.jp-MarkdownOutput')||v.parentElement)}))};"
             "const p=document.createElement('pre');p.id='neutrino-ae-render';p.textContent=JSON.stringify(o);"
             "document.body.appendChild(p)})</script>")


def _measure(html: Path, chromium: str, width: int, paper: bool = False) -> dict:
    """The page's measurements (:data:`_PROBE_JS`) in headless Chromium ``width`` px wide; ``paper``: with the
    page's print CSS applied on screen (``@media print`` read as ``@media all``), ``width`` the paper's."""
    from html import unescape

    page = html.read_text(encoding="utf-8")
    if paper:
        page = page.replace("@media print", "@media all")
    probe = html.with_name(f".{html.stem}.render-check.html")
    probe.write_text(page.replace("</body>", _PROBE_JS + "</body>"), encoding="utf-8")
    try:
        with tempfile.TemporaryDirectory(prefix="neutrino-ae-chromium-") as profile:
            cmd = chromium_command(chromium, profile, "--hide-scrollbars", f"--window-size={width},1000",
                                   "--virtual-time-budget=10000", "--dump-dom", probe.resolve().as_uri())
            dom = run_bounded(cmd, PDF_TIMEOUT_S, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True).stdout
    finally:
        probe.unlink(missing_ok=True)
    found = re.search(r'<pre id="neutrino-ae-render">([^<]*)</pre>', dom)
    if not found:
        raise ConverterFailed(f"{chromium}: no measurements from {html}")
    return json.loads(unescape(found.group(1)))


def render_check(html: Path, executed: Path, chromium: str, width: int = RENDER_WIDTH_PX,
                 screenshot: Path | None = None) -> dict:
    """Open the page in headless Chromium ``width`` px wide: its height, the notebook column's width, each
    figure's width on screen, the smallest text in a figure there (px: the PNG's smallest font size, from its
    :data:`style.SMALLEST_TEXT_KEY` chunk, times PNG px per point times shown / PNG width) and each verdict
    table's width, height and claim rows beside the width of the output it is in (``verdict_tables``); then
    laid out as on paper (its print CSS, :data:`PAPER_WIDTH_PX` wide): the figures, tables and text blocks
    wider than the page and the boxes that scroll or clip what they hold (``paper["wider_than_window"]``:
    none, or the PDF loses that part)."""
    import base64
    import io

    import nbformat
    from PIL import Image

    from neutrino_ae.report.figures.style import SMALLEST_TEXT_KEY

    measured = _measure(html, chromium, width)
    height, shown = float(measured["height"]), [float(x) for x in measured["images"]]
    figures = []
    nb = nbformat.read(executed, as_version=4)
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if "image/png" in out.get("data", {}):
                with Image.open(io.BytesIO(base64.b64decode(out["data"]["image/png"]))) as im:
                    pt = float(im.text.get(SMALLEST_TEXT_KEY, "nan"))
                    figures.append((out["data"].get("text/plain", ""), im.size[0], float(im.info["dpi"][0]), pt))
    if len(figures) != len(shown):
        raise ConverterFailed(f"{html}: {len(shown)} images on the page, {len(figures)} figures in {executed}")
    rows = [{"figure": name.removeprefix("[figure] "), "shown_px": s, "png_px": w,
             "smallest_text_px": pt * dpi / 72 * s / w} for (name, w, dpi, pt), s in zip(figures, shown, strict=True)]
    if screenshot is not None:
        with tempfile.TemporaryDirectory(prefix="neutrino-ae-chromium-") as profile:
            cmd = chromium_command(chromium, profile, "--hide-scrollbars", f"--window-size={width},{int(height)}",
                                   "--virtual-time-budget=10000", f"--screenshot={screenshot}", html.resolve().as_uri())
            run_bounded(cmd, PDF_TIMEOUT_S, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    paper = _measure(html, chromium, PAPER_WIDTH_PX, paper=True)
    return {"width": width, "height": height, "column": float(measured["column"]), "figures": rows,
            "verdict_tables": measured["verdict"],
            "paper": {"width": paper["window"], "scroll_width": paper["scroll_width"],
                      "wider_than_window": paper["wider_than_window"], "verdict_tables": paper["verdict"]}}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m neutrino_ae.run.report",
                                     description="Write an executed notebook as HTML (and PDF when a converter "
                                                 "is present) beside it.",
                                     epilog="exit codes: 0 written (PDF skipped included), 1 a converter failed, "
                                            "2 bad input or --pdf always without a converter")
    parser.add_argument("notebook", nargs="?", type=Path, default=default_notebook(),
                        help=f"executed notebook (default: {default_notebook()})")
    parser.add_argument("--pdf", choices=("auto", "always", "never"), default="auto",
                        help="auto: a PDF when a converter is present (default); always: fail without one")
    parser.add_argument("--render-check", action="store_true",
                        help=f"open the page in headless Chromium {RENDER_WIDTH_PX} px wide: its height and the "
                             "smallest text in a figure on screen (needs chromium)")
    parser.add_argument("--screenshot", type=Path, help="with --render-check: a full-page screenshot (PNG) here")
    args = parser.parse_args(argv)
    html = write_html(args.notebook)
    warn_later_failure(args.notebook)
    print(f"HTML: {terminal(html)} ({html.stat().st_size / 1e6:.1f} MB, every figure embedded)")
    if args.pdf == "never":
        return _render_check(args, html)
    pdf, how = write_pdf(html, args.notebook)
    if pdf is None:
        print(how)
        if args.pdf == "always":
            print("error: --pdf always: no PDF converter", file=sys.stderr)
            return 2
        return _render_check(args, html)
    print(f"PDF:  {terminal(pdf)} ({pdf.stat().st_size / 1e6:.1f} MB, by {how})")
    return _render_check(args, html)


def _render_check(args: argparse.Namespace, html: Path) -> int:
    if not args.render_check:
        return 0
    chromium = find_chromium()
    if chromium is None:
        print("render check: skipped, no chromium (apt-get install chromium)")
        return 0
    found = render_check(html, args.notebook, chromium, screenshot=args.screenshot)
    small = min(found["figures"], key=lambda f: f["smallest_text_px"], default=None)
    tables = found["verdict_tables"]
    verdict = "; ".join(f"verdict table {t['width']:,.0f} x {t['height']:,.0f} px in a {t['column']:,.0f} px column, "
                        f"{t['rows']} claims" for t in tables) or "no verdict table"
    print(f"render check ({Path(chromium).name}, {found['width']} px wide): page {found['height']:,.0f} px tall, "
          f"column {found['column']:,.0f} px, "
          f"{len(found['figures'])} figures shown {min((f['shown_px'] for f in found['figures']), default=0):.0f}-"
          f"{max((f['shown_px'] for f in found['figures']), default=0):.0f} px wide"
          + (f"; smallest text in a figure {small['smallest_text_px']:.1f} px ({small['figure']})" if small else "")
          + f"; {verdict}"
          + (f"; screenshot {args.screenshot}" if args.screenshot else ""))
    paper = found["paper"]
    wide = paper["wider_than_window"]
    print(f"on paper ({paper['width']} px, its print CSS): "
          + (f"{len(wide)} wider than the page: {'; '.join(wide[:5])}" if wide else "nothing wider than the page"))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
