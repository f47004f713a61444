"""DMAT figures name their paper figure once and count pages in English (issue 25): "Fig. 1: DMAT, ..."
(not "Fig. 1 DMAT [fig1]: ...", the notebook's caption already says Fig. 1), and "1 page", not "1 pages"."""

from __future__ import annotations

from pathlib import Path

import pytest

from neutrino_ae.bundle.context import open_bundle
from neutrino_ae.report.figures import style
from neutrino_ae.run import runner


@pytest.fixture(scope="module")
def figures(tiny_bundle, tmp_path_factory) -> dict:
    saved = {}

    def recording(fig, out_dir, stem, formats=None):
        """Keeps the figure, whose title and legend the tests read; writing its files (the costly
        part) is no part of what they check, so only the PNG's path is named."""
        saved[stem] = fig
        return [Path(out_dir) / f"{stem}.png"]

    mp = pytest.MonkeyPatch()
    mp.setattr(style, "save_figure", recording)
    try:
        res = runner.run_section("dmat", open_bundle(tiny_bundle), tmp_path_factory.mktemp("dmat"), force=True)
    finally:
        mp.undo()
    saved["text"] = res.text
    return saved


@pytest.mark.parametrize("name,ref", [("fig1", "Fig. 1"), ("fig10a", "Fig. 10a"), ("fig10c", "Fig. 10c")])
def test_the_title_names_the_paper_figure_once(figures, name, ref):
    title = figures[name].axes[0].get_title()
    assert title.startswith(f"{ref}: DMAT, ") and f"[{name}]" not in title, title


def test_a_tensor_of_one_page_reads_1_page(figures):
    legend = [t.get_text() for t in figures["fig1"].axes[0].get_legend().get_texts()]
    assert any(": 1 page, " in t for t in legend), legend
    assert not any(" 1 pages" in t for t in legend) and " 1 pages" not in figures["text"]
