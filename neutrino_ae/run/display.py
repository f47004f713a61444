"""How the notebooks show a result (one call per cell): its figures as image outputs (PNG, plus SVG
for small vector figures, sized for the notebook's width, with alt text), its paper-form HTML table
if it has one, a line linking its tables and files, its summary text with paths relative to the
results folder. Through IPython when it is there, else to stdout, so the same
code runs in tests. Links are relative to the saved executed notebook (``neutrino-ae run``) or the
kernel's working directory."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from neutrino_ae.escape import html_text, md_link, md_text
from neutrino_ae.report.figures.legibility import display_width_px
from neutrino_ae.report.results import SectionResult
from neutrino_ae.run.lock import parent_hold
from neutrino_ae.run.publish import GEN_PREFIX


def _display(obj: Any, **kwargs: Any) -> None:
    try:
        from IPython.display import display
    except ImportError:  # pragma: no cover - the suite installs IPython (ipykernel)
        print(obj)
        return
    display(obj, **kwargs)


def markdown(text: str) -> None:
    """Markdown in the cell's output."""
    from IPython.display import Markdown

    _display(Markdown(text))


def _html(html: str, plain: str) -> None:
    """HTML for the notebook (and its nbconvert rendering), ``plain`` for a text-only front end."""
    _display({"text/html": html, "text/plain": plain}, raw=True)


html_output = _html


