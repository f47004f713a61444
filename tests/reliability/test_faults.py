"""Fault injection through the real command line (docs/reliability.md): ``neutrino-ae run static``
stopped by SIGTERM and by Ctrl-C at several points, run out of disk (a small tmpfs where one can be
mounted, a file-size limit otherwise and always), under an address-space limit, and run twice at
once; ``neutrino-ae sample`` twice at once. Each case checks the documented exit code, one line and
no traceback on stderr, that no process of the run outlives it, that nothing changes after it
exits, that the lock is free only once its workers ended, that nothing truncated or half-made is
published, and that the previous good results are intact.

Runs on the tiny sample bundle; a "slow" toy section (tests/reliability/faultkit.py) keeps a worker
busy, writing a heartbeat, until it is stopped.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faultkit import (
    TOP_LEVEL,
    Cli,
    alive,
    cli_env,
    cmdline,
    copy_run,
    digests,
    leftovers,
    lock_is_free,
    make_slow_sample_section,
    make_slow_section,
    section_digests,
    tree_state,
)

from neutrino_ae.bundle.target_lock import lock_path

DISK_FULL_EXIT = 74


@pytest.fixture(scope="module")
def sections(tmp_path_factory) -> Path:
    return make_slow_section(tmp_path_factory.mktemp("sections"))


#: The memory bound of a tiny run: 1.5 GiB of address space (kernel, worker, numpy, matplotlib).
RUN_AS_LIMIT = 1536 << 20


@pytest.fixture(scope="module")
def good_run_under_a_limit(tiny_bundle, tmp_path_factory) -> tuple[Path, Cli, int, dict]:
    """A finished run (one cheap section, computed from nothing), made under an address-space limit of
    :data:`RUN_AS_LIMIT`: the previous good results every fault must leave intact, and the run that
    test_a_run_under_an_address_space_limit_finishes judges. (its output folder, its Cli, its exit code, what
    was seen as soon as it exited: ``alive``, ``lock_free``, ``leftovers``)."""
    work = tmp_path_factory.mktemp("good")
    out = work / "out"
    cli = Cli(["run", "static", "--trace-root", str(tiny_bundle), "--output-dir", str(out),
               "--sections", "kernel_overhead"], work, out, limits={resource.RLIMIT_AS: RUN_AS_LIMIT})
    try:
        rc = cli.wait(120)
    finally:
        cli.kill_leftovers()
    seen = {"alive": alive(cli.seen), "lock_free": lock_is_free(out), "leftovers": leftovers(out)}
    return out, cli, rc, seen


@pytest.fixture(scope="module")
def good_run(good_run_under_a_limit) -> Path:
    out, cli, rc, _ = good_run_under_a_limit
    assert rc == 0, cli.stderr()
    assert all((out / n).is_file() for n in TOP_LEVEL)
    return out


@pytest.fixture
def previous(good_run, tmp_path) -> Path:
    return copy_run(good_run, tmp_path / "out")


def _run_tmp(out: Path) -> Path:
    """The run's own temporary folder (its TMPDIR), checked for leftovers after a stop."""
    return out.parent / "tmp"


def _run(tiny_bundle: Path, out: Path, sections: Path, *extra: str, limits: dict[int, int] | None = None,
         secs: str = "kernel_overhead,slow") -> Cli:
    tmp = _run_tmp(out)
    tmp.mkdir(exist_ok=True)
    return Cli(["run", "static", "--trace-root", str(tiny_bundle), "--output-dir", str(out), "--sections", secs,
                *extra], out.parent, out, env=cli_env(NEUTRINO_AE_SECTIONS=str(sections), TMPDIR=str(tmp)),
               limits=limits)


#: With ``previous``: kernel_overhead's cached results are current there, so its cell reads them back and no
#: worker is started for it (run/ahead.py); warp_sched's are not, so it and slow are computed in two workers.
IN_WORKERS = "kernel_overhead,warp_sched,slow"


def _beating(out: Path, where: str):
    """True once the slow section's heartbeat has a few lines written by a ``where`` process (in the run's own
    generation of ``out``, where it writes its set: run/publish.py)."""

    def check() -> bool:
        try:
            beat = next(out.glob(".neutrino-ae.gen-run-*/slow/heartbeat.txt"))
            lines = beat.read_text().splitlines()
        except (StopIteration, FileNotFoundError):
            return False
        if len(lines) < 3:
            return False
        pid = int(lines[-1].split()[0])
        cmd = cmdline(pid)
        return ("multiprocessing" in cmd) if where == "worker" else ("ipykernel" in cmd)
    return check


