"""Fig. 11 beside the artifact's own loop: the ``BASE = "max_mem"`` cell of its ``static.ipynb``.

The cell is read from the extracted tarball at test time (found by what it says, not by its index)
and run as it is, as ``python -c`` runs it (in one kept interpreter, script_server.py; two tests check
it against a fresh one), in a temporary folder holding a ``max_mem/`` tree that this
file writes with its own small writer (plain text, not the package's writers): several models,
probes and sub-modules; stdout.log files with zero, one or several ``max memory:`` lines among
other text; several trace folders per sub-module, each event.log with several launches and their
``[exec] probe-mem <n> (bytes)`` lines. It prints ``<model> <probe> <original> <max_mem>`` per
model x probe; our numbers (``max_mem.inputs``, ``max_mem.analysis``) must be the same, except where
docs/DESIGN.md ("Deviations from the artifact's scripts") says why not:

* no value at all: the artifact prints 0, we report none (``-``) and name the file that lacks it;
* where the artifact's loop raises (a missing stdout.log or event.log, a stray file beside the
  sub-module folders, a ``max memory:`` value that is not a bare integer, an undecodable byte),
  ours gives a result and names the file, or one ``error:`` line;
* a stdout.log or event.log whose last line has no newline (the run was killed while writing):
  the artifact reads the cut number, we leave it out and say so;
* folders whose names start with ``.`` or ``_`` (``.ipynb_checkpoints``) are not sub-modules or
  trace folders to us; an ``[exec] probe-mem`` line counts when it belongs to a launch (the hook
  prints one per launch), not wherever it stands.

Several ``max memory:`` lines in one stdout.log: both take the first (issue 20, item 4), and our
output lists the files that hold several.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from undrawn_analysis import leave_figures_undrawn

from max_mem.analysis import Entry
from max_mem.inputs import discover, measure_entry
from neutrino_ae.report.command.script import run_main
from neutrino_ae.report.section import driver, registry

from .script_server import ScriptServer

SECTION = registry.get("max_mem")
cli_main = partial(driver.main, SECTION)


def analyze(root, out):
    """The command line's analysis of one max_mem folder, figures drawn in this process."""
    return driver.analyze_paths(SECTION, [root], out)

# ---------------------------------------------------------------------------------------------
# the artifact's cell, run as it is


@pytest.fixture(scope="module")
def fig11_cell(artifact_tree: Path) -> str:
    nb = json.loads((artifact_tree / "artifact" / "static.ipynb").read_text(encoding="utf-8"))
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    found = [s for s in cells if 'BASE = "max_mem"' in s and "max memory:" in s and "[exec] probe-mem" in s]
    assert len(found) == 1, f"{len(found)} cells of static.ipynb look like the Fig. 11 loop"
    return found[0]


# PYTHONUTF8: its open(..., "r") decodes with the locale's encoding; UTF-8 as on the paper's machines.
ARTIFACT_ENV = {"PYTHONUTF8": "1"}


