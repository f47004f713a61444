"""Issue 23 item 1: with two collections in ``warp_sched/tail/`` the section reads the newer one (by the time in
its name, not by string order) and says which one it read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from undrawn_analysis import leave_figures_undrawn

from neutrino_ae.formats.records import WARP_SCHED
from neutrino_ae.formats.tracedir import TraceDir
from neutrino_ae.report.section import driver
from warp_sched import SECTION

JAN = "Jan_23_08_14_52_273310"  # the sample's tail collection (the artifact's name form)
AUG = "Aug_23_08_14_52_273310"  # same time of day, seven months later: "Aug" < "Jan" as strings


def _tail_share(res) -> dict[str, float]:
    return {r["key"]: r["value"] for r in res.data["fig13cd"]["summary"]}


def _bundle_with_august(tiny_bundle: Path, dest: Path, keep_january: bool = True) -> Path:
    """A copy of the sample bundle whose ``warp_sched/tail/`` also holds an August collection of the
    same kernel with every warp half as long."""
    from neutrino_ae.formats.bintrace_write import write_trace

    root = shutil.copytree(tiny_bundle, dest)
    tail = root / "warp_sched" / "tail"
    jan = tail / JAN
    assert jan.is_dir(), sorted(p.name for p in tail.iterdir())
    aug = shutil.copytree(jan, tail / AUG)
    for res in TraceDir(aug).results():
        trace = TraceDir(aug).open_result(res)
        rec = np.array(trace.records(0, WARP_SCHED))  # a copy: the memmap is read-only
        rec["elapse"] //= 2
        write_trace(res, trace.header, [("warp", rec)], layout=trace.layout)  # atomic: replaces the file
    if not keep_january:
        shutil.rmtree(jan)
    return root


def test_the_august_tail_collection_is_read_and_named(tiny_bundle, tmp_path, monkeypatch):
    both = _bundle_with_august(tiny_bundle, tmp_path / "both")
    alone = _bundle_with_august(tiny_bundle, tmp_path / "alone", keep_january=False)
    leave_figures_undrawn(monkeypatch)  # numbers, lines and results documents are read, not the figures
    jan_only = driver.analyze_paths(SECTION, [tiny_bundle], tmp_path / "out-jan")
    aug_only = driver.analyze_paths(SECTION, [alone], tmp_path / "out-aug")
    assert _tail_share(aug_only) != _tail_share(jan_only)  # the two collections really differ

    res = driver.analyze_paths(SECTION, [both], tmp_path / "out-both")
    assert _tail_share(res) == _tail_share(aug_only), "Fig. 13c/d read the January collection, not the newer August one"

    # ... and says which folder it read: results JSON, text, and the section's trace_dirs list
    rel = f"warp_sched/tail/{AUG}"
    assert res.data["fig13cd"]["trace_dir"] == rel
    assert res.data["fig13cd"]["read"] == f"{rel}/result/{TraceDir(both / rel).newest_result().name}"
    assert res.data["trace_dirs"] == ["warp_sched/exclusive_sched", "warp_sched/shared_sched", rel]
    assert (f"tail trace dir: {rel} (newest of 2 in warp_sched/tail, by the time in its name: "
            "neutrino_ae/formats/tracedir.py)") in res.text.splitlines()
    assert "exclusive trace dir: warp_sched/exclusive_sched" in res.text.splitlines()
    doc = json.loads((tmp_path / "out-both" / "warp_sched.json").read_text())
    assert doc["fig13cd"]["trace_dir"] == rel and doc["trace_dirs"][-1] == rel
    assert json.loads((tmp_path / "out-both" / "fig13cd.json").read_text())["trace_dir"] == rel
    # the generator's truth belongs to the January file it wrote, not to a collection put beside it
    assert jan_only.data["fig13cd"]["ground_truth"] and res.data["fig13cd"]["ground_truth"] is None
    assert "ground truth" not in res.text.split("tail:")[1]
    # one collection: no "newest of"
    assert f"tail trace dir: warp_sched/tail/{JAN}" in jan_only.text.splitlines()
