"""Every command line ends an OS error on a user path (a file where a folder is expected, a folder
below a file) with one ``error:`` line and exit code 2, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    base = tmp_path_factory.mktemp("oserr")
    afile = base / "afile"
    afile.write_text("not a folder\n")
    return {"file": afile, "below": afile / "sub", "out": base / "run-out"}


CASES = [
    ("sample --out {below}", ["sample", "--out", "{below}"]),
    ("sample --out {file}", ["sample", "--out", "{file}"]),
    ("fetch --trace-root {file}", ["fetch", "--trace-root", "{file}"]),
    ("run static --output-dir {below}", ["run", "static", "-p", "bundle", "sample", "--output-dir", "{below}"]),
    ("compare {file} {below}", ["compare", "{file}", "{below}"]),
    # Found in the audit: the set-up cell stopped with one line, but `run` exited 1 (a failed run).
    ("run static --trace-root {below}", ["run", "static", "-p", "bundle", "auto", "--trace-root", "{below}",
                                         "--output-dir", "{out}"]),
]


@pytest.mark.parametrize("argv", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_one_error_line_and_exit_2(paths, argv):
    args = [a.format(**{k: str(v) for k, v in paths.items()}) for a in argv]
    proc = subprocess.run([sys.executable, "-m", "neutrino_ae", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=False)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and str(paths["file"]) in errors[0], proc.stderr[-2000:]


# The artifact's per-figure command lines, run by path: each with its input from the tiny sample
# bundle and --out a file (or a folder below one), alternating to keep the test short.
SCRIPTS = [
    ("block_sched/block_sched.py", "block_sched/*/result/*.bin", "file"),
    ("dmat/dmat.py", "dmat/fig1.dmat", "below"),
    ("exposed_latency/exposed_latency.py", "exposed_latency", "file"),
    ("kernel_overhead/kernel_overhead.py", "kernel_overhead", "below"),
    ("max_mem/max_mem.py", "max_mem", "file"),
    ("warp_sched/fig13cd.py", "warp_sched/tail/*/result/*.bin", "below"),
    ("warp_sched/warp_sched.py", "warp_sched", "file"),
]


@pytest.mark.parametrize("script, pattern, where", SCRIPTS, ids=[f"{s[0]} --out {{{s[2]}}}" for s in SCRIPTS])
def test_per_figure_scripts_one_error_line_and_exit_2(paths, tiny_bundle, script, pattern, where):
    source = sorted(tiny_bundle.glob(pattern))[0]
    proc = subprocess.run([sys.executable, str(REPO / script), str(source), "--out", str(paths[where])],
                          capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: {paths[where]}: "), proc.stderr[-2000:]
