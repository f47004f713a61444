"""Issue 47 family 3: a kill at any instant leaves one consistent report. A run's set (the executed notebook,
summary.json, summary.md, verdict.json, the section folders, a failed run's files) is published by one rename
of a pointer (neutrino_ae/run/publish.py); these tests kill a publish at every one of its steps, in process
(the step hook raising where a SIGKILL would land) and for real (SIGKILL of the command line), and check after
each that a reader of the documented paths sees one run's set, old or new, and that the next run recovers.

On main b3c272a the two issue examples fail: a SIGKILL between publishing the notebook and removing
``.neutrino-ae.previous`` made the next run put the older set back over the finished one, and a SIGKILL between
writing verdict.json and publishing the notebook left the killed run's verdict beside the previous notebook."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from faultkit import cli_env, copy_run

from neutrino_ae.atomic import write_text
from neutrino_ae.run import publish
from neutrino_ae.run.publish import CURRENT, GEN_PREFIX, Generations, failed_name, unmask_set

NB = "static.executed.ipynb"
FAILED_NB = failed_name(NB)


class Killed(BaseException):
    """Where a SIGKILL would land: nothing of the run after it happens (no handler, no finally in publish)."""


# ------------------------------------------------------------------------------ in process: every step


def _kernel(gen: Path, run_id: str, sections: tuple[str, ...], failed: bool = False) -> None:
    """What the notebook kernel writes into its output_dir (the generation): every file by an atomic rename,
    the previous summary and verdict retired first (run/notebook_setup.py)."""
    (gen / "summary.md").unlink(missing_ok=True)
    (gen / "verdict.json").unlink(missing_ok=True)
    (gen / "summary.json").unlink(missing_ok=True)
    for s in sections:
        (gen / s).mkdir(exist_ok=True)
        write_text(gen / s / "section-run.json", json.dumps({"run_id": run_id, "out": f"{gen}/{s}"}))
        write_text(gen / s / "figure.png", run_id)
    write_text(gen / "summary.json", json.dumps({"run_id": run_id}))
    write_text(gen / "summary.md", f"run {run_id}\n")
    write_text(gen / "verdict.json", json.dumps({"run_id": run_id}))
    write_text(gen / (FAILED_NB if failed else NB), f"run: {run_id}\n")  # publish_notebook unmasks the real one


def _run(out: Path, run_id: str, sections: tuple[str, ...] = ("a", "b"), failed: bool = False) -> None:
    out.mkdir(exist_ok=True)
    gens = Generations(out, NB)
    gen = gens.begin()
    _kernel(gen, run_id, sections, failed)
    if failed:
        gens.fail(gen)
    else:
        unmask_set(gen)
        gens.commit(gen)


def _legacy(out: Path, run_id: str) -> None:
    """A folder as a version before generations left it: the set as plain files and folders."""
    out.mkdir(exist_ok=True)
    _kernel(out, run_id, ("a", "b"))
    (out / "run.log").write_text("log\n")


def _set_of(out: Path) -> dict[str, str | None]:
    """What a reader of the documented paths sees: every file of the set by its run id."""
    seen: dict[str, str | None] = {}
    for name in ("summary.json", "verdict.json"):
        p = out / name
        seen[name] = json.loads(p.read_text())["run_id"] if p.is_file() else None
    p = out / "summary.md"
    seen["summary.md"] = p.read_text().split()[1] if p.is_file() else None
    p = out / NB
    seen[NB] = p.read_text().splitlines()[0].removeprefix("run: ") if p.is_file() else None
    for s in ("a", "b", "c"):
        rec = out / s / "section-run.json"
        seen[s] = json.loads(rec.read_text())["run_id"] if rec.is_file() else None
        if rec.is_file():
            assert (out / s / "figure.png").read_text() == seen[s]
    p = out / FAILED_NB
    seen["failed"] = p.read_text().splitlines()[0].removeprefix("run: ") if p.is_file() else None
    return seen


def _assert_one_set(out: Path, allowed: list[str], failed: tuple[str | None, ...] = (None,)) -> str:
    seen = _set_of(out)
    ids = {v for k, v in seen.items() if k not in ("failed", "c") and v is not None}
    assert len(ids) == 1 and ids <= set(allowed), seen  # one run's set, whole
    assert all(seen[k] is not None for k in ("summary.json", "verdict.json", "summary.md", NB, "a", "b")), seen
    assert seen["failed"] in failed, seen
    for s in ("a", "b", "c"):  # the paths a section's record shows are the published ones
        assert not (out / s).exists() or GEN_PREFIX not in (out / s / "section-run.json").read_text()
    return ids.pop()


def _assert_recovered(out: Path) -> None:
    gens = [p.name for p in out.iterdir() if p.name.startswith(GEN_PREFIX)]
    assert gens == [os.readlink(out / CURRENT)], gens
    assert not [p.name for p in out.iterdir() if ".link-" in p.name or ".tmp-" in p.name or ".adopted-" in p.name]
    assert not (out / publish.PREVIOUS_DIR).exists()
    assert all(p.exists() for p in out.iterdir()), "a link to nothing"


def _steps(monkeypatch, action) -> list[str]:
    """The steps ``action`` passes, in order."""
    seen: list[str] = []
    monkeypatch.setattr(publish, "hook", seen.append)
    action()
    monkeypatch.setattr(publish, "hook", lambda name: None)
    return seen


def _kill_at(monkeypatch, k: int):
    count = iter(range(10**6))

    def hook(name: str) -> None:
        if next(count) == k:
            raise Killed(name)
    monkeypatch.setattr(publish, "hook", hook)


SCENARIOS = {
    # (how the folder is before, the run that is killed, what a reader may see after the kill, failed files)
    "finished run over a finished run": (lambda out: _run(out, "A"), lambda out: _run(out, "B", ("a", "b", "c")),
                                         ["A", "B"], (None,)),
    "failed run over a finished run": (lambda out: _run(out, "A"), lambda out: _run(out, "B", failed=True),
                                       ["A"], (None, "B")),
    "finished run over a failed one": (lambda out: (_run(out, "A"), _run(out, "F", failed=True)),
                                       lambda out: _run(out, "B"), ["A", "B"], (None, "F")),
    "first run over a folder from before": (lambda out: _legacy(out, "L"), lambda out: _run(out, "B"),
                                            ["L", "B"], (None,)),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_kill_at_every_publish_step_leaves_one_set_and_the_next_run_recovers(tmp_path, monkeypatch, scenario):
    before, killed_run, allowed, failed = SCENARIOS[scenario]
    probe = tmp_path / "probe"
    before(probe)
    monkeypatch.setattr(publish, "hook", lambda name: None)
    steps = _steps(monkeypatch, lambda: killed_run(probe))
    assert len(steps) >= 8, steps
    _assert_one_set(probe, allowed[-1:], failed)
    for k, name in enumerate(steps):
        out = tmp_path / f"k{k}"
        monkeypatch.setattr(publish, "hook", lambda name: None)
        before(out)
        _kill_at(monkeypatch, k)
        with pytest.raises(Killed):
            killed_run(out)
        monkeypatch.setattr(publish, "hook", lambda name: None)
        try:
            _assert_one_set(out, allowed, failed)  # a reader right after the kill
            _run(out, "N")  # the next run
            assert _assert_one_set(out, ["N"]) == "N"
            _assert_recovered(out)
        except AssertionError as exc:
            raise AssertionError(f"killed at step {k} ({name}): {exc}") from None


def test_the_legacy_previous_folder_keeps_the_finished_set(tmp_path):
    """What a SIGKILL between publishing the notebook and removing .neutrino-ae.previous left on main: the
    finished set at the top and the older one kept. The finished one stays (main put the older one back)."""
    out = tmp_path / "out"
    _legacy(out, "B")
    keep = out / publish.PREVIOUS_DIR
    keep.mkdir()
    for name, text in (("summary.json", '{"run_id": "A"}'), ("verdict.json", '{"run_id": "A"}'),
                       ("summary.md", "run A\n"), (NB, "run: A\n")):
        (keep / name).write_text(text)
    Generations(out, NB).recover()
    assert _assert_one_set(out, ["B"]) == "B"
    _assert_recovered(out)


def test_a_planted_pointer_is_replaced_not_followed(tmp_path):
    """``.neutrino-ae.current`` is ours only when it names a generation in the folder: a link planted there to
    another folder is never written into, only replaced."""
    out, victim = tmp_path / "out", tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine\n")
    _run(out, "A")
    (out / CURRENT).unlink()
    (out / CURRENT).symlink_to(victim)
    _run(out, "B")
    assert _assert_one_set(out, ["B"]) == "B"
    assert sorted(p.name for p in victim.iterdir()) == ["keep.txt"]


# ------------------------------------------------------------------------------ through the command line


def _cli(out: Path, traces: Path, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "neutrino_ae", "-q", "run", "static", "--trace-root", str(traces),
                             "--output-dir", str(out), "--sections", "kernel_overhead"], cwd=out.parent,
                            env=cli_env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _published_ids(out: Path) -> tuple[str, str, str]:
    """(verdict.json's run id, summary.json's, the notebook's ``run: <id>`` line) at the documented paths."""
    verdict = json.loads((out / "verdict.json").read_text())["run_id"]
    summary = json.loads((out / "summary.json").read_text())["run_id"]
    nb = (out / NB).read_text()
    start = nb.index('"run: ') + len('"run: ')
    return verdict, summary, nb[start:nb.index("\\n", start)]


@pytest.fixture(scope="module")
def good(tiny_bundle, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("good") / "out"
    proc = _cli(out, tiny_bundle)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return out


def _killed_when_the_verdict_changes(out: Path, traces: Path) -> bool:
    """SIGKILL the run the moment the published verdict.json names another run; whether it was seen to."""
    first = json.loads((out / "verdict.json").read_text())["run_id"]
    proc = _cli(out, traces)
    seen = False
    try:
        while proc.poll() is None:
            try:
                now = json.loads((out / "verdict.json").read_text())["run_id"]
            except (OSError, ValueError, KeyError):
                now = None  # main removed it at the start of a run
            if now is not None and now != first:
                os.killpg(proc.pid, signal.SIGKILL)
                seen = True
                break
            time.sleep(0.002)
    finally:
        proc.communicate(timeout=60)
    return seen or json.loads((out / "verdict.json").read_text())["run_id"] != first


def test_a_sigkill_as_the_verdict_changes_leaves_the_verdict_of_the_notebook_beside_it(good, tiny_bundle, tmp_path):
    """Main wrote verdict.json in place before publishing the notebook: killed then, the new verdict sat beside the
    previous notebook. Now the verdict is published with its notebook, by one rename."""
    out = copy_run(good, tmp_path / "out")
    assert _killed_when_the_verdict_changes(out, tiny_bundle)
    verdict, summary, notebook = _published_ids(out)
    assert verdict == summary == notebook
    proc = _cli(out, tiny_bundle)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    verdict2, summary2, notebook2 = _published_ids(out)
    assert verdict2 == summary2 == notebook2 != verdict


def test_what_a_kill_left_on_main_keeps_the_finished_set(good, tiny_bundle, tmp_path):
    """The issue's first example, through the command line: main killed between publishing the notebook and
    removing ``.neutrino-ae.previous`` left the finished set at the top and an older one kept; its next run put
    the older one back over the finished one (and, failing, published it)."""
    out = tmp_path / "out"
    shutil.copytree(good, out, symlinks=False, ignore=shutil.ignore_patterns(".neutrino-ae.*"))  # plain files
    finished = _published_ids(out)
    keep = out / publish.PREVIOUS_DIR
    keep.mkdir()
    for name in ("summary.json", "verdict.json"):
        (keep / name).write_text(json.dumps({"run_id": "older"}))
    (keep / "summary.md").write_text("older\n")
    (keep / NB).write_text('{"cells": [], "x": "run: older\\n"}')
    proc = subprocess.run([sys.executable, "-m", "neutrino_ae", "-q", "run", "static", "--trace-root",
                           str(tiny_bundle), "--output-dir", str(out), "--sections", "nope"], cwd=tmp_path,
                          env=cli_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert _published_ids(out) == finished
    assert not keep.exists()


@pytest.mark.parametrize("where", ["pointer-made", "switched"])
def test_a_real_sigkill_at_the_commit_leaves_one_set_and_the_next_run_recovers(good, tiny_bundle, tmp_path, where):
    """A real SIGKILL of ``neutrino-ae run`` just before and just after the pointer's rename (the issue's
    first example: killed after the notebook was published, before the previous set was let go)."""
    out = copy_run(good, tmp_path / "out")
    old = _published_ids(out)
    proc = _cli(out, tiny_bundle, NEUTRINO_AE_KILL_AT=where)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL, err
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    now = _published_ids(out)
    assert len(set(now)) == 1 and ((now == old) == (where == "pointer-made")), (old, now)
    proc = _cli(out, tiny_bundle)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    after = _published_ids(out)
    assert len(set(after)) == 1 and after != now
    gens = sorted(p.name for p in out.iterdir() if p.name.startswith(GEN_PREFIX))
    assert gens == [os.readlink(out / CURRENT)]
    shutil.rmtree(out)
