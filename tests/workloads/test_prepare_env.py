"""prepare_env.py: exit codes, table/JSON output, install plan, fake GPU tools on PATH."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def q(path: object) -> str:
    """``path`` as the dry run prints it in a command: shell-quoted (a checkout whose path has a space)."""
    return shlex.quote(str(path))


def _path_without_gpu(tmp_path: Path, nvidia_smi: str | None = None) -> str:
    """PATH with our interpreter and the basic tools, plus an optional fake nvidia-smi."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    if nvidia_smi is not None:
        tool = fake / "nvidia-smi"
        tool.write_text(nvidia_smi)
        tool.chmod(0o755)
    return os.pathsep.join([str(fake), str(Path(sys.executable).parent), "/usr/bin", "/bin"])


def _run(tmp_path: Path, *args: str, nvidia_smi: str | None = None, extra_env: dict | None = None):
    env = {k: v for k, v in os.environ.items() if k not in ("NEUTRINO_SRC", "CUTLASS_BENCH_DIR", "CUTLASS_ARCH")}
    env.update({"PATH": _path_without_gpu(tmp_path, nvidia_smi), "CUTLASS_DIR": str(tmp_path / "cutlass"),
                "THIRD_PARTY": str(tmp_path / "tp"), **(extra_env or {})})
    return subprocess.run([sys.executable, str(REPO / "prepare_env.py"), *args], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


def test_check_without_gpu_exits_3_with_table(tmp_path):
    proc = _run(tmp_path, "--check")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "nvidia-gpu" in proc.stdout and "missing" in proc.stdout
    assert "no NVIDIA GPU" in proc.stdout
    for item in ("cuobjdump", "ptxas", "gcc", "git", "nm", "file", "python", "neutrino", "torch", "triton",
                 "cutlass", "nsys", "ncu"):
        assert any(line.startswith(item) for line in proc.stdout.splitlines()), item


def test_check_json_parses(tmp_path):
    proc = _run(tmp_path, "--check", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == doc["exit_code"] == 3
    assert doc["ready"] is False and doc["gpus"] == []
    names = {c["name"] for c in doc["checks"]}
    assert {"nvidia-gpu", "neutrino", "torch", "triton", "cutlass"} <= names


def test_fake_a100_is_reported(tmp_path):
    smi = '#!/bin/sh\necho "NVIDIA A100-SXM4-40GB, 8.0, 535.104.05"\n'
    proc = _run(tmp_path, "--check", "--json", nvidia_smi=smi)
    doc = json.loads(proc.stdout)
    assert doc["gpus"] == [{"name": "NVIDIA A100-SXM4-40GB", "compute_cap": "8.0", "driver": "535.104.05",
                            "sm_count": "108"}]
    # A GPU is there, but neutrino (at least) is missing: "required missing", not "no GPU".
    assert proc.returncode == doc["exit_code"] == 1
    table = _run(tmp_path, "--check", nvidia_smi=smi).stdout
    assert "A100-SXM4-40GB, sm_80, driver 535.104.05" in table


def test_unknown_gpu_sm_count_is_unknown(tmp_path):
    smi = '#!/bin/sh\necho "NVIDIA Mystery GPU, 9.9, 999.1"\n'
    doc = json.loads(_run(tmp_path, "--check", "--json", nvidia_smi=smi).stdout)
    assert doc["gpus"][0]["sm_count"] == "unknown"


def test_failing_nvidia_smi_is_no_gpu(tmp_path):
    smi = '#!/bin/sh\necho "NVIDIA-SMI has failed: no driver" >&2\nexit 9\n'
    proc = _run(tmp_path, "--check", nvidia_smi=smi)
    assert proc.returncode == 3
    assert "exit 9" in proc.stdout and "Traceback" not in proc.stderr


def test_install_dry_run_lists_steps(tmp_path):
    smi = '#!/bin/sh\necho "NVIDIA A100-SXM4-40GB, 8.0, 535.104.05"\n'
    proc = _run(tmp_path, "--install", "--dry-run", nvidia_smi=smi,
                extra_env={"NEUTRINO_REF": "artifact", "NEUTRINO_REPO": "https://example.invalid/neutrino"})
    out = proc.stdout
    assert "Traceback" not in out + proc.stderr
    assert "git clone --depth 1 --branch artifact https://example.invalid/neutrino" in out
    # Into the project's environment with its pip, never the deprecated `setup.py install`.
    assert "setup.py" not in out
    assert f"{q(sys.executable)} -m pip install --no-build-isolation {q(tmp_path / 'tp' / 'neutrino')}" in out
    assert f"installing into the environment {sys.prefix} (Python {sys.executable})" in out
    assert "-DCUTLASS_NVCC_ARCHS=80" in out and "-DCUTLASS_NVCC_EMBED_PTX=ON" in out
    assert "dry run:" in out
    assert not (tmp_path / "tp").exists()  # nothing executed


def test_install_uses_local_checkout(tmp_path):
    src = tmp_path / "neutrino-src"
    src.mkdir()
    (src / "setup.py").write_text("")
    proc = _run(tmp_path, "--install", "--dry-run", extra_env={"NEUTRINO_SRC": str(src)})
    assert "git clone" not in proc.stdout.split("cutlass")[0]
    assert f"-m pip install --no-build-isolation {src}" in proc.stdout


def test_install_targets_the_projects_environment_whatever_python_runs_it(tmp_path):
    """Run by another Python (a bare venv without the project), the script re-runs itself under the
    project's .venv, says so, and installs with that environment's pip."""
    project = REPO / ".venv" / "bin" / "python"
    if Path(sys.prefix).resolve() != (REPO / ".venv").resolve():
        pytest.skip("the suite is not running in the project's .venv")
    other = tmp_path / "other-env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(other)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in ("NEUTRINO_SRC", "CUTLASS_BENCH_DIR", "CUTLASS_ARCH")}
    env.update({"PATH": _path_without_gpu(tmp_path), "CUTLASS_DIR": str(tmp_path / "cutlass"),
                "THIRD_PARTY": str(tmp_path / "tp")})
    proc = subprocess.run([str(other / "bin" / "python"), str(REPO / "prepare_env.py"), "--install", "--dry-run"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    out = proc.stdout
    assert "Traceback" not in out + proc.stderr
    assert f"running under the project's environment {REPO / '.venv'} ({project})" in out
    assert f"installing into the environment {REPO / '.venv'}" in out
    assert f"{q(project)} -m pip install --no-build-isolation" in out and f"{other}" not in out.split("installing")[1]

    # --python names another environment explicitly; a path that is no Python is one error line.
    proc = subprocess.run([sys.executable, str(REPO / "prepare_env.py"), "--check", "--python", str(tmp_path / "no")],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1


def test_install_bad_local_checkout_is_reported(tmp_path):
    proc = _run(tmp_path, "--install", "--dry-run", extra_env={"NEUTRINO_SRC": str(tmp_path / "nowhere")})
    assert "no setup.py there" in proc.stdout
    assert proc.returncode == 1


# ------------------------------------------------------------------- hostile nvidia-smi and hung tools


def _tool(bindir: Path, name: str, body: str) -> None:
    exe = bindir / name
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(0o755)


@pytest.mark.parametrize("output", [
    r"printf '\001\377garbage\033[31m\n'",
    "echo 'NVIDIA A100, eight, 535.1'",
    "echo 'x,y'",
    "echo ''",
])
def test_garbage_from_nvidia_smi_is_not_a_gpu_and_is_printed_safely(tmp_path, monkeypatch, output):
    from neutrino_ae.workloads import envcheck

    _tool(tmp_path, "nvidia-smi", output + "\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    gpus, problem = envcheck.query_gpus(timeout=10)
    assert gpus == [] and problem.startswith("nvidia-smi lists no GPU")
    assert problem.isprintable() and "\x1b" not in problem


def test_a_valid_line_is_a_gpu(tmp_path, monkeypatch):
    from neutrino_ae.workloads import envcheck

    _tool(tmp_path, "nvidia-smi", "echo 'NVIDIA A100-SXM4-40GB, 8.0, 535.104.05'\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    gpus, problem = envcheck.query_gpus(timeout=10)
    assert [(g.name, g.compute_cap, g.sm_count) for g in gpus] == [("NVIDIA A100-SXM4-40GB", "8.0", "108")]


def test_a_timed_out_tool_leaves_no_child_behind(tmp_path):
    from neutrino_ae.workloads import envcheck

    pidfile = tmp_path / "child.pid"
    _tool(tmp_path, "hang", f"sleep 300 &\necho $! > {pidfile}\nwait\n")
    rc, out = envcheck.run_tool([str(tmp_path / "hang")], timeout=1)
    assert rc == 124 and "timed out" in out
    child = int(pidfile.read_text())
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the tool's child {child} outlived the timeout")


def _fake_cutlass_build(third_party: Path) -> Path:
    bench = third_party / "cutlass" / "build" / "examples" / "benchmark"
    bench.mkdir(parents=True)
    for name in ("gemm", "gemm-streamk", "conv"):
        (bench / name).write_text("#!/bin/sh\n")
        (bench / name).chmod(0o755)
    return bench


def _without_cutlass_dir(tmp_path: Path, *args: str, extra_env: dict | None = None):
    env = {k: v for k, v in os.environ.items()
           if k not in ("NEUTRINO_SRC", "CUTLASS_BENCH_DIR", "CUTLASS_ARCH", "CUTLASS_DIR", "THIRD_PARTY")}
    env.update({"PATH": _path_without_gpu(tmp_path), **(extra_env or {})})
    return subprocess.run([sys.executable, str(REPO / "prepare_env.py"), *args], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


def test_cutlass_is_found_where_install_builds_it(tmp_path):
    """--install clones CUTLASS into $THIRD_PARTY/cutlass and builds its benchmarks there; --check
    (and the collection, through envcheck.cutlass_bin_dir) looks in the same place."""
    bench = _fake_cutlass_build(tmp_path / "tp")
    doc = json.loads(_without_cutlass_dir(tmp_path, "--check", "--json",
                                          extra_env={"THIRD_PARTY": str(tmp_path / "tp")}).stdout)
    cutlass = next(c for c in doc["checks"] if c["name"] == "cutlass")
    assert cutlass["status"] == "ok" and str(bench) in cutlass["detail"], cutlass


def test_default_cutlass_folder_is_the_repositorys_third_party(tmp_path):
    """Without CUTLASS_DIR/THIRD_PARTY: third_party/cutlass at the repository root, the folder the
    install step clones into (not neutrino_ae/third_party)."""
    proc = _without_cutlass_dir(tmp_path, "--install", "--dry-run", extra_env={"CUTLASS_ARCH": "80"})
    cdir = REPO / "third_party" / "cutlass"
    assert f"cmake -S {q(cdir)} -B {q(cdir / 'build')}" in proc.stdout, proc.stdout
    doc = json.loads(_without_cutlass_dir(tmp_path, "--check", "--json").stdout)
    cutlass = next(c for c in doc["checks"] if c["name"] == "cutlass")
    assert cutlass["detail"].startswith(f"{cdir / 'build' / 'examples' / 'benchmark'}:"), cutlass
    assert "neutrino_ae/third_party" not in proc.stdout + json.dumps(doc)


def test_check_says_which_workload_family_runs_and_what_it_needs(tmp_path):
    """No PyTorch or Triton here: the ptx family, which needs nvcc and neither of them."""
    doc = json.loads(_run(tmp_path, "--check", "--json").stdout)
    assert doc["workloads"] == "ptx" and "PyTorch is not installed" in doc["workloads_reason"]
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["workloads"]["detail"].startswith("ptx: ")
    assert not checks["torch"]["required"] and not checks["triton"]["required"] and checks["nvcc"]["required"]
    assert "not needed by the ptx workloads" in checks["torch"]["hint"]
    paper = json.loads(_run(tmp_path, "--check", "--json", "--workloads", "paper").stdout)
    checks = {c["name"]: c for c in paper["checks"]}
    assert paper["workloads"] == "paper" and checks["torch"]["required"] and "nvcc" not in checks


def test_install_never_installs_a_triton_the_hook_cannot_run(tmp_path):
    smi = '#!/bin/sh\necho "NVIDIA A100-SXM4-40GB, 8.0, 535.104.05"\n'
    ptx = _run(tmp_path, "--install", "--dry-run", nvidia_smi=smi).stdout
    assert "pip install triton" not in ptx and "triton: not needed by the ptx workloads" in ptx
    paper = _run(tmp_path, "--install", "--dry-run", "--workloads", "paper", nvidia_smi=smi).stdout
    assert "-m pip install triton==3.1.0" in paper  # the artifact's pin: launches with cuLaunchKernel
