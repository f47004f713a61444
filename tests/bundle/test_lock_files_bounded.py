"""Bundle-root lock files do not pile up (issue 48): a run reading a root removes its lock file when it
lets go, unless another holder still has it, and whoever lets go of a lock also removes the files that
killed holders (or older versions) left a minute or more ago, so the private lock folder holds about one
file per root in use, not one per root ever opened. A file another process holds is never removed under it."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

from neutrino_ae.bundle import target_lock
from neutrino_ae.bundle.target_lock import hold_for_reading, hold_target, lock_dir, lock_path, release_reading


@pytest.fixture
def runtime(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "runtime"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    return folder / "neutrino-ae"


def _held_elsewhere(path: Path, how: int) -> int:
    """``path`` locked by another open file description (flock: as another process would hold it)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, how | fcntl.LOCK_NB)
    return fd


def test_a_reader_removes_its_lock_file_when_it_lets_go(runtime, tmp_path):
    for i in range(5):  # five runs of five roots: nothing left
        root = tmp_path / f"traces{i}" / "sample"
        fd = hold_for_reading(root, wait_s=0, progress=False)
        assert fd is not None and lock_path(root).exists()
        release_reading(fd, root)
    assert list(runtime.iterdir()) == []


def test_a_reader_leaves_the_file_of_a_root_another_reader_holds(runtime, tmp_path):
    root = tmp_path / "traces" / "sample"
    other = _held_elsewhere(lock_path(root), fcntl.LOCK_SH)
    try:
        fd = hold_for_reading(root, wait_s=0, progress=False)
        release_reading(fd, root)
        assert lock_path(root).exists()  # the other reader still holds it: a writer must still wait for it
        with pytest.raises(BlockingIOError):
            _held_elsewhere(lock_path(root), fcntl.LOCK_EX)
    finally:
        os.close(other)
    fd = hold_for_reading(root, wait_s=0, progress=False)
    release_reading(fd, root)
    assert list(runtime.iterdir()) == []


def test_letting_go_removes_the_files_killed_holders_left_but_not_a_held_one(runtime, tmp_path):
    folder = lock_dir()
    stale = [lock_path(tmp_path / f"old{i}") for i in range(3)]
    hour_ago = time.time() - 3600
    for path in stale:  # what a killed run (or an older version) left: unheld, zero bytes
        path.touch()
        os.utime(path, (hour_ago, hour_ago))
    new = lock_path(tmp_path / "opening")
    new.touch()  # just made by a process about to lock it: kept
    held_path = lock_path(tmp_path / "busy")
    held = _held_elsewhere(held_path, fcntl.LOCK_EX)
    try:
        with hold_target(tmp_path / "mine", wait_s=0, progress=False):
            pass
        assert sorted(folder.iterdir()) == sorted([held_path, new])
        fd = hold_for_reading(tmp_path / "theirs", wait_s=0, progress=False)
        release_reading(fd, tmp_path / "theirs")
        assert sorted(folder.iterdir()) == sorted([held_path, new])
    finally:
        os.close(held)


def test_letting_go_follows_no_link_in_the_lock_folder(runtime, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = lock_dir() / "root-0123456789abcdef0123456789abcdef.lock"
    link.symlink_to(victim)
    with hold_target(tmp_path / "mine", wait_s=0, progress=False):
        pass
    assert victim.read_text() == "keep me\n" and link.is_symlink()


def test_release_of_no_lock_is_a_no_op(runtime, tmp_path):
    release_reading(None, tmp_path / "root")  # no folder for locks could be made: nothing was held
    assert target_lock.lock_dir() == runtime