def run_artifact_fresh(cell: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -c <cell>`` in ``cwd``: a fresh interpreter."""
    return subprocess.run([sys.executable, "-c", cell], cwd=cwd, env={**os.environ, **ARTIFACT_ENV},
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def cell_python():
    """One interpreter for this module's many runs of the cell (script_server.py): a case pays for the
    loop, not for a Python start."""
    server = ScriptServer(ARTIFACT_ENV)
    yield server
    server.close()


@pytest.fixture(scope="module")
def run_artifact(cell_python: ScriptServer):
    """``run_artifact(cell, cwd)``: the cell as ``python -c <cell>`` runs it in ``cwd``, in the kept interpreter."""
    return lambda cell, cwd: cell_python.run(code=cell, cwd=cwd, timeout=60)


def artifact_numbers(proc: subprocess.CompletedProcess) -> dict[tuple[str, str], tuple[int, int]]:
    """``(model, probe) -> (original, max_mem)`` from the cell's ``print(model, test, original, max_mem)``."""
    out = {}
    for line in proc.stdout.splitlines():
        model, probe, original, max_mem = line.split(" ")
        out[(model, probe)] = (int(original), int(max_mem))
    return out


def ours(root: Path) -> dict[tuple[str, str], Entry]:
    runs, _ = discover(root)
    return {(m, p): measure_entry(m, p, d) for m, p, d in runs}


# ---------------------------------------------------------------------------------------------
# our own writer: a tree is {model: {probe: {sub: (stdout text | None, {trace: event.log text | None})}}}


def event_log_text(probe_mems: list[int], pid: int = 4242) -> str:
    """An event.log as the artifact's hook prints it under ``--memusage`` (neutrino/src/cuda.c)."""
    lines = [f"[pid] {pid}", "[cmd] 22 python compiled/sub.py", "[mem] cuMemAlloc_v2 0 dptr 7f5600000000 bytesize 4096"]
    for i, mem in enumerate(probe_mems):
        lines += [f"[exec] {1_700_000_000_000_000_000 + 1000 * i} param 7f5600000000 7f5600001000 ",
                  "[exec] grid 16 1 1 block 128 1 1 shared 0",
                  "[exec] grid 16 warp  4 probe 16 total 1024",
                  f"[exec] probe-mem {mem} (bytes)"]
    return "\n".join(lines) + "\n"


def write_tree(root: Path, tree: dict) -> None:
    for model, probes in tree.items():
        for probe, subs in probes.items():
            (root / model / probe).mkdir(parents=True)
            for sub, (stdout, traces) in subs.items():
                d = root / model / probe / sub
                d.mkdir()
                if stdout is not None:
                    (d / "stdout.log").write_bytes(stdout.encode("utf-8") if isinstance(stdout, str) else stdout)
                for trace, log in traces.items():
                    (d / trace).mkdir()
                    if log is not None:
                        (d / trace / "event.log").write_text(log, encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# generated trees

NAME = st.builds(str.__add__, st.sampled_from("abcdefgh"), st.text("abc019-", max_size=6))
BYTES = st.integers(0, 2**40)
# Text a workload may print around its "max memory:" line: any characters but a newline, including
# decoys that both readings must skip (indented, other case, no colon).
OTHER_LINE = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_characters="\n\r"), max_size=24)
    .filter(lambda s: not s.startswith("max memory:")),
    st.sampled_from(["  max memory: 99999999999", "#max memory: 1", "max memory  5", "Max memory: 7",
                     "max_memory: 3", "step 3 loss 0.25", "[warn] callback dmat_callback.py not found"]),
)
MEM_LINE = st.builds(lambda fmt, n: fmt.format(n), st.sampled_from(["max memory: {}", "max memory:  {}",
                                                                    "max memory: {} ", "max memory: {}\t"]), BYTES)
STDOUT = st.lists(st.one_of(OTHER_LINE, MEM_LINE, MEM_LINE), max_size=6).map(lambda ls: "".join(x + "\n" for x in ls))
TRACES = st.dictionaries(st.integers(0, 99999).map(lambda n: f"Nov23_120000_{n}"),
                         st.lists(BYTES, max_size=4).map(event_log_text), min_size=1, max_size=3)
SUBS = st.dictionaries(NAME, st.tuples(STDOUT, TRACES), min_size=1, max_size=3)
TREE = st.dictionaries(NAME, st.dictionaries(NAME, SUBS, min_size=1, max_size=3), min_size=1, max_size=3)

# What makes the artifact's loop raise (each applied to the n-th sub-module / trace folder, n drawn);
# about half the trees are left whole, so that both loops finish and their numbers are compared.
DAMAGE = st.one_of(st.just([]), st.lists(
    st.tuples(st.sampled_from(["no stdout.log", "no event.log", "stray file", "not an integer", "undecodable"]),
              st.integers(0, 50)), min_size=1, max_size=2))


