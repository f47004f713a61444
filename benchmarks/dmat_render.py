"""The DMAT figure's own render time on a raw trace: the figure job our command sends to its figure process
(:func:`dmat.analysis.figures`), drawn and saved again in a process that has matplotlib imported already.

    python -m benchmarks.dmat_render <trace.bin> [--repeat 3]

Prints ``render_s <best seconds>``: building the figure and writing its PNG (``save_figure_files``), not
importing matplotlib (our command imports it in its figure process while the trace is read) nor binning.
:mod:`benchmarks.speed` adds it to the DMAT row's target (ours <= 2 x the numpy floor + this).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from neutrino_ae.report.figures.process import FigureJob, draw


def render_seconds(trace: str, repeat: int = 3) -> float:
    """Best of ``repeat`` draws of the trace's DMAT figure job, after one untimed run of the section."""
    from dmat import SECTION
    from neutrino_ae.report.section import driver

    with tempfile.TemporaryDirectory(prefix="dmat-render-") as tmp:
        source = driver.source_of([trace], {}, Path(tmp) / "run")
        (result,) = driver.compute(SECTION, source).values()
        (fig,) = SECTION.entry("figures")(result)  # the job the command line sends
        job = FigureJob(fig.stem, f"dmat.{fig.builder}", Path(tmp) / "run", fig.arrays, fig.params)
        draw(job)  # once, untimed: warms matplotlib
        best = float("inf")
        for i in range(repeat):
            t0 = time.perf_counter()
            draw(FigureJob(job.stem, job.builder, Path(tmp) / f"r{i}", job.arrays, job.params))
            best = min(best, time.perf_counter() - t0)
    return best


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(f"render_s {render_seconds(a.trace, a.repeat):.4f}")
