"""Fig. 11 drawn: probe memory vs the workload's peak (shared style)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from neutrino_ae.report.figures import style

from .analysis import PAPER_REF, Entry, _models_probes, human_bytes, workload_peaks

WORKLOAD_COLOR = "#404040"

def _byte_ticks(lo: float, hi: float) -> list[float]:
    """Powers of 1024 and their x4/x16/x64/x256 steps, thinned to at most ~8 ticks."""
    ticks = [1024.0 ** k * m for k in range(7) for m in (1, 4, 16, 64, 256)]
    ticks = [t for t in ticks if lo <= t <= hi]
    step = max(1, int(np.ceil(len(ticks) / 8)))
    return ticks[::step]

def figure(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]):
    """The figure process's builder (:mod:`neutrino_ae.report.figures.process`): :func:`draw` of the entries
    in ``params`` (:func:`.figure_inputs.figure_job`)."""
    entries = [Entry(e["model"], e["probe"], "", probe_mem_max=e["probe_mem_max"], workload_max=e["workload_max"])
               for e in params["entries"]]
    return draw(entries, params["synthetic"])


def draw(entries: Sequence[Entry], synthetic: bool):
    """Grouped bars on a log axis: per model one bar per probe plus the workload's own peak."""
    models, probes = _models_probes(entries)
    by_key = {(e.model, e.probe): e for e in entries}
    peaks = workload_peaks(entries)
    series = [(p, [by_key[(m, p)].probe_mem_max if (m, p) in by_key else None for m in models], color)
              for p, color in zip(probes, style.PALETTE * 4, strict=False)]
    series.append(("workload peak", [peaks.get(m) for m in models], WORKLOAD_COLOR))
    values = [v for _, vals, _ in series for v in vals if v]
    with style.style_context():
        fig = style.new_figure(min(style.MAX_WIDTH_IN, max(6.0, 0.8 * len(models) + 2.0)), 5.0, layout="constrained")
        # Keep a strip at the bottom free for the synthetic-data footer.
        fig.get_layout_engine().set(rect=(0, 0.035, 1, 0.965))
        ax = fig.add_subplot(1, 1, 1)
        x = np.arange(len(models))
        width = 0.84 / len(series)
        for k, (name, vals, color) in enumerate(series):
            pos = x - 0.42 + width * (k + 0.5)
            heights = np.array([v if v else np.nan for v in vals], dtype=float)
            bars = ax.bar(pos, heights, width, label=name, color=color,
                          hatch="//" if name == "workload peak" else None, edgecolor="white", linewidth=0.5)
            ax.bar_label(bars, labels=[human_bytes(v) if v else "" for v in vals], rotation=90, fontsize=style.SMALL_PT,
                         padding=2)
            for xi, v in zip(pos, vals, strict=True):
                if not v:
                    ax.text(xi, 1.0, "n/a", rotation=90, fontsize=style.SMALL_PT, ha="center", va="bottom",
                            color="#a00000")
        ax.set_yscale("log")
        lo = min(values) / 4 if values else 1.0
        hi = max(values) * 24 if values else 1024.0  # headroom for the rotated value labels
        ax.set_ylim(lo, hi)
        ax.yaxis.set_major_locator(FixedLocator(_byte_ticks(lo, hi)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: human_bytes(v)))
        ax.yaxis.set_minor_formatter(NullFormatter())
        # "llama8b-bs128" -> two lines, so long model names never run into each other.
        ax.set_xticks(x, [m.replace("-bs", "\nbs", 1) for m in models])
        ax.set_ylabel("memory (log scale)")
        ax.set_title(f"{PAPER_REF}: maximum probe memory vs. workload peak memory")
        ax.grid(axis="x", visible=False)
        # Above the axes, one row: at the notebook's width a legend at the right would take a third of it.
        fig.legend(loc="outside upper center", ncols=len(series), frameon=False)
        style.mark_synthetic(fig, synthetic)
    return fig
