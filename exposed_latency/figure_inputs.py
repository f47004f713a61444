"""What each Fig. 12 figure shows, as arrays and JSON parameters (numpy only, no matplotlib): the command line
sends them to a figure process started before the CSVs were read (:mod:`neutrino_ae.report.figure_process`);
the notebook path draws them in its own process. Either way a figure is made from exactly what is listed here.
"""

from __future__ import annotations

from pathlib import Path

from neutrino_ae.report.figure_process import FigureJob

from .fast import SECTION, Measured

FIGURES = f"{__package__}.figures"  # the folder is imported as its package by path


def figure_jobs(m: Measured, out: Path) -> list[FigureJob]:
    """The combined figure, then one per workload: each workload's ratio columns and probes."""
    out = Path(out)
    arrays = {f"{i}.{c}": v for i, w in enumerate(m.workloads) for c, v in w.ratios.items()}
    panels = [{"name": w.name, "probes": w.probes} for w in m.workloads]
    jobs = [FigureJob(SECTION, f"{FIGURES}:combined_figure", out, arrays,
                      {"synthetic": m.synthetic, "panels": panels})]
    for w in m.workloads:
        jobs.append(FigureJob(f"{SECTION}_{w.name}", f"{FIGURES}:workload_figure", out, w.ratios,
                              {"synthetic": m.synthetic, "name": w.name, "probes": w.probes}))
    return jobs
