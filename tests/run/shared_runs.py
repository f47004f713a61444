"""What the tests reading the shared runs of tests/run/conftest.py use to make and check runs of their own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.reliability.faultkit import cli_env

#: What a failed run must leave byte-identical: the good run's notebook, summary and verdict.
GOOD_SET = ("summary.json", "summary.md", "verdict.json", "static.executed.ipynb")
#: The section the partial run below computes (the cheapest one: any section shows the merge).
PARTIAL_SECTION = "kernel_overhead"


def run_cli(out: Path, trace_root: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """``neutrino-ae -q run static --trace-root <trace_root> --output-dir <out> <args>``, from out's parent."""
    return subprocess.run([sys.executable, "-m", "neutrino_ae", "-q", "run", "static", "--trace-root", str(trace_root),
                           "--output-dir", str(out), *args], cwd=out.parent, env=cli_env(), capture_output=True,
                          text=True, timeout=timeout)


def static_in_process(monkeypatch, capsys, trace_root: Path, out: Path, sections: str,
                      report_only: bool = False) -> tuple[int, str]:
    """What ``neutrino-ae run static -p bundle auto -p trace_root <trace_root> --sections <sections>
    --output-dir <out>`` computes and prints, in this process: the notebook's own calls
    (``StaticNotebook(...)`` then ``nb.summary()``, which runs every selected section, ``-p workers 0``),
    then the command line's verdict table and exit status (``cli._verdict_status``). For the variations
    of a behaviour whose path through the public command another test runs once. Its figures are left
    blank (tests/undrawn_analysis.py: no caller reads one). Returns (exit status, what the verdict part
    printed)."""
    from undrawn_analysis import leave_figures_blank

    from neutrino_ae import cli
    from neutrino_ae.run import lock
    from neutrino_ae.run.notebook import StaticNotebook

    monkeypatch.setattr(sys, "dont_write_bytecode", sys.dont_write_bytecode)  # the facade sets it
    leave_figures_blank(monkeypatch)
    try:
        nb = StaticNotebook(bundle="auto", trace_root=str(trace_root), output_dir=str(out), sections=sections,
                            workers=0)
        nb.summary()
    finally:
        lock.release_output_lock(out)
    capsys.readouterr()
    code = cli._verdict_status(out, report_only, False)
    return code, capsys.readouterr().out