def _damage(tree: dict, damage: list[tuple[str, int]]) -> dict:
    subs = [key for key, _ in _subs(tree)]
    for kind, n in damage:
        m, p, s = subs[n % len(subs)]
        stdout, traces = tree[m][p][s]
        if kind == "no stdout.log":
            tree[m][p][s] = (None, traces)
        elif kind == "no event.log":
            tree[m][p][s] = (stdout, {**traces, sorted(traces)[n % len(traces)]: None})
        elif kind == "not an integer":   # first, so the artifact reads it (and raises) before any other
            tree[m][p][s] = ((None if stdout is None else b"max memory: 12 MiB\n" + _bytes(stdout)), traces)
        elif kind == "undecodable":
            tree[m][p][s] = ((None if stdout is None else b"\xff\xfe step\n" + _bytes(stdout)), traces)
    return tree


def _subs(tree: dict) -> list[tuple[tuple[str, str, str], tuple]]:
    return [((m, p, s), v) for m, ps in tree.items() for p, ss in ps.items() for s, v in ss.items()]


def _bytes(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=TREE, damage=DAMAGE)
def test_fig11_numbers_equal_the_artifacts_loop(fig11_cell, run_artifact, tree, damage):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "max_mem"
        tree = _damage(tree, damage)
        write_tree(root, tree)
        if any(kind == "stray file" for kind, _ in damage):
            m = sorted(tree)[0]
            (root / m / "notes.txt").write_text("a file beside the probe folders\n")
        proc = run_artifact(fig11_cell, Path(tmp))
        entries = ours(root)   # never raises on these trees

        assert set(entries) == {(m, p) for m, ps in tree.items() for p in ps}
        # Every damaged file is named among our problems, whether or not the artifact's loop got to it.
        problems = {p for e in entries.values() for p in e.problems}
        for (m, p, s), (stdout, traces) in _subs(tree):
            d = root / m / p / s
            if stdout is None:
                assert f"{d}/stdout.log: missing, workload memory of this sub-module unknown" in problems
            elif _bytes(stdout).startswith(b"max memory: 12 MiB"):
                assert f"{d}/stdout.log: line 1: 'max memory: 12 MiB' is not a byte count" in problems
            for t, log in traces.items():
                if log is None:
                    assert f"{d}/{t}/event.log: missing" in problems
        event("the artifact's loop raised" if proc.returncode else "compared")
        if proc.returncode != 0:
            # The artifact's loop stopped with a traceback; ours measured every model x probe.
            assert "Traceback" in proc.stderr and damage, proc.stderr
            return
        assert not any(kind in ("no stdout.log", "no event.log", "stray file") for kind, _ in damage)
        art = artifact_numbers(proc)
        assert set(art) == set(entries)
        for key, e in entries.items():
            original, max_mem = art[key]
            # The artifact prints 0 where no line gave a value; we report none and say which file lacks it.
            assert (e.workload_max if e.workload_max is not None else 0) == original, key
            assert (e.probe_mem_max if e.probe_mem_max is not None else 0) == max_mem, key
            if e.workload_max is None:
                assert any("no 'max memory: <bytes>' line" in p for p in e.problems)
            if e.probe_mem_max is None:
                assert any("no '[exec] probe-mem' line" in p for p in e.problems)


# ---------------------------------------------------------------------------------------------
# the cases one by one


def _one_sub(tmp_path: Path, stdout: str | bytes | None, traces: dict) -> Path:
    root = tmp_path / "max_mem"
    write_tree(root, {"llama1b-bs32": {"dmat": {"layer": (stdout, traces)}}})
    return root


