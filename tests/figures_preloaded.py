"""The figure process's imports done once in a test process: matplotlib, the house style and every section's
figure module, and a text drawn (fonts loaded). A command line run in that process forks its figure process
from it, which then finds them loaded instead of importing them again on every run; what it draws, and how,
is unchanged."""

from __future__ import annotations

import importlib

SECTIONS = ("block_sched", "dmat", "exposed_latency", "kernel_overhead", "max_mem", "warp_sched")


def preload_figures() -> None:
    for name in ("matplotlib.figure", "matplotlib.backends.backend_agg", "neutrino_ae.report.figures.style",
                 *(f"{section}.figures" for section in SECTIONS)):
        importlib.import_module(name)
    from neutrino_ae.report.figures.style import new_figure, style_context

    with style_context():
        fig = new_figure(2.0, 1.0)
        fig.add_subplot(1, 1, 1).set_title("fonts 0.5x")
        fig.canvas.draw()
