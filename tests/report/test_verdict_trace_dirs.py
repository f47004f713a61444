"""The verdict names the trace directories each section read (issue 23 item 1): verdict.json ``trace_dirs``, a
list under the notebook's verdict heading (folded), and lines after the CLI's verdict table."""

from __future__ import annotations

import json

from neutrino_ae import cli
from neutrino_ae.report.claims import trace_dirs_lines
from neutrino_ae.report.results import SectionResult
from neutrino_ae.run import verdict

TAIL = "warp_sched/tail/Aug_23_08_14_52_273310"


def test_verdict_json_table_and_cli_name_the_trace_dirs(tmp_path, capsys, monkeypatch):
    shown = []
    monkeypatch.setattr(verdict, "html_output", lambda html, plain: shown.append(html))
    results = {
        "warp_sched": SectionResult("warp_sched", {"trace_dirs": ["warp_sched/exclusive_sched", TAIL]}),
        "block_sched": SectionResult("block_sched", {"trace_dirs": ["block_sched/Jan_23_06_27_37_268336"]}),
        "max_mem": SectionResult("max_mem", {}),  # a section that does not say: left out
    }
    read = verdict.trace_dirs_read(results)
    assert read == {"warp_sched": ["warp_sched/exclusive_sched", TAIL],
                    "block_sched": ["block_sched/Jan_23_06_27_37_268336"]}
    doc = verdict.write_verdict(tmp_path, [], "sample", ["warp_sched", "max_mem"], {}, trace_dirs=read)
    assert doc["trace_dirs"] == {"warp_sched": ["warp_sched/exclusive_sched", TAIL]}  # selected sections only
    assert json.loads((tmp_path / "verdict.json").read_text())["trace_dirs"] == doc["trace_dirs"]
    assert f"<li>warp_sched: <code>warp_sched/exclusive_sched</code>, <code>{TAIL}</code></li>" in shown[-1]
    assert "<summary>Trace directories read (2; the newest collection by the time in its name)</summary>" in shown[-1]

    assert cli._verdict_status(tmp_path, report_only=True, allow_skip=True) == 0
    out = capsys.readouterr().out
    assert f"trace dirs read:\n  warp_sched: warp_sched/exclusive_sched, {TAIL}\n" in out


def test_no_trace_dirs_no_lines():
    assert trace_dirs_lines({"dmat": []}) == []