def in_kernel() -> bool:
    """Running in a Jupyter kernel (a front end or papermill shows display outputs), not plain Python."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - the suite installs IPython (ipykernel)
        return False
    return getattr(get_ipython(), "kernel", None) is not None


class Placeholder:
    """One output that later cells replace in place (a display id: JupyterLab, Notebook 7 and nbclient
    update every output showing it, in any cell); nothing outside a kernel."""

    def __init__(self, markdown_text: str) -> None:
        from IPython.display import Markdown, display

        self._handle = display(Markdown(markdown_text), display_id=True) if in_kernel() else None

    def update(self, markdown_text: str) -> None:
        from IPython.display import Markdown

        if self._handle is not None:
            self._handle.update(Markdown(markdown_text))


class Progress:
    """The running cell's progress line (``dmat: computing ... 3 of 7 sections done``), updated in place and
    removed before the cell shows its results. A display output with ``text/plain`` and ``text/html``, not
    a widget: Lab and Notebook 7 update it, papermill's log prints its first state, an HTML export never
    says "Loading widget...". Nothing outside a kernel (run.log has the timings)."""

    def __init__(self) -> None:
        self._handle: Any = None

    def show(self, text: str) -> None:
        if not in_kernel():
            return
        import html

        from IPython.display import display

        data = {"text/plain": text, "text/html": f'<pre class="neutrino-ae-progress">{html.escape(text)}</pre>'}
        if self._handle is None:
            self._handle = display(data, raw=True, display_id=True)
        else:
            self._handle.update(data, raw=True)

    def done(self) -> None:
        """Remove the line (the cell's outputs so far: the progress line is the first thing it shows)."""
        if self._handle is not None:
            from IPython.display import clear_output

            clear_output()
            self._handle = None


#: An SVG copy of a vector figure is put beside its PNG in the output when its file is at most this big
#: (bars and lines: tens of KB); front ends and nbconvert's HTML then show the vector copy.
SVG_INLINE_MAX_BYTES = 160_000


def _link_base() -> Path:
    """Where links in the outputs are relative to: the folder of the saved executed notebook under
    ``neutrino-ae run`` (it is saved in output_dir), else the kernel's working directory (the
    notebook's folder in Jupyter)."""
    held = parent_hold()
    return held[1] if held is not None else Path.cwd()


def link(path: Path) -> str:
    """``path`` as a link target in the outputs (relative to :func:`_link_base`). A path inside the run's
    generation (run/publish.py) is named by the output folder's link to it: the published path."""
    try:
        rel = Path(os.path.relpath(Path(path).resolve(), _link_base().resolve()))
    except ValueError:  # another drive (Windows)
        rel = Path(path).resolve()
    parts = [p for p in rel.parts if not p.startswith(GEN_PREFIX)]
    return Path(*parts).as_posix() if parts else "."


def relative_text(text: str, base: Path | None) -> str:
    """``text`` with every path under ``base`` (the results folder) written relative to it: the outputs
    name no folder of the machine that ran them."""
    if base is None or not text:
        return text
    for root in dict.fromkeys((str(Path(base).resolve()), str(Path(base).absolute()), str(base))):
        root = root.rstrip(os.sep)
        if root in ("", "."):  # the file system's root or the working directory: nothing to shorten
            continue
        # The folder itself (then a space, quote, bracket, punctuation or the end) or a path below it,
        # never a longer name that starts the same (/tmp/out2 under /tmp/out).
        text = re.sub(re.escape(root) + r"(?:" + re.escape(os.sep) + r"|(?=$|[\s'\"),;:\]]))",
                      lambda m: "" if m.group(0).endswith(os.sep) else ".", text)
    return text


_REF = re.compile(r"^((?:Fig\.|Sec\.|Table)\s*[\w.-]+)(?:[,:]\s*(.*))?$", re.S)


def alt_text(caption: str, titles: str) -> str:
    """A figure's alt text: its caption (``Fig. 1: Triton FlashAttention-2``), then its own titles, each
    thing once. Titles that already name the caption's reference and name stand alone; a title that
    starts with the caption's reference (``Fig. 1: DMAT, ...``) drops it."""
    caption, titles = caption.strip(), titles.strip()
    if not caption or not titles:
        return caption or titles
    m = _REF.match(caption)
    ref, name = (m.group(1), (m.group(2) or "").strip()) if m else (caption, "")
    if ref in titles and name.lower() in titles.lower():
        return titles
    for sep in (": ", ", "):
        if titles.startswith(ref + sep):
            titles = titles[len(ref) + len(sep):]
            break
    return f"{caption}: {titles}"


def figure_output(path: Path, caption: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    """One figure as a display output: ``image/png`` (plus ``image/svg+xml`` for a vector figure whose
    SVG is small), shown :func:`display_width_px` wide, with alt text (the caption, then the
    figure's own titles from its PNG) in each image's metadata; ``text/plain`` names the file."""
    import base64
    import io

    from PIL import Image

    path = Path(path)
    raw = path.read_bytes()
    try:
        with Image.open(io.BytesIO(raw)) as im:
            width: int | None = im.size[0]
            dpi = float((im.info.get("dpi") or (0,))[0]) or None
            titles = im.text.get("Title", "") if hasattr(im, "text") else ""
    except (OSError, ValueError):  # not a PNG PIL reads: shown as the front end sizes it
        width, dpi, titles = None, None, ""
    alt = alt_text(caption, titles) or path.name
    meta: dict[str, Any] = {"alt": alt}
    if width:
        meta["width"] = display_width_px(width, dpi)
    data: dict[str, Any] = {"image/png": base64.b64encode(raw).decode("ascii"), "text/plain": f"[figure] {link(path)}"}
    metadata: dict[str, Any] = {"image/png": dict(meta)}
    svg = path.with_suffix(".svg")
    if svg.is_file() and svg.stat().st_size <= SVG_INLINE_MAX_BYTES:
        data["image/svg+xml"] = svg.read_text(encoding="utf-8")
        metadata["image/svg+xml"] = dict(meta)
    return data, metadata


def show_figures(paths: list[Path], caption: str = "") -> None:
    """Each figure as an image output (:func:`figure_output`), in order; nbconvert's HTML, PDF and
    LaTeX exports and any notebook viewer then embed it."""
    for path in paths:
        data, metadata = figure_output(Path(path), caption)
        _display(data, raw=True, metadata=metadata)


def show_files(res: SectionResult, tables: Iterable[str] | None = None) -> None:
    """One line linking the result's full tables (CSV) and other files; nothing is printed inline."""
    names = None if tables is None else set(tables)
    links = []
    for tname in res.tables:
        if names is not None and tname not in names:
            continue
        csv = _table_file(res, tname)
        links.append(md_link(f"{tname}.csv", link(csv)) if csv is not None else md_text(tname))
    if names is None:
        shown = {".png", ".csv", ".md", ".svg"}
        links += [md_link(Path(p).name, link(Path(p))) for p in res.files.values() if Path(p).suffix not in shown]
    if links:
        markdown("Full tables and files: " + " · ".join(links))


def _table_file(res: SectionResult, tname: str) -> Path | None:
    folders = {Path(p).parent for p in res.files.values()}
    for folder in sorted(folders):
        if (folder / f"{tname}.csv").is_file():
            return folder / f"{tname}.csv"
    return None


def show_text(text: str, how: str = "open") -> None:
    """The result's summary text: printed (``open``), collapsed (``folded``) or not at all; paths in it
    relative to the results folder (:func:`relative_text`)."""
    if not text or how == "hidden":
        return
    text = relative_text(text, _link_base())
    # Never wrapped: a text table keeps its columns (a line too wide scrolls instead).
    css = ("white-space:pre;overflow-x:auto;font-family:var(--jp-code-font-family,monospace);"
           "font-size:12px;line-height:1.3")
    pre = f'<pre style="{css}">{html_text(text.rstrip())}</pre>'
    if how == "folded":
        lines = text.rstrip().splitlines()
        _html(f"<details><summary>the same numbers as text ({len(lines)} lines)</summary>{pre}</details>", text)
        return
    _html(pre, text)


_BODY = re.compile(r"<body[^>]*>(.*)</body>", re.S | re.I)
_HEADING = re.compile(r"<h[1-3][^>]*>.*?</h[1-3]>", re.S | re.I)


def show_html_table(path: Path, plain: str = "") -> None:
    """A table the section saved as an HTML page, shown inline: the page's body without its heading
    (the notebook's section heading names it), the table as the paper lays it out."""
    page = Path(path).read_text(encoding="utf-8")
    found = _BODY.search(page)
    body = _HEADING.sub("", found.group(1) if found else page, count=1).strip()
    _html(f'<div class="neutrino-ae-table">{body}</div>', plain or f"[table] {link(Path(path))}")


def _ordered(res: SectionResult, suffix: str, wanted: list[str] | None) -> list[Path]:
    items = [(key, Path(p)) for key, p in res.files.items() if Path(p).suffix == suffix]
    if wanted is None:
        return [p for _, p in items]
    return [p for w in wanted for key, p in items if w in (key, p.name)]


def show(res: SectionResult | None, figures: Iterable[str] | None = None, tables: Iterable[str] | bool | None = None,
         text: bool | str = True, caption: str = "") -> None:
    """Show a result in the paper's form: its HTML tables named in ``figures`` (e.g. Table 2), then
    its figures (all, or those named by file name or key, in that order), each an image output with
    ``caption`` as alt text; a line linking its full tables and files; its summary text (``text``:
    True/``"open"``, ``"folded"``, False/``"hidden"``)."""
    if res is None:
        return
    wanted = None if figures is None else list(figures)
    if wanted is not None:
        for page in _ordered(res, ".html", wanted):
            show_html_table(page)
    show_figures(_ordered(res, ".png", wanted), caption)
    if tables is not False:
        show_files(res, None if tables is None or tables is True else tables)
    show_text(res.text, "open" if text is True else "hidden" if text is False else text)
