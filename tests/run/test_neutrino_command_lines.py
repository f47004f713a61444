"""Every ``neutrino`` command line the collectors build is one the real CLI accepts.

All six section collectors run against the fake CLI, which records each argv; each recorded argv
is then parsed with a parser made from the real ``neutrino/cli.py`` of the artifact branch (the
one dynamic.ipynb targets), and its ``-p`` must name one of that branch's built-in tools. The live
test in test_real_neutrino.py runs the real CLI itself on a subset of these lines.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import neutrino_source as ns
import pytest

from neutrino_ae.report.section import registry
from neutrino_ae.run import runner
from neutrino_ae.workloads.neutrino import CollectContext

FAKE = Path(__file__).resolve().parents[1] / "fake_neutrino"
pytestmark = pytest.mark.skipif(ns.missing_reason() is not None, reason=ns.missing_reason() or "")


def test_the_parser_made_from_the_real_cli_rejects_what_the_real_cli_rejects() -> None:
    assert ns.parse_cli("artifact", ["-p", "dmat", "-k", "attn", "python", "w.py"]).kernel == "attn"
    for bad in (["-t", "dmat", "python", "w.py"], ["python", "w.py"], ["--tool", "dmat", "python", "w.py"]):
        with pytest.raises(ValueError, match="rejected by the artifact CLI"):
            ns.parse_cli("artifact", bad)
    assert {"block_sched", "dmat", "gmem_bytes", "tensorop_count"} <= ns.builtin_tools("artifact")
    assert "tensorop" in ns.builtin_tools("main") and "--callback" in ns.cli_parser("main").format_usage()


def test_every_collector_command_line_parses_with_the_real_cli(tmp_path: Path, monkeypatch) -> None:
    bench = tmp_path / "cutlass"
    bench.mkdir()
    for name in ("gemm", "gemm-streamk", "conv"):  # stand-ins so the CUTLASS rows are not skipped
        exe = bench / name
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(0o755)
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("CUTLASS_BENCH_DIR", str(bench))
    monkeypatch.setenv("FAKE_NEUTRINO_LOG", str(log))
    monkeypatch.setenv("PATH", os.pathsep.join([str(FAKE), str(Path(sys.executable).parent), os.environ["PATH"]]))
    # One command of each shape per section: every op family and every probe, not every model.
    ctx = CollectContext(log=lambda s: None, extra_args={
        "kernel_overhead": ["--only", "norm,attn,gemm"],
        "max_mem": ["--models", "llama1b-bs32"],
        "exposed_latency": ["--workloads", "attn,conv"],
    })
    for section in (s.name for s in registry.sections() if s.collect):  # a collector is optional
        runner.collect_section(section, tmp_path / "traces", ctx)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    probes = set()
    for argv in calls:
        args = ns.parse_cli("artifact", argv)
        assert args.probe in ns.builtin_tools("artifact"), argv
        assert args.command, argv
        probes.add(args.probe)
    assert probes == {"block_sched", "dmat", "gmem_bytes", "tensorop_count"}
    # Fig. 12 measures a saving run and a --benchmark run of each cell; max_mem uses --memusage.
    assert any("--benchmark" in c for c in calls) and any("--memusage" in c for c in calls)
    el = [c for c in calls if "-k" in c and c[c.index("-k") + 1] == "conv"]
    assert sum("--benchmark" in c for c in el) == sum("--benchmark" not in c for c in el) > 0


REPO = Path(__file__).resolve().parents[2]
_SPAN = re.compile(r"`{1,2}neutrino(\s[^`]*)?`{1,2}")


def _documented_lines() -> list[tuple[str, list[str]]]:
    """Every ``neutrino ...`` span in backticks in the repo's own code, docs and notebooks (the
    section folders, the package, tools, docs, the top-level notebooks and README; caches and test
    data left out), as (file, tokens after ``neutrino``)."""
    files = [p for p in REPO.glob("*") if p.suffix in (".md", ".ipynb")]
    for root in ("neutrino_ae", "tools", "docs", "tests", *registry.names()):
        files += [p for p in (REPO / root).rglob("*") if p.suffix in (".py", ".md")
                  and not {"data", "cache", "__pycache__"} & set(p.relative_to(REPO).parts)]
    out = []
    for p in sorted(set(files)):
        text = p.read_text(errors="replace")
        if p.suffix == ".ipynb":
            text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"])
        out += [(str(p.relative_to(REPO)), (m.group(1) or "").split()) for m in _SPAN.finditer(text)]
    return out


def _check_options(tokens: list[str], branch: str = "artifact") -> None:
    """The leading options of a documented line are the real CLI's, and ``-p`` names a built-in tool
    (placeholders such as ``<probe>`` and ``...`` stand for anything)."""
    actions = ns.cli_parser(branch)._option_string_actions
    i = 0
    while i < len(tokens) and tokens[i].startswith("-"):
        opt = tokens[i]
        if opt not in actions:
            raise ValueError(f"neutrino {opt}: not an option of the {branch} CLI")
        takes_value = actions[opt].nargs != 0
        if takes_value and i + 1 < len(tokens) and opt in ("-p", "--probe"):
            tool = tokens[i + 1]
            if not tool.startswith("<") and tool not in ns.builtin_tools(branch):
                raise ValueError(f"neutrino -p {tool}: not a built-in tool of the {branch} CLI")
        i += 2 if takes_value else 1


def test_every_documented_neutrino_line_uses_the_real_clis_options() -> None:
    lines = _documented_lines()
    checked = [(f, t) for f, t in lines if t[:1] and t[0].startswith("-")]
    assert len(checked) >= 15, checked  # notebook prose, section docstrings, tools
    for f, tokens in checked:
        try:
            _check_options(tokens)
        except ValueError as exc:
            raise AssertionError(f"{f}: {exc}") from None
    for bad in (["-t", "dmat"], ["-p", "tensorop"], ["--tool", "dmat"]):  # the check itself bites
        with pytest.raises(ValueError):
            _check_options(bad)