def test_several_max_memory_lines_the_first_is_used_as_in_the_artifact(fig11_cell, run_artifact, tmp_path):
    """Issue 20 item 4: the artifact's loop breaks after the first ``max memory:`` line of a stdout.log."""
    root = _one_sub(tmp_path, "warmup\nmax memory: 1000\nstep\nmax memory: 5000\n", {"Nov23_1": event_log_text([7])})
    proc = run_artifact(fig11_cell, tmp_path)
    assert artifact_numbers(proc) == {("llama1b-bs32", "dmat"): (1000, 7)}
    res = analyze(root, tmp_path / "out")
    (entry,) = res.data["entries"]
    assert entry["workload_max"] == 1000
    # said in the output, not only in a docstring: the results JSON, the text and the table's note
    assert "first" in res.data["workload_memory_rule"]
    assert res.data["workload_memory_notes"] == [
        f"{root}/llama1b-bs32/dmat/layer/stdout.log: 2 'max memory:' lines, the first (1000) is used; "
        "later: 5000"]
    assert "the first 'max memory:' line of each stdout.log" in res.text
    assert "2 'max memory:' lines, the first (1000) is used" in res.text
    assert "the first 'max memory:' line" in (tmp_path / "out" / "max_mem.md").read_text()


@pytest.mark.parametrize("what, stdout, traces, problem", [
    ("no stdout.log", None, {"Nov23_1": event_log_text([7])}, "stdout.log: missing"),
    ("no event.log", "max memory: 10\n", {"Nov23_1": None}, "event.log: missing"),
    ("value with a unit", "max memory: 12 MiB\n", {"Nov23_1": event_log_text([7])},
     "'max memory: 12 MiB' is not a byte count"),
    ("not a number", "max memory: n/a\n", {"Nov23_1": event_log_text([7])}, "'max memory: n/a' is not a byte count"),
    ("undecodable", b"\xff\nmax memory: 10\n", {"Nov23_1": event_log_text([7])}, None),
])
def test_where_the_artifact_raises_ours_reports(fig11_cell, run_artifact, tmp_path, capsys, what, stdout, traces,
                                                problem, monkeypatch):
    leave_figures_undrawn(monkeypatch)  # what the command prints is read, not its figure
    root = _one_sub(tmp_path, stdout, traces)
    proc = run_artifact(fig11_cell, tmp_path)
    assert proc.returncode != 0 and "Traceback" in proc.stderr, what
    assert run_main(cli_main, [str(root), "--out", str(tmp_path / "out")]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and err == ""
    if problem:
        assert problem in out
    else:
        assert "llama1b-bs32" in out


def test_a_stray_file_makes_the_artifact_raise_and_ours_ignores_it(fig11_cell, run_artifact, tmp_path, capsys):
    root = _one_sub(tmp_path, "max memory: 10\n", {"Nov23_1": event_log_text([7])})
    (root / "llama1b-bs32" / "dmat" / "README").write_text("notes\n")
    proc = run_artifact(fig11_cell, tmp_path)
    assert proc.returncode != 0 and "NotADirectoryError" in proc.stderr
    (e,) = ours(root).values()
    assert (e.workload_max, e.probe_mem_max, e.problems) == (10, 7, [])


def test_no_max_mem_folder_one_error_line(fig11_cell, run_artifact, tmp_path, capsys):
    proc = run_artifact(fig11_cell, tmp_path)
    assert proc.returncode != 0 and "FileNotFoundError" in proc.stderr
    assert run_main(cli_main, [str(tmp_path / "max_mem"), "--out", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"error: {tmp_path / 'max_mem'}: no such folder (expected max_mem/<model>/<probe>/<sub>/)\n"


def test_no_values_the_artifact_prints_zero_ours_none_and_why(fig11_cell, run_artifact, tmp_path):
    root = _one_sub(tmp_path, "compiled\n", {"Nov23_1": event_log_text([])})
    proc = run_artifact(fig11_cell, tmp_path)
    assert artifact_numbers(proc) == {("llama1b-bs32", "dmat"): (0, 0)}
    (e,) = ours(root).values()
    assert e.workload_max is None and e.probe_mem_max is None
    assert e.problems == [f"{root}/llama1b-bs32/dmat/layer/stdout.log: no 'max memory: <bytes>' line",
                          f"{root}/llama1b-bs32/dmat: no '[exec] probe-mem' line in any event.log"]


def test_cut_last_lines_the_artifact_reads_the_cut_number_ours_leaves_it_out(fig11_cell, run_artifact, tmp_path):
    log = event_log_text([100, 999999])
    root = _one_sub(tmp_path, "step\nmax memory: 23", {"Nov23_1": log[: log.rindex("probe-mem") + 13]})
    proc = run_artifact(fig11_cell, tmp_path)
    assert artifact_numbers(proc) == {("llama1b-bs32", "dmat"): (23, 999)}   # both numbers cut short
    # the kept interpreter (cell_python) prints what a fresh ``python -c`` prints
    fresh = run_artifact_fresh(fig11_cell, tmp_path)
    assert (proc.returncode, proc.stdout) == (fresh.returncode, fresh.stdout)
    (e,) = ours(root).values()
    assert e.workload_max is None and e.probe_mem_max == 100
    assert any("has no newline (output cut short); excluded" in p for p in e.problems)
    assert any("ends mid-line (run killed?); launch 1 left out" in p for p in e.problems)


def test_our_cli_on_a_generated_tree_prints_no_traceback(fig11_cell, run_artifact, tmp_path):
    """The whole command line (a fresh interpreter) on a damaged tree: a table and the named problems."""
    root = _one_sub(tmp_path, None, {"Nov23_1": None})
    proc = subprocess.run([sys.executable, "max_mem/max_mem.py", str(root), "--out", str(tmp_path / "out")],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert "stdout.log: missing" in proc.stdout and "event.log: missing" in proc.stdout
    kept, fresh = run_artifact(fig11_cell, tmp_path), run_artifact_fresh(fig11_cell, tmp_path)
    assert kept.returncode != 0 and fresh.returncode == kept.returncode
    # the kept interpreter (cell_python) raises what a fresh ``python -c`` raises
    assert kept.stderr.splitlines()[-1] == fresh.stderr.splitlines()[-1] and "Error" in kept.stderr.splitlines()[-1]


def test_a_hidden_folder_the_artifact_walks_into_ours_skips(fig11_cell, run_artifact, tmp_path):
    """Jupyter leaves ``.ipynb_checkpoints`` in folders it opened: the artifact takes it for a sub-module."""
    root = _one_sub(tmp_path, "max memory: 10\n", {"Nov23_1": event_log_text([7])})
    (root / "llama1b-bs32" / "dmat" / ".ipynb_checkpoints").mkdir()
    proc = run_artifact(fig11_cell, tmp_path)
    assert proc.returncode != 0 and "FileNotFoundError" in proc.stderr
    (e,) = ours(root).values()
    assert (e.subs, e.workload_max, e.probe_mem_max, e.problems) == (["layer"], 10, 7, [])


def test_a_probe_mem_line_outside_a_launch_the_artifact_counts_ours_not(fig11_cell, run_artifact, tmp_path):
    """cuda.c prints one ``[exec] probe-mem`` per launch, after its param and grid lines; we read it per
    launch (the event.log grouping rule, neutrino_ae/formats/eventlog/__init__.py), the artifact takes every
    line with the tag."""
    root = _one_sub(tmp_path, "max memory: 10\n", {"Nov23_1": "[exec] probe-mem 999 (bytes)\n" + event_log_text([7])})
    proc = run_artifact(fig11_cell, tmp_path)
    assert artifact_numbers(proc) == {("llama1b-bs32", "dmat"): (10, 999)}
    (e,) = ours(root).values()
    assert (e.probe_mem_max, e.launches) == (7, 1)
