"""Which trace directories the block_sched section reads (issue 21 item 2): the newest raw collection and the newest
of each variant, by the time in the folder's name (neutrino_ae/formats/tracedir.py), named in the results and text."""

from __future__ import annotations

import json
import shutil

from undrawn_analysis import leave_figures_undrawn

from block_sched.inputs import find_bundle_traces
from neutrino_ae.bundle.context import bundle_of
from neutrino_ae.report.section import driver, registry


def test_newest_raw_and_variant_collections_are_read_and_named(tiny_bundle, tmp_path, monkeypatch):
    root = shutil.copytree(tiny_bundle, tmp_path / "bundle")
    base = root / "block_sched"
    (jan,) = [d for d in base.iterdir() if d.name.startswith("Jan_")]
    # As strings "Aug" and "Feb" sort before "Jan"; by the time in the name both are newer.
    aug = shutil.copytree(jan, base / "Aug_23_06_27_37_268336")
    (memset_jan,) = list((base / "variants" / "memset").iterdir())
    feb = shutil.copytree(memset_jan, base / "variants" / "memset" / "Feb01_000000_5")
    persistent = next((base / "variants" / "persistent").iterdir())

    assert find_bundle_traces(root) == [aug, feb, persistent]  # one raw collection: the newest
    leave_figures_undrawn(monkeypatch)  # read for its trace dirs, text and JSON, not its figures
    res = driver.analyze(registry.get("block_sched"), bundle_of(root), tmp_path / "out")
    expected = ["block_sched/Aug_23_06_27_37_268336", "block_sched/variants/memset/Feb01_000000_5",
                f"block_sched/variants/persistent/{persistent.name}"]
    assert res.data["trace_dirs"] == expected
    assert [t["label"] for t in res.data["traces"]] == ["raw", "memset", "persistent"]
    assert [t["trace_dir"] for t in res.data["traces"]] == expected
    assert (f"trace dirs read: raw {expected[0]}, memset {expected[1]}, persistent {expected[2]}"
            in res.text.splitlines())
    assert json.loads((tmp_path / "out" / "block_sched.json").read_text())["trace_dirs"] == expected
