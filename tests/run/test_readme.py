"""The README's facts: its per-figure commands run as written (on the sample bundle `make run`
makes), its default folders are the code's, its links resolve, and what it tells to write is
git-ignored."""

from __future__ import annotations

import glob
import importlib.util
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from script_here import script_here

from neutrino_ae.cli import build_parser
from neutrino_ae.run.notebook import STATIC_RESULTS, default_trace_root

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _per_figure_commands() -> list[list[str]]:
    block = README.split("## Per-figure scripts", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = []
    for line in block.strip().splitlines():
        words = shlex.split(line.split("  #", 1)[0])
        assert words[0] == ".venv/bin/python", line
        commands.append(words[1:])
    return commands


def test_the_per_figure_commands_run_as_written(tiny_bundle, tmp_path, monkeypatch):
    """Each README command, from a folder where `make run` left the sample bundle in traces/sample/."""
    commands = _per_figure_commands()
    assert {c[0].split("/")[0] for c in commands} >= {"block_sched", "dmat", "kernel_overhead", "max_mem",
                                                       "exposed_latency", "warp_sched"}
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "sample").symlink_to(tiny_bundle, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    for script, *args in commands:
        argv = []
        for arg in args:  # the shell's globbing
            matches = sorted(glob.glob(arg)) if any(ch in arg for ch in "*?[") else [arg]
            assert matches, f"{arg} matches nothing in the sample bundle"
            argv += matches
        proc = script_here(REPO / script, argv)
        assert proc.returncode == 0, (script, args, proc.stderr)
        assert "Traceback" not in proc.stderr
    # block_sched prints the artifact's kick-the-tires line
    assert re.search(r"No\.block:\d+ Running:\d+ Scheduling:\d+\(cycle\)", README)


def test_the_defaults_it_names_are_the_codes():
    assert "`traces/sample/`" in README and "`traces/paper/`" in README and "`results/static/`" in README
    assert default_trace_root("sample") == "traces/sample/" and default_trace_root("paper") == "traces/paper/"
    assert STATIC_RESULTS == "results/static/" and "results/cli/<section>/" in README
    parser = build_parser()
    assert parser.parse_args(["fetch"]).trace_root == "traces/paper"
    # The Makefile's run target is the README's `make run`: the sample bundle, offline.
    assert "run static -p bundle sample" in (REPO / "Makefile").read_text()


def test_its_relative_links_resolve():
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if "://" not in target:
            assert (REPO / target).exists(), f"README links to {target}, which is not in the repository"
    for path in re.findall(r"`((?:docs|tools|benchmarks)/[\w./-]+)`", README):
        assert (REPO / path).exists(), path
    assert "paper-map" not in README


@pytest.mark.parametrize("path", ["traces/sample/x", "traces/paper/x", "results/static/x", "results/cli/x",
                                  "out/dmat/fig1.png", "third_party/neutrino"])
def test_what_it_writes_is_ignored_by_git(path):
    proc = subprocess.run(["git", "check-ignore", "-q", path], cwd=REPO, capture_output=True, check=False)
    if proc.returncode == 128:
        pytest.skip("not a git checkout")
    assert proc.returncode == 0, f"{path} is not git-ignored"


def test_the_two_commands_come_first_and_make_setup_is_named():
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert headings[0] == "Two commands", headings
    two = README.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    assert "make run" in two and "make test" in two and "`make setup`" in two
    setup = re.search(r"^setup: (.+)$", (REPO / "Makefile").read_text(), re.M)
    assert setup, "the Makefile has a setup target"


def test_the_timings_are_generated_by_the_tool_not_typed():
    spec = importlib.util.spec_from_file_location("readme_timings", REPO / "tools" / "readme_timings.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    found, record = tool.current(README)
    assert record is not None, "no measured record in the README's timings block: run tools/readme_timings.py"
    assert tool.check(README) == [], "the timings block differs from what its record renders to"
    for part in ("run", "test"):
        assert record[part]["machine"]["date"] and record[part]["machine"]["cores"] >= 1
    assert record["run"]["cold_s"] > 0 and record["test"]["passed"] > 0
    # What it measured is what the Makefile runs.
    makefile = (REPO / "Makefile").read_text()
    assert " ".join(tool.RUN[1:]).replace("-q ", "") in makefile.replace("$(PY) -m ", "")
    assert " ".join(tool.TEST[1:]) in makefile
    # No other typed timing of the two commands anywhere in the README.
    outside = README.replace(found, "")
    assert not re.search(r"`make (run|test)` takes", outside)
    # A hand edit of the block is caught.
    edited = README.replace(tool.render(record), tool.render(record).replace("make run", "make  run"))
    assert tool.check(edited) != []


def test_make_report_and_what_each_target_installs_are_documented():
    """Issue 37 item 8: `make report` was not in the README, which said `make setup` installs `.[test]`."""
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^report: ", makefile, re.M) and "```bash\nmake report" in README
    assert "static.failed.ipynb" in README  # what `make report` refuses
    assert 'pip install -e "."' in README and '-e "."' in makefile
    assert 'pip install -e ".[test]"`)' not in README
