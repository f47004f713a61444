"""Issue 47 family 6: usage errors and environments that gave tracebacks or wrong answers.

* every notebook parameter's type and range is checked at the edge, in one place (run/parameters.py): a bad
  ``-p`` value is one ``error:`` line, exit 2, before anything is created (``-p output_dir 5`` was a
  ``TypeError`` traceback; a huge ``-p seed`` was accepted, then blamed on bundle.json);
* ``LC_ALL=C PYTHONUTF8=0`` with a non-ASCII folder name or text: a result, not a ``UnicodeEncodeError``;
* ``prepare_env.py --check``: a ``ptxas`` that crashes is not ok, ``CUDA_VISIBLE_DEVICES=''`` is no GPU;
* ``compare`` of runs on two different bundles says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from faultkit import cli_env, one_error_line, run_cli

from neutrino_ae import cli

REPO = Path(__file__).resolve().parents[2]
ASCII_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}


@pytest.mark.parametrize("value", ["5", "1.5", "[1]", "{}", "true"])
def test_an_output_dir_of_another_type_is_one_line(tiny_bundle, tmp_path, value):
    """The issue's case, through the command line (was a TypeError traceback, exit 1)."""
    work = tmp_path / "work"
    work.mkdir()
    proc = run_cli(["run", "static", "--trace-root", str(tiny_bundle), "-p", "output_dir", value], work)
    assert one_error_line(proc).startswith("error: -p output_dir must be a path (a non-empty string), not ")
    assert os.listdir(work) == []


@pytest.mark.parametrize(("notebook", "args", "said"), [
    ("static", ["-p", "seed", str(2**64)], f"seed must be a whole number from 0 to {2**63 - 1}"),
    ("static", ["-p", "seed", "-1"], "seed must be a whole number from 0"),
    ("static", ["-p", "seed", "1.5"], "seed must be a whole number from 0"),
    ("static", ["-p", "trace_root", "5"], "trace_root must be a path"),
    ("static", ["-p", "bundle", "[1]"], "bundle must be a string"),
    ("static", ["-p", "workers", "1e9"], "workers must be a whole number from 0 to 64"),
    ("static", ["-p", "workers", str(10**12)], "workers must be a whole number from 0 to 64"),
    ("static", ["-p", "sample_scale", "5"], 'sample_scale must be "small" or "paper"'),
    ("static", ["-p", "force", "yes"], "force must be True or False"),
    ("static", ["-p", "sections", "5"], "sections must be a list of section names"),
    ("static", ["-p", "outptu_dir", "x"], "static.ipynb has no parameter 'outptu_dir'"),
    ("dynamic", ["-p", "timeout", "Infinity"], "timeout must be a number of seconds above 0"),
    ("dynamic", ["-p", "timeout", "NaN"], "timeout must be a number of seconds above 0"),
    ("dynamic", ["-p", "repeats", str(10**12)], "repeats must be a whole number from 1 to 1000"),
    ("dynamic", ["-p", "neutrino", "5"], "neutrino must be the name or path of the Neutrino CLI"),
    ("dynamic", ["-p", "collect_args", '{"max_mem": "--models x"}'], "collect_args must be a map"),
    ("dynamic", ["-p", "output_dir", "[]"], "output_dir must be a path"),
])
def test_every_parameter_is_checked_at_the_edge(tmp_path, monkeypatch, capsys, notebook, args, said):
    """Every parameter's type and range, before a folder, lock or log exists: the command's own entry (the
    process start is the test above's), each refusal one line naming the parameter and what it must be."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    code = cli.main(["run", notebook, "--output-dir", str(out), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f"error: -p {args[1]}") and said in err[0], err
    assert not out.exists() and os.listdir(tmp_path) == []


def test_a_huge_seed_is_refused_by_name_not_blamed_on_a_manifest(tmp_path):
    """Was accepted, a sample bundle generated, then refused as a bundle.json field (exit 2 after the work)."""
    work = tmp_path / "work"
    work.mkdir()
    proc = run_cli(["run", "static", "-p", "bundle", "sample", "--trace-root", str(work / "traces"),
                    "--output-dir", str(work / "out"), "-p", "seed", str(2**70)], work)
    line = one_error_line(proc)
    assert line == (f"error: -p seed must be a whole number from 0 to {2**63 - 1} (2**63 - 1), not int {2**70}")
    assert "bundle.json" not in line and os.listdir(work) == []


def _non_ascii_folder(tmp_path: Path) -> Path:
    folder = Path(os.fsdecode(os.fsencode(tmp_path) + "/données-é".encode()))
    folder.mkdir()
    return folder


def test_a_run_from_a_non_ascii_folder_under_an_ascii_locale(tiny_bundle, tmp_path):
    """``LC_ALL=C PYTHONUTF8=0``, run from a folder named in UTF-8 with relative paths: the run's notebook holds
    the names (was ``could not run: UnicodeEncodeError``, exit 1)."""
    work = _non_ascii_folder(tmp_path)
    os.symlink(tiny_bundle, work / "traces")
    proc = run_cli(["-q", "run", "static", "--trace-root", "traces", "--output-dir", "out", "--sections",
                    "kernel_overhead"], work, **ASCII_LOCALE)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert (work / "out" / "static.executed.ipynb").is_file()


def test_a_per_figure_script_writes_into_a_non_ascii_folder_under_an_ascii_locale(tiny_bundle, tmp_path):
    """The folder's name is UTF-8 (was refused as "not a UTF-8 name": the locale, not the name, is ASCII)."""
    out = _non_ascii_folder(tmp_path) / "max_mem"
    proc = subprocess.run([sys.executable, str(REPO / "max_mem" / "max_mem.py"), str(tiny_bundle / "max_mem"),
                           "--out", os.fsencode(out)], cwd=tmp_path, env=cli_env(**ASCII_LOCALE),
                          capture_output=True, timeout=300, check=False)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert (out / "max_mem.json").is_file()


