"""How the notebooks show a result (one call per cell): its figures side by side, a line linking its
tables and files, its summary text. Through IPython when it is there, else to stdout, so the same
code runs in tests. Links are relative to the saved executed notebook (``neutrino-ae run``) or the
kernel's working directory."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from neutrino_ae.report.results import SectionResult
from neutrino_ae.run.lock import parent_hold


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


# On screen a row of figures is at most ROW_MAX_WIDTH_PX wide and a figure alone SINGLE_MAX_WIDTH_PX,
# about a printed page's width (the PNGs are kept at full resolution; each image links its file).
ROW_MAX_WIDTH_PX = 1100
SINGLE_MAX_WIDTH_PX = 800
FIGURES_PER_ROW = 2


def _link_base() -> Path:
    """Where links in the outputs are relative to: the folder of the saved executed notebook under
    ``neutrino-ae run`` (it is saved in output_dir), else the kernel's working directory (the
    notebook's folder in Jupyter)."""
    held = parent_hold()
    return held[1] if held is not None else Path.cwd()


def link(path: Path) -> str:
    """``path`` as a link target in the outputs (relative to :func:`_link_base`)."""
    try:
        return Path(os.path.relpath(Path(path).resolve(), _link_base().resolve())).as_posix()
    except ValueError:  # another drive (Windows)
        return Path(path).resolve().as_posix()


def show_figures(paths: list[Path]) -> None:
    """Figures side by side, ``FIGURES_PER_ROW`` per row, each scaled to its share of the row: a
    pair such as Fig. 13a/13b can be compared at a glance and the page stays short."""
    import base64
    import html

    if not paths:
        return
    share = 100 // min(FIGURES_PER_ROW, len(paths))
    imgs = []
    for path in paths:
        data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
        imgs.append(f'<a href="{html.escape(link(path))}"><img src="data:image/png;base64,{data}" '
                    f'alt="{html.escape(Path(path).name)}" style="width:100%"></a>')
    cells = "".join(f'<div style="flex:0 0 {share}%;max-width:{share}%;padding:2px;box-sizing:border-box">{i}</div>'
                    for i in imgs)
    width = SINGLE_MAX_WIDTH_PX if len(paths) == 1 else ROW_MAX_WIDTH_PX
    _html(f'<div style="display:flex;flex-wrap:wrap;max-width:{width}px">{cells}</div>',
          "\n".join(f"[figure] {p}" for p in paths))


def show_files(res: SectionResult, tables: Iterable[str] | None = None) -> None:
    """One line linking the result's full tables (CSV) and other files; nothing is printed inline."""
    names = None if tables is None else set(tables)
    links = []
    for tname in res.tables:
        if names is not None and tname not in names:
            continue
        csv = _table_file(res, tname)
        links.append(f"[{tname}.csv]({link(csv)})" if csv is not None else tname)
    if names is None:
        shown = {".png", ".csv", ".md", ".svg"}
        links += [f"[{Path(p).name}]({link(Path(p))})" for p in res.files.values() if Path(p).suffix not in shown]
    if links:
        markdown("Full tables and files: " + " · ".join(links))


def _table_file(res: SectionResult, tname: str) -> Path | None:
    folders = {Path(p).parent for p in res.files.values()}
    for folder in sorted(folders):
        if (folder / f"{tname}.csv").is_file():
            return folder / f"{tname}.csv"
    return None


def show_text(text: str, how: str = "open") -> None:
    """The result's summary text: printed (``open``), collapsed (``folded``) or not at all."""
    import html

    if not text or how == "hidden":
        return
    # Never wrapped: a text table keeps its columns (a line too wide scrolls instead).
    style = ("white-space:pre;overflow-x:auto;font-family:var(--jp-code-font-family,monospace);"
             "font-size:12px;line-height:1.3")
    pre = f'<pre style="{style}">{html.escape(text.rstrip())}</pre>'
    if how == "folded":
        lines = text.rstrip().splitlines()
        _html(f"<details><summary>the same numbers as text ({len(lines)} lines)</summary>{pre}</details>", text)
        return
    _html(pre, text)


def show(res: SectionResult | None, figures: Iterable[str] | None = None, tables: Iterable[str] | bool | None = None,
         text: bool | str = True) -> None:
    """Show a result in the paper's form: its figures (all, or those named by file name or key),
    side by side; a line linking its full tables and files (never the tables inline); its summary
    text (``text``: True/``"open"``, ``"folded"``, False/``"hidden"``)."""
    if res is None:
        return
    wanted = None if figures is None else set(figures)
    show_figures([Path(p) for key, p in res.files.items() if Path(p).suffix == ".png"
                  and (wanted is None or key in wanted or Path(p).name in wanted)])
    if tables is not False:
        show_files(res, None if tables is None or tables is True else tables)
    show_text(res.text, "open" if text is True else "hidden" if text is False else text)
