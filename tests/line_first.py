"""What the line-first tests share (issue 24): run a per-figure script under ``-X importtime`` and say which
modules were imported before its first result line.

``-X importtime`` writes each import to stderr as it happens; the script flushes stdout with its lines, so
with both on one pipe the order shows which imports came before them. In the watched form the command runs
with a figure process (``NEUTRINO_AE_NO_FORK=0``), whose own imports would share that pipe and could split
a line in two; so there the command's own process notes which modules it holds when it first writes to
stdout (reported as ``import time:`` lines ahead of its output) and, at exit (a figure process ends without
running exit handlers), which of pandas/matplotlib it imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_WATCHED = """
import atexit, os, runpy, sys
held = []

class FirstWrite:
    def __init__(self, out):
        self.out = out
    def write(self, text):
        if text and not held and os.getpid() == PID:
            held.append(sorted(sys.modules))
        return self.out.write(text)
    def __getattr__(self, name):
        return getattr(self.out, name)

PID = os.getpid()
sys.stdout = FirstWrite(sys.stdout)

def report():
    for name in (held[0] if held else []):
        print("import time: watched | before the first line |", name, file=sys.stderr)
    print("command imported:", *sorted(m for m in ("pandas", "matplotlib") if m in sys.modules), file=sys.stderr)

atexit.register(report)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""

HEAVY = ("pandas", "matplotlib", "numba")


def imports(lines: Sequence[str]) -> set[str]:
    """The modules ``-X importtime`` reported in ``lines``."""
    return {ln.rsplit("|", 1)[-1].strip() for ln in lines if ln.startswith("import time:")}


def run_script(command: Sequence[str], watched: bool) -> list[str]:
    """stdout and stderr of ``python -X importtime <command>`` (a script and its arguments) run from the
    repository, as lines; the figures drawn in the command's process (``watched=False``) or by its figure
    process, with the ``command imported: ...`` line at exit (``watched=True``)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1",
           "NEUTRINO_AE_NO_FORK": "0" if watched else "1"}
    if watched:
        proc = subprocess.run([sys.executable, "-c", _WATCHED, *command], cwd=REPO, env=env, capture_output=True,
                              text=True)
        assert proc.returncode == 0, proc.stderr[-2000:]
        err = proc.stderr.splitlines()
        held = [ln for ln in err if ln.startswith("import time: watched")]
        return [*held, *proc.stdout.splitlines(), *(ln for ln in err if ln not in held)]
    proc = subprocess.run([sys.executable, "-X", "importtime", *command], cwd=REPO, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:]
    return proc.stdout.splitlines()


def split_at(lines: Sequence[str], expected: Sequence[str]) -> tuple[set[str], set[str]]:
    """The modules imported before the ``expected`` lines (which must appear together, in order) and after."""
    at = list(lines).index(expected[0])
    assert list(lines[at:at + len(expected)]) == list(expected)
    return imports(lines[:at]), imports(lines[at:])


def printed(lines: Sequence[str]) -> list[str]:
    """What the command printed (the import-time lines left out)."""
    return [ln for ln in lines if not ln.startswith("import time:")]


def assert_line_first(lines: Sequence[str], expected: Sequence[str], watched: bool, pandas_first: bool = False
                      ) -> None:
    """The ``expected`` lines come first, once, with numpy imported before them and none of :data:`HEAVY`;
    pandas after them (``pandas_first``: before them, as a section on the driver reads its frames with
    it); matplotlib after them in the command (``watched=False``) or never in it (the figure process drew
    the figures, ``watched=True``)."""
    before, after = split_at(lines, expected)
    assert "numpy" in before
    heavy = {m for m in HEAVY if not (pandas_first and m == "pandas")}
    # Watched, ``before`` is what the command's own process held at its first line (run_script).
    assert not {m for m in before if m.split(".")[0] in heavy}
    if pandas_first:
        assert "pandas" in before
    if watched:
        assert "command imported: pandas" in lines
    else:
        assert ("pandas" in before if pandas_first else "pandas" in after) and "matplotlib" in after
    assert printed(lines)[:len(expected)] == list(expected)
