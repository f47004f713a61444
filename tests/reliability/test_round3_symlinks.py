"""Issue 36, writes through symbolic links: a link planted where the suite writes by a fixed name (the
output folder's lock, run.log, a bundle root's lock) is refused with one line (exit 2) or not used,
never followed; no command writes into a trace bundle. Each case through the public command line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from faultkit import LOCK, REPO, cli_env, one_error_line, run_cli

VICTIM_TEXT = "a file outside the output folder that must not change\n"


@pytest.fixture
def victim(tmp_path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text(VICTIM_TEXT)
    return path


@pytest.fixture
def bundle_copy(tiny_bundle, tmp_path) -> Path:
    """A copy of the tiny bundle a test may see written into (the shared one must not change)."""
    return Path(shutil.copytree(tiny_bundle, tmp_path / "traces", symlinks=True))


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


@pytest.mark.parametrize("name", [LOCK, "run.log"])
def test_a_link_planted_in_the_output_folder_is_refused_not_followed(tiny_bundle, tmp_path, victim, name):
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(victim)
    proc = run_cli(["run", "static", "--trace-root", str(tiny_bundle), "--output-dir", str(out),
                    "--sections", "kernel_overhead"], tmp_path)
    assert one_error_line(proc) == f"error: {out / name}: is a symbolic link; refusing to write through it (remove it)"
    assert victim.read_text() == VICTIM_TEXT
    assert (out / name).is_symlink()
    assert not (out / "static.executed.ipynb").exists()


def test_a_bundle_roots_lock_is_not_a_guessable_name_beside_it(tmp_path, victim):
    """`sample --out <shared>/traces` used to lock <shared>/.traces.lock: a link planted there had its
    target truncated to "pid N". The lock now lives in the user's own runtime folder."""
    shared, runtime = tmp_path / "shared", tmp_path / "runtime"
    shared.mkdir()
    runtime.mkdir(mode=0o700)
    (shared / ".traces.lock").symlink_to(victim)
    proc = run_cli(["sample", "--out", str(shared / "traces")], tmp_path, XDG_RUNTIME_DIR=str(runtime))
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == VICTIM_TEXT
    assert sorted(p.name for p in shared.iterdir()) == [".traces.lock", "traces"]  # nothing else beside it
    assert (shared / ".traces.lock").is_symlink()
    assert sorted(p.name for p in runtime.iterdir()) == ["neutrino-ae"]  # the lock folder; the lock removed
    assert oct((runtime / "neutrino-ae").stat().st_mode & 0o777) == oct(0o700)
    assert list((runtime / "neutrino-ae").iterdir()) == []


def test_a_lock_folder_that_is_a_planted_link_is_refused(tmp_path):
    runtime, elsewhere = tmp_path / "runtime", tmp_path / "elsewhere"
    runtime.mkdir(mode=0o700)
    elsewhere.mkdir()
    (runtime / "neutrino-ae").symlink_to(elsewhere)
    proc = run_cli(["sample", "--out", str(tmp_path / "traces")], tmp_path, XDG_RUNTIME_DIR=str(runtime))
    assert one_error_line(proc).startswith(f"error: {runtime / 'neutrino-ae'}: is not a private folder of yours")
    assert list(elsewhere.iterdir()) == [] and not (tmp_path / "traces").exists()


def test_export_perfetto_refuses_an_output_inside_a_bundle(bundle_copy, tmp_path):
    before = _files(bundle_copy)
    trace = next(p for p in (bundle_copy / "block_sched").iterdir() if (p / "result").is_dir())
    out = bundle_copy / "timeline.json"
    proc = run_cli(["export", "perfetto", str(trace), "-o", str(out)], tmp_path)
    assert one_error_line(proc).startswith(f"error: {out}: is inside the trace bundle {bundle_copy} (it holds "
                                           "bundle.json)")
    assert _files(bundle_copy) == before


def test_dmat_script_refuses_an_output_inside_a_bundle(bundle_copy, tmp_path):
    before = _files(bundle_copy)
    out = bundle_copy / "dmat" / "figures"
    proc = subprocess.run([sys.executable, str(REPO / "dmat" / "dmat.py"), str(bundle_copy / "dmat" / "fig1.dmat"),
                           "--out", str(out)], cwd=tmp_path, env=cli_env(), text=True, capture_output=True,
                          timeout=300, check=False)
    line = one_error_line(proc)
    assert "is inside the trace bundle" in line and "--out must name a folder outside it" in line
    assert _files(bundle_copy) == before


def test_run_refuses_an_output_folder_inside_another_bundle(tiny_bundle, bundle_copy, tmp_path):
    """`run` refused an output_dir inside its own trace_root; one inside any bundle is refused too, up front."""
    before = _files(bundle_copy)
    proc = run_cli(["run", "static", "--trace-root", str(tiny_bundle), "--output-dir", str(bundle_copy / "results"),
                    "--sections", "kernel_overhead"], tmp_path)
    assert "is inside the trace bundle" in one_error_line(proc)
    assert _files(bundle_copy) == before


def test_no_file_written_through_a_hard_link_at_the_lock(tiny_bundle, tmp_path, victim):
    out = tmp_path / "out"
    out.mkdir()
    os.link(victim, out / LOCK)
    proc = run_cli(["run", "static", "--trace-root", str(tiny_bundle), "--output-dir", str(out),
                    "--sections", "kernel_overhead"], tmp_path)
    assert "is a hard link to another file" in one_error_line(proc)
    assert victim.read_text() == VICTIM_TEXT
