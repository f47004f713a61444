"""Sample data never loses its synthetic label: without bundle.json the sample generator's layout is
recognised; data nobody can place is labelled unknown, with a warning in figures and results."""

from __future__ import annotations

import json
import shutil

import pytest

from neutrino_ae.bundle import fetch
from neutrino_ae.bundle.context import bundle_of
from neutrino_ae.bundle.manifest import MANIFEST, SAMPLE, UNKNOWN
from neutrino_ae.errors import BundleError
from neutrino_ae.report.figures.style import UNKNOWN_PROVENANCE_LABEL, mark_synthetic, new_figure
from neutrino_ae.report.results import write_results
from neutrino_ae.run import runner


@pytest.fixture(scope="module")
def bare_sample(tiny_bundle, tmp_path_factory):
    """The sample generator's tiny bundle (a copy of the session's) without its bundle.json."""
    root = shutil.copytree(tiny_bundle, tmp_path_factory.mktemp("bare") / "bundle")
    (root / MANIFEST).unlink()
    return root


def test_a_sample_without_bundle_json_is_still_synthetic(bare_sample, tmp_path):
    trace = next((bare_sample / "warp_sched").rglob("*.bin"))
    found = bundle_of(trace)
    assert (found.kind, found.kind_from, found.synthetic) == (SAMPLE, "layout", True)
    assert found.root == bare_sample.resolve()
    res = runner.run_section("block_sched", bare_sample, tmp_path / "out")
    doc = json.loads((tmp_path / "out" / "block_sched" / "block_sched.json").read_text())
    assert res.data["bundle_kind"] == SAMPLE and doc["synthetic"] is True
    assert doc["provenance"]["kind_from"] == "layout" and "sample generator's" in doc["provenance_warning"]


def test_paper_mode_refuses_a_sample_without_bundle_json(bare_sample):
    with pytest.raises(BundleError, match="sample bundle without its bundle.json"):
        fetch.fetch_paper_bundle(bare_sample, progress=False)


def test_data_nobody_can_place_is_unknown_with_a_warning(tmp_path):
    data = tmp_path / "loose" / "exposed_latency" / "attn.csv"
    data.parent.mkdir(parents=True)
    data.write_text("probe,original\n")
    found = bundle_of(data)
    assert (found.kind, found.kind_from, found.synthetic, found.root) == (UNKNOWN, "none", None, None)
    doc = json.loads(write_results(tmp_path / "out", "x", {}, input_path=data)["json"].read_text())
    assert doc["synthetic"] is None and doc["bundle_kind"] == UNKNOWN
    assert "unknown" in doc["provenance_warning"]
    fig = new_figure()
    mark_synthetic(fig, None)
    assert [t.get_text() for t in fig.texts] == [UNKNOWN_PROVENANCE_LABEL]
