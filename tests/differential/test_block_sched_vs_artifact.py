"""block_sched: our line against the artifact's own ``neutrino/tools/block_sched.py``, run on the same files.

Traces come from an independent writer (``tracegen``) over every shape hypothesis draws. Where the
artifact's script answers, ours prints the same line, byte for byte. Where it crashes (SM ids that are
not 0..n-1, blocks of fewer than 32 threads), ours gives a line or one clean error: the deviations
listed in docs/DESIGN.md ("Deviations from the artifact's scripts").
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from undrawn_analysis import leave_figures_undrawn

from block_sched.analysis import analyze_records
from block_sched.inputs import first_warp_records, resolve_traces
from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.report.section import driver, registry

from .script_server import ScriptServer
from .tracegen import BlockSchedCase, block_sched_cases, block_sched_trace

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def artifact_line(tree: Path, trace: Path) -> subprocess.CompletedProcess[str]:
    """The artifact's script as its notebook runs it: ``python block_sched.py <trace.bin>``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}  # its script imports TraceHeader from the neutrino package
    return subprocess.run([sys.executable, str(tree / "neutrino" / "tools" / "block_sched.py"), str(trace)],
                          capture_output=True, text=True, env=env, timeout=120)


def artifact_run(server: ScriptServer, tree: Path, trace: Path) -> subprocess.CompletedProcess[str]:
    """The same script on the same file, run in the session's one artifact interpreter (script_server.py):
    the many hypothesis cases pay for the script, not for a Python start and a numpy import each."""
    return server.run(tree / "neutrino" / "tools" / "block_sched.py", [str(trace)])


def our_line(trace: Path) -> str:
    ((path, bt),) = resolve_traces(trace)
    return analyze_records("t", path, first_warp_records(bt)).line


@given(case=block_sched_cases(artifact_readable=True))
@EXAMPLES
def test_same_line_as_the_artifact(case: BlockSchedCase, artifact_tree: Path, artifact_python: ScriptServer,
                                  tmp_path_factory) -> None:
    path = case.trace.write(tmp_path_factory.mktemp("bs") / "0.1.bin")
    art = artifact_run(artifact_python, artifact_tree, path)
    assert art.returncode == 0, art.stderr
    assert our_line(path) == art.stdout.strip()


@given(case=block_sched_cases(artifact_readable=False))
@EXAMPLES
def test_where_the_artifact_crashes_ours_answers_or_says_why(case: BlockSchedCase, artifact_tree: Path,
                                                           artifact_python: ScriptServer, tmp_path_factory) -> None:
    path = case.trace.write(tmp_path_factory.mktemp("bs") / "0.1.bin")
    art = artifact_run(artifact_python, artifact_tree, path)
    event(f"artifact {'answers' if art.returncode == 0 else 'crashes'}")
    if art.returncode == 0:
        assert our_line(path) == art.stdout.strip()
        return
    assert "Traceback" in art.stderr  # the artifact's crash, e.g. IndexError for SM ids past n-1
    try:
        line = our_line(path)
    except NeutrinoAEError as exc:
        event("ours: one-line error")
        # Only the documented refusal: a block smaller than a warp leaves no per-warp slot to read.
        assert case.trace.block_size < 32 and "warp" in str(exc) and "\n" not in str(exc)
        return
    # Ours answers: SMs counted by id, whatever the ids are. The same blocks with dense ids (what the
    # artifact can read) give the same line.
    dense = np.unique(case.smid, return_inverse=True)[1].astype(np.uint32)
    redo = block_sched_trace(case.trace.grid, case.trace.block, case.lstart, case.elapse, dense)
    dense_path = redo.trace.write(path.with_name("dense.bin"))
    art_dense = artifact_run(artifact_python, artifact_tree, dense_path)
    if art_dense.returncode == 0:
        assert line == art_dense.stdout.strip()


