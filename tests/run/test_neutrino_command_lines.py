"""Every ``neutrino`` command line the collectors build is one the real CLI accepts.

All six section collectors run against the fake CLI, which records each argv; each recorded argv
is then parsed with a parser made from the real ``neutrino/cli.py`` of the artifact branch (the
one dynamic.ipynb targets), and its ``-p`` must name one of that branch's built-in tools. The live
test in test_real_neutrino.py runs the real CLI itself on a subset of these lines.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import neutrino_source as ns
import pytest

from neutrino_ae.run import collect, registry

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
    ctx = collect.Context(log=lambda s: None, extra_args={
        "kernel_overhead": ["--only", "norm,attn,gemm"],
        "max_mem": ["--models", "llama1b-bs32"],
        "exposed_latency": ["--workloads", "attn,conv"],
    })
    for section in registry.names():
        collect.collect_section(section, tmp_path / "traces", ctx)
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
