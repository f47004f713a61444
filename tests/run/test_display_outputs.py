"""How the notebooks show a figure and name paths (issue 25), on small inputs: an image output with its
display width and alt text, an SVG beside a small vector figure, and paths relative to the results folder."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from neutrino_ae.report.figures import style
from neutrino_ae.run.display import alt_text, figure_output, relative_text


def _save(tmp_path: Path, width_in: float, raster: bool = False) -> Path:
    fig = style.new_figure(width_in, 3.0)
    ax = fig.add_subplot(1, 1, 1)
    if raster:
        ax.imshow([[0, 1], [1, 0]], aspect="auto")
    else:
        ax.plot([0, 1], [1, 0])
    ax.set_title("a title for the reader")
    return style.save_figure(fig, tmp_path, "f")[0]


def test_a_figure_is_an_image_output_with_alt_text_and_its_width_at_100_px_per_inch(tmp_path):
    png = _save(tmp_path, 6.0)
    data, meta = figure_output(png, caption="Fig. 9")
    with Image.open(io.BytesIO(base64.b64decode(data["image/png"]))) as im:
        width, dpi = im.size[0], im.info["dpi"][0]
    assert meta["image/png"]["width"] == round(width * 100 / dpi) < 800  # 6 in, cropped: under 600 px
    assert meta["image/png"]["alt"] == "Fig. 9: a title for the reader"
    assert data["text/plain"].startswith("[figure] ") and data["text/plain"].endswith("f.png")
    # A line plot is vector: its SVG comes along, with the same alt text and width.
    assert data["image/svg+xml"].lstrip().startswith(("<?xml", "<svg"))
    assert meta["image/svg+xml"] == meta["image/png"]


def test_a_wide_figure_is_shown_at_the_notebook_width_and_a_raster_one_without_svg(tmp_path):
    data, meta = figure_output(_save(tmp_path, 12.0, raster=True))
    assert meta["image/png"]["width"] == 800 and "image/svg+xml" not in data


def test_paths_under_the_results_folder_are_written_relative_to_it():
    base = Path("/tmp/results/static")
    text = ("wrote /tmp/results/static/dmat/fig1.png; outputs: /tmp/results/static, "
            "(/tmp/results/static) and /tmp/results/static2/x")
    assert relative_text(text, base) == "wrote dmat/fig1.png; outputs: ., (.) and /tmp/results/static2/x"
    assert relative_text("a/b /c", Path("/")) == "a/b /c"


@pytest.mark.parametrize(("caption", "titles", "alt"), [
    ("Sec. 4.5, Block scheduling cost", "Block scheduling cost: variants compared (Sec. 4.5); running",
     "Block scheduling cost: variants compared (Sec. 4.5); running"),
    ("Fig. 1: Triton FlashAttention-2", "Fig. 1: DMAT, 25,088 accesses, 5 pages",
     "Fig. 1: Triton FlashAttention-2: DMAT, 25,088 accesses, 5 pages"),
    ("Fig. 11, Maximum probe memory usage", "Fig. 11: maximum probe memory vs. workload peak memory",
     "Fig. 11, Maximum probe memory usage: maximum probe memory vs. workload peak memory"),
    ("Sec. 4.5, Block scheduling cost", "raw: block timeline of 3 SMs",
     "Sec. 4.5, Block scheduling cost: raw: block timeline of 3 SMs"),
    ("Fig. 13a-d, Warp scheduling", "Fig. 13a: exclusive scheduling", "Fig. 13a-d, Warp scheduling: Fig. 13a: "
     "exclusive scheduling"),
    ("Fig. 9", "", "Fig. 9"), ("", "a title", "a title"),
])
def test_alt_text_does_not_repeat_the_title(caption, titles, alt):
    """Issue 37 item 8: 'Sec. 4.5, Block scheduling cost: Block scheduling cost: variants compared (Sec. 4.5)',
    'Fig. 1: Triton FlashAttention-2: Fig. 1: DMAT, ...': the caption's reference and name once."""
    assert alt_text(caption, titles) == alt