def _assert_stopped_cleanly(cli: Cli, rc: int, word: str, out: Path, before: dict[str, str | None],
                            section_before: dict[str, str]) -> None:
    try:
        assert rc == {"terminated": 143, "interrupted": 130}[word], cli.stderr()
        err = cli.stderr()
        assert "Traceback" not in err, err
        said = [ln for ln in cli.stderr_after_signal().splitlines() if ln.strip()]
        assert len(said) == 1 and said[0].startswith(f"error: {word}; nothing published"), said
        assert alive(cli.seen) == [], f"processes outlived the command: {alive(cli.seen)}"
        assert len(cli.seen) >= 1  # it did start a kernel
        assert cli.alive_when_lock_freed == [], f"lock released while {cli.alive_when_lock_freed} still ran"
        assert lock_is_free(out)
        state = tree_state(out)
        time.sleep(0.3)  # a left-behind worker appends a heartbeat line every 20 ms
        assert tree_state(out) == state, "files changed after the command exited"
        assert leftovers(out) == []
        assert list(_run_tmp(out).glob("nae-kernel-*")) == [], "the kernel's socket folder outlived the run"
        assert digests(out) == before  # the previous run's notebook, summary and verdict, as they were
        assert section_digests(out / "kernel_overhead") == section_before
    finally:
        cli.kill_leftovers()


# --------------------------------------------------------------------------------------------- signals


@pytest.mark.parametrize(("sig", "point"), [
    (signal.SIGTERM, "kernel-start"),
    (signal.SIGTERM, "section-worker"),
    (signal.SIGINT, "section-worker"),
])
def test_a_signal_stops_every_process_and_publishes_nothing(tiny_bundle, sections, previous, sig, point):
    before, section_before = digests(previous), section_digests(previous / "kernel_overhead")
    cli = _run(tiny_bundle, previous, sections, secs=IN_WORKERS)
    try:
        if point == "kernel-start":
            cli.wait_for(lambda: any("ipykernel" in cmdline(p) for p, _ in cli.seen), label="the kernel")
        else:
            cli.wait_for(_beating(previous, "worker"), label="a section worker")
        cli.signal(sig, group=sig == signal.SIGINT)
        rc = cli.wait()
    finally:
        cli.kill_leftovers()
    _assert_stopped_cleanly(cli, rc, "terminated" if sig == signal.SIGTERM else "interrupted", previous, before,
                            section_before)


def test_ctrl_c_twice_while_the_kernel_computes(tiny_bundle, sections, previous):
    """workers=0: the section runs in the kernel itself; an impatient second Ctrl-C changes nothing."""
    before, section_before = digests(previous), section_digests(previous / "kernel_overhead")
    cli = _run(tiny_bundle, previous, sections, "-p", "workers", "0")
    try:
        cli.wait_for(_beating(previous, "kernel"), label="the kernel computing")
        cli.signal(signal.SIGINT, group=True)
        time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            cli.signal(signal.SIGINT, group=True)
        rc = cli.wait()
    finally:
        cli.kill_leftovers()
    _assert_stopped_cleanly(cli, rc, "interrupted", previous, before, section_before)


def test_a_second_run_on_the_same_output_dir_is_refused_and_the_first_stops_cleanly(tiny_bundle, sections, previous):
    before, section_before = digests(previous), section_digests(previous / "kernel_overhead")
    first = _run(tiny_bundle, previous, sections, "-p", "workers", "0")
    try:
        first.wait_for(_beating(previous, "kernel"), label="the first run computing")
        mid = digests(previous)  # the first run's kernel set its summary aside (run/notebook_setup.py)
        second = subprocess.run([sys.executable, "-m", "neutrino_ae", "run", "static", "--trace-root", str(tiny_bundle),
                                 "--output-dir", str(previous), "--sections", "kernel_overhead"],
                                cwd=previous.parent, env=cli_env(), capture_output=True, text=True, timeout=60)
        assert second.returncode == 2, second.stderr
        assert second.stderr.splitlines() == [
            f"error: {previous}: in use by another run (pid {first.proc.pid}); wait for it or choose another "
            "output_dir"], second.stderr
        assert digests(previous) == mid
        first.signal(signal.SIGTERM)
        rc = first.wait()
    finally:
        first.kill_leftovers()
    _assert_stopped_cleanly(first, rc, "terminated", previous, before, section_before)


