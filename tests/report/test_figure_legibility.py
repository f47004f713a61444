"""Every figure of every section is legible where the notebook shows it (issue 25): shown at most
``DISPLAY_MAX_PX`` wide, and no text in it (tick labels included) under 9 px at 100 % zoom.

The sizes are the figures' own: every section is run on the small sample bundle with
``style.save_figure`` wrapped, so each saved Figure's texts (font sizes in points, as matplotlib
draws them) are read after layout, beside the width of the PNG it wrote. On screen a text is
``size_pt * png_dpi / 72 * (display width / PNG width)`` px (the notebook shows the PNG
``display_width_px`` wide)."""

from __future__ import annotations

import pytest
from PIL import Image

from neutrino_ae.bundle.context import open_bundle
from neutrino_ae.report.figures import style
from neutrino_ae.report.section import registry
from neutrino_ae.run import runner

MIN_PX = 9.0  # the bar: no text under 9 px at 100 % zoom
NOTEBOOK_WIDTH_PX = 800  # the notebook's display width (Jupyter and the nbconvert page at 1400 px)


@pytest.fixture(scope="module")
def saved(small_bundle, tmp_path_factory) -> list[dict]:
    bundle = open_bundle(small_bundle)  # the test run's shared small sample bundle (seed 0), read only
    out = tmp_path_factory.mktemp("legible-out")
    found: list[dict] = []
    original = style.save_figure

    def recording(fig, out_dir, stem, formats=None):
        # The PNG only: what is read here is the PNG and the figure's texts after its layout and draw; a
        # vector copy (SVG) would be one more draw of the same texts, which nothing here reads.
        paths = original(fig, out_dir, stem, ("png",))
        with Image.open(paths[0]) as im:
            width, dpi = im.size[0], float(im.info["dpi"][0])
            title = im.text.get("Title", "")
        texts = [(t.get_text(), float(t.get_fontsize()), getattr(t, "_neutrino_kind", "")) for t in
                 style.figure_texts(fig)]
        ticks = [(lab.get_text(), float(lab.get_fontsize())) for ax in fig.axes if ax.get_visible()
                 for axis in (ax.xaxis, ax.yaxis) for lab in axis.get_ticklabels() if lab.get_text().strip()]
        found.append({"name": paths[0].name, "width": width, "dpi": dpi, "texts": texts, "ticks": ticks,
                      "title": title, "fig_width_in": fig.get_figwidth()})
        return paths

    mp = pytest.MonkeyPatch()
    mp.setattr(style, "save_figure", recording)
    try:
        for name in registry.names():
            runner.run_section(name, bundle, out, force=True)
    finally:
        mp.undo()
    return found


def _px(size_pt: float, fig: dict) -> float:
    shown = style.display_width_px(fig["width"], fig["dpi"])
    return size_pt * fig["dpi"] / 72 * shown / fig["width"]


def test_every_section_saves_figures(saved):
    names = {f["name"] for f in saved}
    assert {"fig1.png", "fig13a.png", "fig13d-sub.png", "max_mem.png", "block_sched_timeline.png",
            "exposed_latency.png", "kernel_overhead.png"} <= names, names


def test_figures_are_shown_at_most_the_notebook_width_and_at_full_resolution(saved):
    for fig in saved:
        shown = style.display_width_px(fig["width"], fig["dpi"])
        assert shown <= NOTEBOOK_WIDTH_PX, fig["name"]
        # Not scaled down past 100 % zoom: the displayed width is the figure's inches at 100 px per inch.
        assert fig["width"] / fig["dpi"] * 100 <= NOTEBOOK_WIDTH_PX + 1, (fig["name"], fig["width"], fig["dpi"])
        assert fig["dpi"] >= 100, "at least one PNG pixel per screen pixel"


def test_no_text_in_a_figure_is_under_9_px_on_screen(saved):
    small = [(f["name"], text[:40], size, round(_px(size, f), 1)) for f in saved for text, size, _ in f["texts"]
             if _px(size, f) < MIN_PX]
    assert small == [], small


def test_tick_labels_are_at_least_9_px_on_screen(saved):
    for f in saved:
        assert f["ticks"] or f["name"].startswith("fig1"), f"{f['name']}: no tick labels read"
        smallest = min((size for _, size in f["ticks"]), default=99.0)
        assert _px(smallest, f) >= MIN_PX, (f["name"], smallest, _px(smallest, f))


def test_every_png_carries_its_description(saved):
    for f in saved:
        assert f["title"].strip(), f"{f['name']}: no Title chunk (the notebook's alt text)"
