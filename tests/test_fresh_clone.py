"""Every command the README documents works first time on a fresh clone, in any order (issue 48): each
target's first step runs on its own fresh copy of the checkout's tracked files (no .venv, traces/ or
results/), in a folder whose path has a space, and must not fail for want of a folder of its own.

The step is the target's first command that runs the project's Python, as ``make -n`` prints it, with this
test run's environment as the clone's ``.venv`` (a link to it: make cannot name a target whose path has a
space, so the Makefile's relative default is kept) and its install stamps taken as current (no pip). Too
slow here, said once: ``make report``'s render (its first step is ``make run``'s command, run below; the render is
tests/run/test_notebook_report.py's), ``make dynamic-emulated``'s build and run of the real Neutrino (this
checks its own folders are made before it; the run is tests/run/test_dynamic_ptx_emulated.py's), the
whole ``make bench`` (``--smoke`` on one case here), and ``make setup``'s pip installs."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)

pytestmark = [pytest.mark.process,
              pytest.mark.skipif(shutil.which("make") is None or shutil.which("git") is None, reason="no make or git"),
              pytest.mark.skipif(not (VENV / "bin" / "python").exists(), reason="not run from a virtual environment")]


@dataclasses.dataclass(frozen=True)
class Step:
    extra: tuple[str, ...] = ()  # appended to the command: a quicker run of the same code
    make_vars: tuple[tuple[str, str], ...] = ()  # "{empty}": an empty folder
    codes: tuple[int, ...] = (0,)
    says: str = ""  # a line the output must hold
    makes: tuple[str, ...] = ()  # folders the step must leave in the clone
    then: tuple[str, ...] = ()  # a second command, with the environment's Python
    same_as: str = ""  # its first step is this target's (checked equal, not run again)


#: One entry per target the README documents (a new one fails test_every_documented_target_has_a_step until
#: it has its entry here, e.g. ``"lab": Step(extra=("--version",))`` for a Jupyter server's command).
STEPS = {
    "run": Step(makes=("traces/sample", "results/static")),
    "report": Step(same_as="run"),
    # ruff, then the recorder's own test from here: it used to depend on where the checkout lives
    "test": Step(then=("-m", "pytest", "-q", "-n", "0", "-p", "no:randomly", "-p", "no:cacheprovider",
                       "tests/tools/test_test_cpu.py")),
    "check": Step(),
    "bench": Step(extra=("--smoke", "--repeat", "1", "--only", "eventlog"), codes=(0, 1), says="1 case(s), 0 failed"),
    # no Neutrino sources here: it stops in one line, after making its default folders' parents
    # the server's own command line, asked only for its version (a server would not return)
    "lab": Step(extra=("--version",), says="4."),
    "dynamic-emulated": Step(make_vars=(("NEUTRINO_SRC", "{empty}"),), codes=(2,),
                             says="error: cannot build the real Neutrino here", makes=("traces", "results")),
}
#: Documented targets not run here, and why.
NOT_RUN = {"setup": "its only commands are pip installs"}


def documented_targets() -> list[str]:
    """The ``make X`` commands the README shows (in code, or a code block's line)."""
    return sorted(set(re.findall(r"(?:^|`)make ([a-z][\w-]*)", (REPO / "README.md").read_text(), re.M)))


def _stamps() -> list[str]:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    return [arg for name in ["", *(f"-{e}" for e in extras)] for arg in ("-o", f".venv/.installed{name}")]


def fresh_clone(where: Path) -> Path:
    """The checkout's tracked files as they are now (uncommitted edits too), with new mtimes, as a clone."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    for name in filter(None, listed.stdout.decode().split("\0")):
        src, dst = REPO / name, where / name
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dst, follow_symlinks=False)
    return where


def _env() -> dict[str, str]:
    """This environment without pytest-xdist's worker variables or an outer make's flags (``make -s test``)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("PYTEST_") and k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


def first_step(clone: Path, target: str, make_vars: dict[str, str]) -> str:
    """The first command of ``make target`` that runs the environment's Python."""
    argv = ["make", "-n", "-C", str(clone), *_stamps(), *(f"{k}={v}" for k, v in make_vars.items()),
            target]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=_env(), check=False)
    assert proc.returncode == 0, proc.stderr
    return next(line for line in proc.stdout.splitlines() if ".venv/bin/python" in line)


def test_every_documented_target_has_a_step():
    targets = documented_targets()
    assert {"run", "test", "check", "report", "dynamic-emulated", "bench"} <= set(targets), targets
    assert [t for t in targets if t not in STEPS and t not in NOT_RUN] == []


@pytest.mark.parametrize("target", sorted(STEPS))
def test_the_first_step_needs_no_folder_it_does_not_make(target, tmp_path):
    step = STEPS[target]
    clone = fresh_clone(tmp_path / "fresh clone")
    (clone / ".venv").symlink_to(VENV, target_is_directory=True)
    assert not (clone / "traces").exists() and not (clone / "results").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    make_vars = {k: v.format(empty=empty) for k, v in step.make_vars}
    line = first_step(clone, target, make_vars)
    if step.same_as:
        assert line.endswith(first_step(clone, step.same_as, make_vars)), line
        return
    env = _env()
    proc = subprocess.run(["bash", "-c", " ".join([line, *step.extra])], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode in step.codes, out[-3000:]
    assert "does not exist" not in out and "Traceback" not in out, out[-3000:]
    assert step.says in out, out[-3000:]
    for folder in step.makes:
        assert (clone / folder).is_dir(), folder
    if step.then:
        proc = subprocess.run([str(VENV / "bin" / "python"), *step.then], cwd=clone, env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