def test_sigkill_leaves_no_worker_computing(tiny_bundle, sections, previous):
    """SIGKILL cannot be handled: the kernel sees its parent gone and exits, and its section workers
    die with it (PR_SET_PDEATHSIG), so nothing keeps writing into the results."""
    cli = _run(tiny_bundle, previous, sections, secs=IN_WORKERS)
    try:
        cli.wait_for(_beating(previous, "worker"), label="a section worker")
        cli.signal(signal.SIGKILL)
        assert cli.wait() == -signal.SIGKILL
        end = time.monotonic() + 20
        while alive(cli.seen) and time.monotonic() < end:
            time.sleep(0.1)
        assert alive(cli.seen) == [], [cmdline(p) for p in alive(cli.seen)]
        state = tree_state(previous)
        time.sleep(0.3)
        assert tree_state(previous) == state
    finally:
        cli.kill_leftovers()


# --------------------------------------------------------------------------------------------- full disk


def _small_fs(path: Path, size_kib: int) -> bool:
    """Mount a tmpfs of ``size_kib`` at ``path``; False where that is not allowed (not root)."""
    path.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(path)],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def test_a_full_disk_keeps_the_previous_results(tiny_bundle, sections, good_run, tmp_path):
    """The previous run (kernel_overhead) fits; adding dmat does not (its figures and a 0.7 MB executed
    notebook): exit 74, one 'disk full: <path>' line, the previous notebook/summary/verdict intact.
    A 1 MiB tmpfs where the test may mount one, else a 400 KiB file-size limit (never skipped)."""
    limits = None
    fs = tmp_path / "fs"
    mounted = _small_fs(fs, 1024)
    try:
        if not mounted:  # RLIMIT_FSIZE: no file over 400 KiB (the good run's largest is 250 KiB)
            fs.mkdir(exist_ok=True)
            limits = {resource.RLIMIT_FSIZE: 400 << 10}
        out = copy_run(good_run, fs / "out")
        before, section_before = digests(out), section_digests(out / "kernel_overhead")
        cli = _run(tiny_bundle, out, sections, secs="kernel_overhead,dmat", limits=limits)
        try:
            rc = cli.wait(120)
        finally:
            cli.kill_leftovers()
        err = cli.stderr()
        assert rc == DISK_FULL_EXIT, err
        assert "Traceback" not in err, err
        errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1 and errors[0].startswith(f"error: disk full: {out}/"), err
        assert alive(cli.seen) == []
        assert lock_is_free(out)
        assert leftovers(out) == []
        assert list(_run_tmp(out).glob("nae-kernel-*")) == [], "the kernel's socket folder outlived the run"
        assert digests(out) == before
        json.loads((out / "summary.json").read_text())
        json.loads((out / "static.executed.ipynb").read_text())
        assert section_digests(out / "kernel_overhead") == section_before
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(fs)], capture_output=True, timeout=30)


def test_a_file_size_limit_during_sample_generation_keeps_the_previous_bundle(small_bundle, tmp_path):
    """RLIMIT_FSIZE (EFBIG) on `sample --force` over an existing bundle: exit 74 with one 'disk full'
    line naming the file, no staging left, the previous bundle as it was."""
    root = tmp_path / "traces" / "sample"
    shutil.copytree(small_bundle, root)  # what `sample --out root` makes (scale small, seed 0)
    before = section_digests(root)
    cli = Cli(["sample", "--out", str(root), "--force"], tmp_path, limits={resource.RLIMIT_FSIZE: 256 << 10})
    rc = cli.wait(120)
    err = cli.stderr()
    assert rc == DISK_FULL_EXIT, err
    assert "Traceback" not in err
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: disk full: {root.parent}/"), err
    assert errors[0].endswith("(File too large)")
    assert sorted(p.name for p in root.parent.iterdir()) == ["sample"]
    assert section_digests(root) == before


# --------------------------------------------------------------------------------------------- memory


