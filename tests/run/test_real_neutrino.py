"""The REAL Neutrino (CLI, hook driver, probe engine) built from its source and run over our
emulated CUDA driver on this machine: what a user's run does, minus the GPU. Skipped, with the
reason, where the Neutrino source, a C compiler, CUDA's ptxas/nvcc or CUDA 12's cuda.h are missing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "real_neutrino"))
sys.path.insert(0, str(REPO / "tools" / "genuine"))

import harness  # noqa: E402
import trace_dirs  # noqa: E402
from real_neutrino_build import shared_install  # noqa: E402


@pytest.fixture(scope="module", params=["artifact", "main"])
def install(request, tmp_path_factory):
    return shared_install(tmp_path_factory, request.param)


def test_block_sched_through_the_real_cli(install, tmp_path):
    case = next(c for c in trace_dirs.CASES if c.name == "block_sched")
    trace_dirs.write_fill(case, tmp_path / "fill")
    tdir, proc = harness.run(install, ["-p", "block_sched"], harness.workload(install, case.kernel, case.grid,
                                                                              case.block), tmp_path / "work",
                             fill=tmp_path / "fill")
    ours = subprocess.run([sys.executable, "block_sched/block_sched.py", str(tdir), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=REPO, check=True).stdout.splitlines()[0]
    per_sm = case.grid // trace_dirs.SMS  # the fill: FIFO dispatch, fixed duration and gap
    expected = (f"No.block:{case.grid} Running:{per_sm * trace_dirs.DURATION} "
                f"Scheduling:{(per_sm - 1) * trace_dirs.GAP}(cycle)")
    assert ours == expected
    if install.branch == "artifact":  # its own analyze hook ran on the trace and printed the same line
        assert proc.stdout.splitlines()[0] == expected


def test_the_real_cli_rejects_an_option_it_does_not_have(install, tmp_path):
    proc = subprocess.run([str(install.neutrino), "-t", "block_sched", "true"], capture_output=True, text=True,
                          env=install.env(), cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "-p/--probe" in proc.stderr
