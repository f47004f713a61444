"""atomic writes, bundle manifests, results files and the synthetic mark."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pandas as pd
import pytest

from neutrino_ae import atomic
from neutrino_ae.bundle import manifest as bundle
from neutrino_ae.bundle import trust
from neutrino_ae.bundle.context import bundle_of, open_bundle
from neutrino_ae.errors import BundleError
from neutrino_ae.report import results
from neutrino_ae.report.figures import style


def test_atomic_open_replaces_only_on_success(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic.atomic_open(target, "w") as fh:
        fh.write("half")
        raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"], "temp file left behind"
    atomic.write_text(target, "new")
    assert target.read_text() == "new"


def test_atomic_output_has_normal_permissions(tmp_path):
    path = atomic.write_bytes(tmp_path / "x.bin", b"abc")
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask


def test_write_json_handles_numpy(tmp_path):
    path = atomic.write_json(tmp_path / "r.json", {"a": np.int64(3), "b": np.arange(3)})
    assert json.loads(path.read_text()) == {"a": 3, "b": [0, 1, 2]}


def _make_bundle(root, kind="sample", **fields):
    (root / "block_sched").mkdir(parents=True)
    (root / "block_sched" / "a.bin").write_bytes(b"\x00\x01")
    (root / "top.csv").write_text("x\n1\n")
    return bundle.write_manifest(root, kind, **fields)


def test_manifest_digests_and_kind(tmp_path):
    _make_bundle(tmp_path, ground_truth={"block_sched": {"mean_dispatch_gap_cycles": 42.0}})
    manifest = bundle.read_manifest(tmp_path)
    assert manifest["kind"] == "sample"
    assert manifest["files"]["block_sched/a.bin"] == {
        "sha256": hashlib.sha256(b"\x00\x01").hexdigest(), "bytes": 2}
    assert "bundle.json" not in manifest["files"]
    inner = tmp_path / "block_sched" / "a.bin"
    assert bundle_of(inner).kind == "sample" and bundle_of(inner).root == tmp_path.resolve()
    assert bundle_of(tmp_path / "block_sched").synthetic
    assert bundle_of(inner).ground_truth("block_sched") == {"mean_dispatch_gap_cycles": 42.0}
    assert bundle_of(inner).ground_truth("dmat") is None
    assert bundle_of(inner).digests["block_sched/a.bin"]["bytes"] == 2
    assert bundle_of(inner).relative(inner) == "block_sched/a.bin"
    opened = open_bundle(tmp_path / "block_sched")  # a run's root below the bundle.json: the kind is still known
    assert (opened.root, opened.kind, opened.manifest_root) == (tmp_path / "block_sched", "sample", tmp_path.resolve())
    assert trust.verify_manifest(tmp_path) == []
    inner.write_bytes(b"\x00\x02")
    assert any("sha256 mismatch" in p for p in trust.verify_manifest(tmp_path))


def test_no_manifest_is_unknown_and_bad_manifest_is_clear(tmp_path):
    assert open_bundle(tmp_path).kind == "unknown" and open_bundle(tmp_path).root == tmp_path
    (tmp_path / "bundle.json").write_text("{not json")
    with pytest.raises(BundleError, match=r"bundle\.json: is not valid JSON"):
        bundle.read_manifest(tmp_path)


def test_write_results_records_provenance_and_tables(tmp_path):
    root = tmp_path / "bundle"
    _make_bundle(root, kind="sample", scale="small", seed=7, generator_version="1")
    df = pd.DataFrame({"sm": [0, 1], "ratio": [0.125, 0.5]})
    out = results.write_results(tmp_path / "out", "block_sched", {"value": 1.5},
                                input_path=root / "block_sched" / "a.bin", tables={"per_sm": df})
    doc = json.loads(out["json"].read_text())
    assert doc["bundle_kind"] == "sample" and doc["synthetic"] is True
    assert doc["provenance"]["generator"] == {"generator_version": "1", "scale": "small", "seed": 7}
    assert pd.read_csv(out["per_sm.csv"]).equals(df)
    assert out["per_sm.md"].read_text().splitlines()[2] == "| 0 | 0.125 |"


def test_a_long_table_is_whole_in_csv_and_cut_in_markdown(tmp_path):
    n = results.MARKDOWN_MAX_ROWS + 5
    df = pd.DataFrame({"cycle": range(n), "busy_sms": range(n)})
    out = results.write_results(tmp_path, "x", {}, tables={"sweep": df})
    assert len(pd.read_csv(out["sweep.csv"])) == n
    md = out["sweep.md"].read_text().splitlines()
    assert len([ln for ln in md if ln.startswith("| ")]) == 2 + results.MARKDOWN_MAX_ROWS
    assert md[-1] == f"_First {results.MARKDOWN_MAX_ROWS:,} of {n:,} rows; the whole table is `sweep.csv`._"


def test_synthetic_mark_is_drawn(tmp_path):
    with style.style_context():
        fig = style.new_figure()
        fig.add_subplot().plot([0, 1], [0, 1])
    style.mark_synthetic(fig, synthetic=True)
    texts = [t.get_text() for t in fig.texts]
    assert style.SYNTHETIC_LABEL in texts
    paths = style.save_figure(fig, tmp_path, "fig")
    assert [p.suffix for p in paths] == [".png", ".svg"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "SYNTHETIC" in paths[1].read_text()


def test_raster_figures_are_saved_as_png_only_and_vector_ones_keep_their_layout(tmp_path):
    with style.style_context():
        raster = style.new_figure(layout="constrained")
        raster.add_subplot().imshow([[0, 1], [1, 0]])
        vector = style.new_figure(layout="constrained")
        vector.add_subplot().bar([0, 1], [1, 2])
    assert style.has_raster_content(raster) and not style.has_raster_content(vector)
    assert [p.name for p in style.save_figure(raster, tmp_path, "r")] == ["r.png"]
    before = [ax.get_position().bounds for ax in vector.axes]
    assert [p.name for p in style.save_figure(vector, tmp_path, "v")] == ["v.png", "v.svg"]
    # save_figure laid the axes out once and dropped the engine: the SVG reuses those positions.
    assert [ax.get_position().bounds for ax in vector.axes] != before
    assert vector.get_layout_engine() is None


def _ink_rows(png) -> np.ndarray:
    from PIL import Image

    img = np.asarray(Image.open(png).convert("RGB"))
    return np.flatnonzero((img != 255).any(axis=(1, 2)))


def _tight_plot(synthetic):
    with style.style_context(style.FIXED_TITLES):
        fig = style.tight_figure(6.0, 3.0)
        ax = fig.subplots()
        ax.plot([0, 1e6], [0, 5])
        ax.set_xlabel("a long x label, as wide as the footer is, to see that they do not overlap")
        ax.set_title("title")
        style.mark_synthetic(fig, synthetic)
    return fig


def test_a_tight_figure_is_cropped_to_its_content_with_a_strip_for_the_footer(tmp_path):
    dpi, pad = style.RC["savefig.dpi"], round(0.1 * style.RC["savefig.dpi"])
    png, svg = style.save_figure(_tight_plot(True), tmp_path, "syn")
    from PIL import Image

    w, h = Image.open(png).size
    assert w < 6.0 * dpi and h < 3.0 * dpi  # cropped
    rows = _ink_rows(png)
    assert rows[0] == pad and rows[-1] >= h - pad - 1
    gaps = np.diff(rows)
    assert gaps[-20:].max() > 5, "the footer is not set apart from the x label"
    # The SVG is cropped to the same area as the PNG.
    import re

    sw, sh = (float(v) for v in re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"', svg.read_text()).groups())
    assert abs(sw - w / dpi * 72) < 1.5 and abs(sh - h / dpi * 72) < 1.5

    (real,) = style.save_figure(_tight_plot(False), tmp_path, "real", formats=("png",))
    assert Image.open(real).size[1] < h and _ink_rows(real)[-1] >= Image.open(real).size[1] - pad - 1  # no strip


def test_text_wider_than_a_tight_figure_is_kept_whole(tmp_path):
    fig = _tight_plot(True)
    fig.suptitle("a suptitle far wider than the six-inch figure it belongs to, so it overflows the canvas " * 2)
    from PIL import Image

    (png,) = style.save_figure(fig, tmp_path, "wide", formats=("png",))
    assert Image.open(png).size[0] > 6.0 * style.RC["savefig.dpi"]  # measured tight box, beyond the canvas
