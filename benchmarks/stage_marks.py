"""Where a per-figure command's time goes: seconds since start at which it forks its figure process,
prints the artifact's line, sends its figures, starts and ends waiting for them, and when each figure
process draws (stderr).

    python -m benchmarks.stage_marks block_sched/block_sched.py <trace.bin> --out DIR

Runs the script in this process (as ``python <script>`` does) with :mod:`neutrino_ae.report.figures.process`
wrapped; nothing else is changed.
"""

from __future__ import annotations

import builtins
import os
import runpy
import sys
import time

T0 = time.perf_counter()


def main(argv: list[str]) -> int:
    from neutrino_ae.report.figures import process as fp

    marks: list[tuple[str, float]] = []

    def mark(name: str) -> None:
        marks.append((name, time.perf_counter() - T0))

    start, send, join, draw = fp.FigureProcess.start.__func__, fp.FigureProcess.send, fp.FigureProcess.join, fp.draw

    def timed_draw(job: fp.FigureJob) -> dict:
        t = time.perf_counter() - T0
        out = draw(job)
        print(f"  [{os.getpid()}] {job.stem}: {t:.2f} -> {time.perf_counter() - T0:.2f}", file=sys.stderr)
        return out

    fp.FigureProcess.start = classmethod(lambda cls, warm=(): (mark("fork"), start(cls, warm))[1])
    fp.FigureProcess.send = lambda self, jobs: (mark("send"), send(self, jobs))[1]
    fp.FigureProcess.join = lambda self: (mark("join-start"), join(self), mark("join-end"))[1]
    fp.draw = timed_draw
    real_print = builtins.print

    def watching_print(*args: object, **kwargs: object) -> None:
        if args and kwargs.get("file") is None and "line" not in dict(marks):  # the first stdout print
            mark("line")
        real_print(*args, **kwargs)

    builtins.print = watching_print
    sys.argv = argv
    try:
        runpy.run_path(argv[0], run_name="__main__")
    except SystemExit:
        pass
    finally:
        builtins.print = real_print
    mark("end")
    print(" ".join(f"{n}={t:.2f}" for n, t in marks), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
