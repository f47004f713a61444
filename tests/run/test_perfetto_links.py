"""static.ipynb links the Perfetto timelines of the traces block_sched (Sec. 4.5) and warp_sched
(Fig. 13) read, beside their figures; the linked files are there and hold every block."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat

from neutrino_ae.report.section import registry

REPO = Path(__file__).resolve().parents[2]


def test_builder_puts_a_timeline_cell_after_each_timeline_section():
    nb = nbformat.read(REPO / "static.ipynb", as_version=4)
    ids = [c.id for c in nb.cells]
    for s in registry.sections():
        cid = s.name.replace("_", "-")
        if s.timelines:
            after = ids.index(f"{cid}-perfetto")
            assert ids.index(cid) < after and nb.cells[after].source.endswith(f'show_timelines(nb, "{s.name}")')
        else:
            assert f"{cid}-perfetto" not in ids
    assert {s.name for s in registry.sections() if s.timelines} == {"block_sched", "warp_sched"}


def test_executed_notebook_links_the_timelines(timeline_runs):
    out = timeline_runs.out
    assert timeline_runs.first.returncode == 0, timeline_runs.first.stderr[-3000:]
    nb = nbformat.read(timeline_runs.first_notebook, as_version=4)
    cells = {c.id: c for c in nb.cells}
    exported = []
    for name in ("block_sched", "warp_sched"):
        text = "".join(o.get("data", {}).get("text/markdown", "") for o in cells[f"{name.replace('_', '-')}-perfetto"]
                       .outputs)
        assert "**Timelines for Perfetto** (SYNTHETIC sample data)" in text and "ui.perfetto.dev" in text
        targets = re.findall(r"\]\(([^)]+\.json)\)", text)
        assert len(targets) == 3, text  # the three trace dirs each section reads
        for target in targets:
            path = out / target  # relative to the executed notebook, saved in the output folder
            doc = json.loads(path.read_text(encoding="utf-8"))
            other = doc["otherData"]
            assert other["synthetic"] is True and other["bundle_kind"] == "sample"
            cat = other["level"]
            slices = [e for e in doc["traceEvents"] if e.get("cat") == cat]
            assert len({e["args"]["block"] for e in slices}) == other["blocks"] > 0
            exported.append(target)
    assert any("block_sched" in p for p in exported) and any("exclusive_sched" in p for p in exported)
    # The second run (the same sections) reused the exports: the traces were unchanged.
    assert timeline_runs.second.returncode == 0, timeline_runs.second.stderr[-3000:]
    assert {p: (out / p).stat().st_mtime_ns for p in exported} == {p: timeline_runs.first_mtimes[p] for p in exported}
