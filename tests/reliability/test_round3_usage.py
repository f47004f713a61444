"""Issue 36, usage errors as crashes: a bad option value ends in one ``error:`` line and exit 2,
before anything is created, never a traceback (numpy's, jupyter_client's, logging's)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from faultkit import one_error_line, run_cli

REPO = Path(__file__).resolve().parents[2]


def test_a_negative_seed_is_a_usage_error(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    proc = run_cli(["sample", "--out", str(work / "traces"), "--seed", "-1"], work)
    assert one_error_line(proc) == "error: --seed must be a whole number from 0 to 9223372036854775807, not -1"
    assert os.listdir(work) == []


def test_an_unknown_kernel_is_a_usage_error(tiny_bundle, tmp_path):
    out = tmp_path / "out"
    proc = run_cli(["run", "static", "--trace-root", str(tiny_bundle), "--output-dir", str(out),
                    "--kernel", "nosuchkernel"], tmp_path)
    line = one_error_line(proc)
    assert line.startswith("error: --kernel 'nosuchkernel': no such Jupyter kernel (installed: ")
    assert not out.exists()


def test_a_non_utf8_output_folder_under_a_posix_locale_is_a_usage_error(tiny_bundle, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    out = os.fsencode(work) + b"/out\xff"
    proc = run_cli(["run", "static", "--trace-root", str(tiny_bundle), "--output-dir", out,
                    "--sections", "kernel_overhead"], tmp_path, LC_ALL="POSIX", LANG="POSIX")
    assert "Logging error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert one_error_line(proc) == f"error: {work}/out\\xff: is not a UTF-8 name; rename it (--output-dir)"
    assert os.listdir(work) == []


def test_an_open_file_limit_too_low_is_refused_before_anything_is_made(tmp_path):
    """``ulimit -n 64`` (soft and hard): a kernel that runs out of descriptors mid-run (an OSError or
    ZeroMQ traceback) is refused up front, exit 2, naming the limit needed."""
    out = tmp_path / "out"
    proc = subprocess.run(["bash", "-c", f"ulimit -n 64; exec {shlex.quote(sys.executable)} -m neutrino_ae run static "
                           f"-p bundle sample --trace-root {shlex.quote(str(tmp_path / 'traces'))} --output-dir "
                           f"{shlex.quote(str(out))}"],
                          capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: the open-file limit (ulimit -n) is 64; a notebook run needs at least 256 (below it the kernel or "
        "its sockets fail); raise it"]
    assert not out.exists() and not (tmp_path / "traces").exists()


def test_a_low_soft_open_file_limit_is_raised_to_what_a_run_needs():
    """Only the soft limit low (``ulimit -Sn 64``): raised, as any process may, instead of failing."""
    script = ("import resource; from neutrino_ae.run.papermill import check_open_files, MIN_OPEN_FILES\n"
              "check_open_files(); print(resource.getrlimit(resource.RLIMIT_NOFILE)[0] == MIN_OPEN_FILES)")
    proc = subprocess.run(["bash", "-c", f"ulimit -Sn 64; exec {shlex.quote(sys.executable)} -c '{script}'"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout.strip() == "True", proc.stderr