def test_compare_prints_non_ascii_keys_under_an_ascii_locale(tmp_path):
    """Text read from a file (a key named in UTF-8) printed to an ASCII terminal (was a UnicodeEncodeError
    traceback)."""
    for name, value in (("a", 1), ("b", 2)):
        (tmp_path / name).mkdir()
        doc = {"results": [{"section": "max_mem", "key": "modèle.peak", "value": value, "unit": "B"}]}
        (tmp_path / name / "summary.json").write_text(json.dumps(doc), encoding="utf-8")
    proc = run_cli(["compare", "a", "b"], tmp_path, **ASCII_LOCALE)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "1 of 1 values moved" in proc.stdout and "max_mem/mod" in proc.stdout


@pytest.fixture
def gpu_path(tmp_path) -> str:
    """PATH with an ``nvidia-smi`` naming one GPU and a ``ptxas`` that crashes (SIGSEGV) on any call."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "nvidia-smi").write_text('#!/bin/sh\necho "NVIDIA A100-SXM4-40GB, 8.0, 535.104.05"\n')
    (bindir / "ptxas").write_text("#!/bin/sh\nkill -SEGV $$\n")
    for tool in bindir.iterdir():
        tool.chmod(0o755)
    return os.pathsep.join([str(bindir), os.environ["PATH"]])


def _check(env: dict[str, str]) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, str(REPO / "prepare_env.py"), "--check", "--json"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, json.loads(proc.stdout)


def test_prepare_env_does_not_count_a_crashing_ptxas_as_ok(gpu_path):
    code, doc = _check({**os.environ, "PATH": gpu_path})
    ptxas = next(c for c in doc["checks"] if c["name"] == "ptxas")
    assert ptxas["status"] == "broken" and "killed by SIGSEGV" in ptxas["detail"], ptxas
    assert code == 1 and not doc["ready"]


def test_prepare_env_says_no_gpu_is_visible_with_an_empty_cuda_visible_devices(gpu_path):
    env = {**os.environ, "PATH": gpu_path, "CUDA_VISIBLE_DEVICES": ""}
    code, doc = _check(env)
    gpu = next(c for c in doc["checks"] if c["name"] == "nvidia-gpu")
    assert code == 3 and doc["gpus"] == [] and gpu["status"] == "missing", doc
    assert "CUDA_VISIBLE_DEVICES='' hides all 1 GPU(s)" in gpu["detail"] and "no GPU is visible" in gpu["detail"]
    # and one index of the one GPU leaves it visible
    code, doc = _check({**env, "CUDA_VISIBLE_DEVICES": "0"})
    assert [g["name"] for g in doc["gpus"]] == ["NVIDIA A100-SXM4-40GB"]


def _summary(folder: Path, digest: str, kind: str = "sample") -> Path:
    folder.mkdir()
    doc = {"notebook": "static", "bundle_kind": kind, "bundle_digest": digest,
           "results": [{"section": "max_mem", "key": "x.peak", "value": 1, "unit": "B", "bundle_kind": kind}]}
    (folder / "summary.json").write_text(json.dumps(doc))
    return folder


def test_compare_says_the_runs_read_different_bundles(tmp_path):
    """Two sample runs (same kind) on bundles of other digests, values equal: one warning line, exit 0 (the
    values decide; README, compare). Was silent: only a different kind was noted."""
    a, b = _summary(tmp_path / "a", "1" * 64), _summary(tmp_path / "b", "2" * 64)
    proc = run_cli(["compare", str(a), str(b)], tmp_path)
    warned = [line for line in proc.stdout.splitlines() if "different bundles" in line]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert warned == [f"warning: the runs read different bundles: A sample (sha256 {'1' * 16}...), "
                      f"B sample (sha256 {'2' * 16}...); values may differ because the data differ"]
    same = run_cli(["compare", str(a), str(a)], tmp_path)
    assert same.returncode == 0 and "different bundles" not in same.stdout