def test_paper_sized_trace_uses_the_compiled_path_and_matches(artifact_tree: Path, tmp_path: Path) -> None:
    """32768 blocks of 128 threads on 108 SMs, the kick-the-tires shape; large enough that ours takes the
    compiled (numba) path, while the hypothesis cases above take the numpy one."""
    rng = np.random.default_rng(7)
    n, sms = 32768, 108
    smid = (np.arange(n) % sms).astype(np.uint32)
    elapse = rng.integers(15_000, 25_000, n).astype(np.uint32)
    lstart = (np.uint64(2**41) + np.cumsum(rng.integers(0, 70, n)).astype(np.uint64))
    path = block_sched_trace((n, 1, 1), (128, 1, 1), lstart, elapse, smid).trace.write(tmp_path / "0.486795.bin")
    art = artifact_line(artifact_tree, path)
    assert art.returncode == 0, art.stderr
    cli = subprocess.run([sys.executable, str(REPO / "block_sched" / "block_sched.py"), str(path),
                          "--out", str(tmp_path / "out")], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert cli.returncode == 0, cli.stderr
    assert art.stdout.strip() in cli.stdout.splitlines()


@pytest.mark.parametrize("smids", [[0, 2], [5], [3, 7, 100]])
def test_non_contiguous_sm_ids_crash_the_artifact_but_not_ours(smids: list[int], artifact_tree: Path,
                                                               artifact_python: ScriptServer, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    n = 64
    smid = np.array(smids, np.uint32)[np.arange(n) % len(smids)]
    lstart = np.arange(n, dtype=np.uint64) * np.uint64(500)
    elapse = np.full(n, 1000, np.uint32)
    path = block_sched_trace((n, 1, 1), (64, 1, 1), lstart, elapse, smid).trace.write(tmp_path / "0.5.bin")
    art = artifact_run(artifact_python, artifact_tree, path)
    assert art.returncode != 0 and "IndexError" in art.stderr
    dense = np.unique(smid, return_inverse=True)[1].astype(np.uint32)
    ok = block_sched_trace((n, 1, 1), (64, 1, 1), lstart, elapse, dense).trace.write(tmp_path / "dense.bin")
    expected = artifact_run(artifact_python, artifact_tree, ok).stdout.strip()
    assert our_line(path) == expected
    # The output says why this line has no artifact counterpart (its text and results; figures left undrawn).
    leave_figures_undrawn(monkeypatch)
    result = driver.analyze_paths(registry.get("block_sched"), [path], tmp_path / "out")
    assert result.text.splitlines()[0] == expected
    assert "IndexError" in result.data["traces"][0]["artifact_deviation"]
    assert "IndexError" in result.text


@pytest.mark.parametrize("block", [1, 8, 31])
def test_blocks_smaller_than_a_warp_one_line_error(block: int, tmp_path: Path, capsys) -> None:
    """The artifact reads ``blockSize // 32 == 0`` warps and dies on ``block[0]``; the probe itself put every
    block's record in one slot (floor stride), so there is nothing to read: ours says so in one line. The
    command as a process for one size; the same command's ``main`` in this process for the others."""
    n = 16
    path = block_sched_trace((n, 1, 1), (block, 1, 1), np.arange(n, dtype=np.uint64), np.ones(n, np.uint32),
                             np.zeros(n, np.uint32)).trace.write(tmp_path / "0.1.bin")
    argv = [str(path), "--out", str(path.parent / "out")]
    if block == 31:
        cli = subprocess.run([sys.executable, str(REPO / "block_sched" / "block_sched.py"), *argv],
                             capture_output=True, text=True, cwd=REPO, timeout=120)
        code, stderr = cli.returncode, cli.stderr
    else:
        from block_sched.block_sched import SECTION_INDEX  # the script's body: run_script(__file__, flags=...)

        code = driver.run_script(str(REPO / "block_sched" / "block_sched.py"), argv, flags=SECTION_INDEX)
        stderr = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in stderr
    assert stderr.strip().startswith("error: ") and str(path) in stderr and len(stderr.splitlines()) == 1


def test_the_artifact_interpreter_answers_as_a_fresh_python(artifact_tree: Path, artifact_python: ScriptServer,
                                                             tmp_path: Path) -> None:
    """The tests above run the artifact's script in one kept interpreter: on a trace it reads and one it
    crashes on (SM ids past n-1), that gives what ``python block_sched.py <trace>`` gives."""
    n = 64
    lstart = np.arange(n, dtype=np.uint64) * np.uint64(300)
    elapse = np.full(n, 1000, np.uint32)
    for smid, name in [(np.arange(n, dtype=np.uint32) % 4, "0.5.bin"), (np.full(n, 9, np.uint32), "0.6.bin")]:
        path = block_sched_trace((n, 1, 1), (64, 1, 1), lstart, elapse, smid).trace.write(tmp_path / name)
        fresh, kept = artifact_line(artifact_tree, path), artifact_run(artifact_python, artifact_tree, path)
        assert (kept.returncode, kept.stdout) == (fresh.returncode, fresh.stdout)
        assert kept.stderr.splitlines()[-1:] == fresh.stderr.splitlines()[-1:]  # the exception, or nothing
        assert kept.stderr.startswith("Traceback") == fresh.stderr.startswith("Traceback")