def test_a_run_under_an_address_space_limit_finishes(good_run_under_a_limit):
    """The memory bound of a tiny run: 1.5 GiB of address space (kernel, worker, numpy, matplotlib). The run is
    the module's good run, made under that limit from an empty output folder (every result computed)."""
    out, cli, rc, seen = good_run_under_a_limit
    assert rc == 0, cli.stderr()
    assert "Traceback" not in cli.stderr()
    assert seen["alive"] == [] and seen["lock_free"] and seen["leftovers"] == []
    assert json.loads((out / "summary.json").read_text())["results"]


@pytest.mark.parametrize("mib", [200, 600, 1024])
def test_an_address_space_limit_too_small_to_run_is_refused_in_one_line(tiny_bundle, sections, previous, mib):
    """200 MiB aborts in ZeroMQ, 600 MiB can leave the kernel hung, 1 GiB lost it in 4 runs of 19:
    refused before anything starts."""
    before = tree_state(previous)
    cli = _run(tiny_bundle, previous, sections, limits={resource.RLIMIT_AS: mib << 20})
    try:
        rc = cli.wait(60)
    finally:
        cli.kill_leftovers()
    err = cli.stderr()
    assert rc == 2, err
    assert err == (f"error: the address-space limit (ulimit -v) is {mib} MiB; a notebook run needs at least 1536 MiB "
                   "(below it the kernel can hang or die); raise the limit\n")
    assert cli.seen == set()  # no kernel was started
    assert tree_state(previous) == before


# --------------------------------------------------------------------------------------------- sample


def test_two_sample_generations_into_one_root_take_turns(tmp_path):
    """The second waits for the first (saying so) and reuses its bundle; both exit 0."""
    root = tmp_path / "traces" / "sample"
    first = Cli(["sample", "--out", str(root)], tmp_path)
    (tmp_path / "second").mkdir()
    time.sleep(0.3)
    second = Cli(["sample", "--out", str(root)], tmp_path / "second")
    try:
        assert first.wait(120) == 0, first.stderr()
        assert second.wait(120) == 0, second.stderr()
    finally:
        first.kill_leftovers()
        second.kill_leftovers()
    assert first.stdout().strip() == second.stdout().strip() == str(root)
    for cli in (first, second):
        assert "Traceback" not in cli.stderr() and "error" not in cli.stderr(), cli.stderr()
    assert "another sample generation" in second.stderr() + first.stderr()  # whichever came second said so
    manifest = json.loads((root / "bundle.json").read_text())
    assert manifest["kind"] == "sample" and manifest["scale"] == "small"
    assert sorted(p.name for p in root.parent.iterdir()) == ["sample"]  # no staging, no lock file left


def test_a_sample_generation_that_waits_too_long_says_who_holds_the_root(tmp_path):
    root = tmp_path / "traces" / "sample"
    root.parent.mkdir(parents=True)
    fd = os.open(lock_path(root), os.O_RDWR | os.O_CREAT)  # the root's lock, in this user's lock folder
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.pwrite(fd, b"pid 4242\n", 0)
    try:
        cli = Cli(["sample", "--out", str(root)], tmp_path, env=cli_env(NEUTRINO_AE_SAMPLE_WAIT_S="0.5"))
        rc = cli.wait(60)
    finally:
        os.close(fd)
    err = cli.stderr()
    assert rc == 2, err
    assert f"error: {root}: in use by another sample generation, fetch or run (pid 4242); gave up after waiting" \
        in err, err
    assert "Traceback" not in err and not root.exists()


def test_sigterm_on_sample_leaves_no_staging_and_exits_143(tmp_path):
    root = tmp_path / "traces" / "sample"
    # The toy section's writer runs until stopped, so the signal lands mid-generation however fast the
    # real sections are written (a plain small sample is done in about a second, which raced the signal).
    extra = make_slow_sample_section(tmp_path / "sections")
    cli = Cli(["sample", "--out", str(root)], tmp_path, env=cli_env(NEUTRINO_AE_SECTIONS=str(extra)))
    try:  # the generator builds in ..sample.generating.partial-*, renamed to .sample.generating at the end
        cli.wait_for(lambda: any(root.parent.glob("*.generating*/slow_sample/heartbeat.txt")),
                     label="the slow sample writer under way")
        cli.signal(signal.SIGTERM)
        rc = cli.wait(60)
    finally:
        cli.kill_leftovers()
    assert rc == 143, cli.stderr()
    assert cli.stderr().splitlines()[-1] == "error: terminated" and "Traceback" not in cli.stderr()
    assert sorted(root.parent.iterdir()) == []  # no staging, no bundle, no lock file
