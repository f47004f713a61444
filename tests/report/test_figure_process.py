"""The figure process (neutrino_ae/report/figure_process.py): figures drawn in forked processes are the
ones drawn in-process, a failure is one line after every figure process has ended, and no figure is
written after the command that started them is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.report.figure_process import FigureJob, FigureProcess

REPO = Path(__file__).resolve().parents[2]
HERE = __name__  # this module, as the figure process imports it (it is loaded already when it forks)


def line_figure(arrays: dict, params: dict):
    """A builder: one line plot of ``arrays["y"]``, after ``params["sleep"]`` seconds."""
    from neutrino_ae.report.style import new_figure

    time.sleep(params.get("sleep", 0))
    if params.get("fail"):
        raise ValueError(params["fail"])
    fig = new_figure(4, 3)
    fig.add_subplot().plot(arrays["y"])
    fig.suptitle(params["title"])
    return fig


def _jobs(out: Path, **params) -> list[FigureJob]:
    return [FigureJob(f"f{i}", f"{HERE}:line_figure", out, {"y": np.arange(10) * (i + 1)},
                      {"title": f"figure {i}", **params}) for i in range(3)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie has ended
        return fh.read().split(")")[-1].split()[0] != "Z"


@pytest.mark.parametrize("no_fork", ["0", "1"])
def test_forked_and_in_process_figures_are_the_same_files(tmp_path, monkeypatch, no_fork):
    monkeypatch.setenv("NEUTRINO_AE_NO_FORK", no_fork)
    with FigureProcess.start() as proc:
        assert (proc._pid is None) == (no_fork == "1")
        proc.send(_jobs(tmp_path / no_fork))
        files = proc.join()
    assert list(files) == ["f0.png", "f0.svg", "f1.png", "f1.svg", "f2.png", "f2.svg"]  # the jobs' order
    assert all(p.parent == tmp_path / no_fork and p.stat().st_size > 1000 for p in files.values())


def test_same_pixels_from_the_figure_process_as_in_process(tmp_path, monkeypatch):
    import matplotlib.image

    for no_fork in ("0", "1"):
        monkeypatch.setenv("NEUTRINO_AE_NO_FORK", no_fork)
        with FigureProcess.start() as proc:
            proc.send(_jobs(tmp_path / no_fork)[:2])
            proc.join()
    for name in ("f0.png", "f1.png"):
        forked, here = (matplotlib.image.imread(tmp_path / d / name) for d in ("0", "1"))
        assert np.array_equal(forked, here)


def test_a_failing_figure_is_one_error_after_the_others_have_ended(tmp_path):
    jobs = _jobs(tmp_path)
    jobs[0] = FigureJob("f0", f"{HERE}:line_figure", tmp_path, {"y": np.arange(3)}, {"title": "x", "fail": "no room"})
    jobs[2] = FigureJob("f2", f"{HERE}:line_figure", tmp_path, {"y": np.arange(3)}, {"title": "late", "sleep": 1.0})
    with FigureProcess.start() as proc, pytest.raises(NeutrinoAEError) as err:
        proc.send(jobs)
        proc.join()
    assert str(err.value) == "drawing a figure failed: f0: no room"
    assert (tmp_path / "f2.png").is_file()  # the slow one had finished: nothing is still writing
    assert not (tmp_path / "f0.png").exists()


def test_leaving_before_sending_ends_the_figure_process(tmp_path):
    with pytest.raises(KeyError), FigureProcess.start() as proc:  # noqa: PT012 - the error comes before send
        pid = proc._pid
        raise KeyError("the trace was bad")
    assert pid is not None and not _alive(pid)


_KILLED = textwrap.dedent("""
    import sys, time
    import numpy as np
    sys.path.insert(0, {tests!r})
    from report.test_figure_process import line_figure  # noqa: F401 - the builder, imported before the fork
    from neutrino_ae.report.figure_process import FigureJob, FigureProcess
    proc = FigureProcess.start()
    out = sys.argv[1]
    proc.send([FigureJob(f"s{{i}}", "report.test_figure_process:line_figure", out, {{"y": np.arange(4)}},
                         {{"title": "slow", "sleep": 3.0}}) for i in range(2)])
    print(proc._pid, flush=True)
    time.sleep(60)
""")


def test_a_command_killed_while_figures_draw_leaves_no_figure_process_writing(tmp_path):
    script = _KILLED.format(tests=str(REPO / "tests"))
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests'}", "NEUTRINO_AE_NO_FORK": "0"}
    cmd = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        figure_pid = int(cmd.stdout.readline())
        time.sleep(0.5)
        cmd.send_signal(signal.SIGKILL)  # no handler, no clean-up in the command
        cmd.wait(10)
        deadline = time.monotonic() + 5
        while _alive(figure_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(figure_pid)
        time.sleep(3.5)  # past the figures' sleep: a process still drawing would have written by now
        assert list(tmp_path.iterdir()) == []
    finally:
        if cmd.poll() is None:
            cmd.kill()
