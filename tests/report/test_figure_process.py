"""The figure process (neutrino_ae/report/figures/process.py): figures drawn in forked processes are the
ones drawn in-process, a failure is one line after every figure process has ended, and no figure is
written after the command that started them is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.report.figures.process import FigureJob, FigureProcess

REPO = Path(__file__).resolve().parents[2]
HERE = __name__  # this module, as the figure process imports it (it is loaded already when it forks)


def line_figure(arrays: dict, params: dict):
    """A builder: one line plot of ``arrays["y"]``, after ``params["sleep"]`` seconds."""
    from neutrino_ae.report.figures.style import new_figure

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
    from neutrino_ae.report.figures.process import FigureJob, FigureProcess
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


def marked_figure(arrays: dict, params: dict):
    """A builder that leaves ``params["mark"]`` behind as soon as it starts, then draws a line plot."""
    Path(params["mark"]).touch()
    return line_figure(arrays, params)


def _wait_for(path: Path, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def test_a_figure_sent_first_is_drawn_before_the_others_are_sent(tmp_path, monkeypatch):
    """The command sends the figure whose numbers exist first (block_sched's timeline, right after its line)
    and the others later: the first starts drawing without waiting for them."""
    monkeypatch.setenv("NEUTRINO_AE_NO_FORK", "0")
    mark = tmp_path / "first-started"
    with FigureProcess.start() as proc:
        proc.send([FigureJob("early", f"{HERE}:marked_figure", tmp_path, {"y": np.arange(5)},
                             {"title": "early", "mark": str(mark)})])
        assert _wait_for(mark), "the first figure did not start before the second was sent"
        proc.send(_jobs(tmp_path)[1:])
        files = proc.join()
    assert list(files) == ["early.png", "early.svg", "f1.png", "f1.svg", "f2.png", "f2.svg"]  # the order sent
    with pytest.raises(RuntimeError, match="after join"):
        proc.send(_jobs(tmp_path)[:1])


_HELD_IMPORT = """
import pathlib
import time

while not pathlib.Path({release!r}).exists():  # the figure process is still importing until the test says
    time.sleep(0.01)
"""


def test_send_does_not_wait_for_a_figure_process_that_is_still_importing(tmp_path, monkeypatch):
    """A pipe holds 64 KiB; a figure's arrays are often more, and the figure process reads only once its
    imports are done: send hands them to a writer thread and returns."""
    monkeypatch.setenv("NEUTRINO_AE_NO_FORK", "0")
    release = tmp_path / "release"
    (tmp_path / "held_import_for_figures.py").write_text(_HELD_IMPORT.format(release=str(release)))
    monkeypatch.syspath_prepend(str(tmp_path))
    with FigureProcess.start(warm=["held_import_for_figures"]) as proc:
        big = {"y": np.arange(5), "unused": np.zeros(2_000_000)}  # 16 MB to carry

        def sends() -> None:
            proc.send([FigureJob("big", f"{HERE}:line_figure", tmp_path, big, {"title": "big"})])
            proc.send(_jobs(tmp_path)[:1])

        caller = threading.Thread(target=sends, daemon=True)
        caller.start()
        caller.join(30)
        returned = not caller.is_alive()
        release.touch()  # (unblocks a send that waited, so a failure ends instead of hanging)
        caller.join(30)
        assert returned, "send waited for the figure process to finish importing"
        files = proc.join()
    assert list(files) == ["big.png", "big.svg", "f0.png", "f0.svg"]
    assert all(p.is_file() for p in files.values())


_FRESH = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from neutrino_ae.report.figures.process import FigureJob, FigureProcess, draw
    out = sys.argv[1]
    job = lambda where: FigureJob("f", "report.test_figure_process:line_figure", f"{{out}}/{{where}}",
                                  {{"y": np.sin(np.arange(50))}}, {{"title": "a title, with ticks"}})
    proc = FigureProcess.start()
    proc.send([job("forked")])
    proc.join()
    assert "matplotlib" not in sys.modules  # imported in the figure process alone
    draw(job("here"))
    import matplotlib.image, matplotlib.lines
    same = np.array_equal(*(matplotlib.image.imread(f"{{out}}/{{d}}/f.png") for d in ("forked", "here")))
    print(same, "Supported properties" in matplotlib.lines.Line2D.set.__doc__)
""")


def test_the_figure_process_imports_matplotlib_without_set_docstrings_and_draws_the_same_pixels(tmp_path):
    """The figure process imports matplotlib with short ``set()`` docstrings (a third of its import time);
    a fresh command's figure drawn there has the same pixels as one drawn by a plain import, and the command's
    own matplotlib keeps its full docstrings."""
    script = _FRESH.format(tests=str(REPO / "tests"))
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests'}", "NEUTRINO_AE_NO_FORK": "0",
           "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
