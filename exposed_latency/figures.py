"""Fig. 12 drawn: stacked Neutrino parts beside Nsight Compute, normalised to the original (shared style)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from neutrino_ae.report.figures import style

from .analysis import PAPER_REF, PARTS, _has_unattributed

WORKLOAD_LABELS = {"attn": "FlashAttn-2 (Triton)", "gmm": "Group GEMM (Triton)", "conv": "Conv2D (CUTLASS)",
                   "gemm": "GEMM (CUTLASS)"}


PART_COLORS = {"kernel": style.NEUTRINO_KERNEL_COLOR, "epilogue": style.NEUTRINO_EPILOGUE_COLOR,
               "prologue": style.NEUTRINO_PROLOGUE_COLOR}

# NCU bars taller than this many times the largest Neutrino bar are drawn cut (see _draw_panel).
BREAK_FACTOR = 6.0

def _draw_panel(ax: Axes, name: str, r: pd.DataFrame, value_fontsize: float = 9.0) -> None:
    """NCU bar and stacked Neutrino bar per probe, labelled ``1.23x``.

    When Nsight Compute is far slower than Neutrino (e.g. 200x vs 9x), a linear axis would flatten
    the Neutrino bars and hide their split, so the axis is cut at ``BREAK_FACTOR`` times the
    largest Neutrino bar: taller NCU bars are drawn clipped, with a white break mark and their
    true value written inside.
    """
    x = np.arange(len(r))
    width = 0.36
    ncu_vals = r["ncu_ratio"].to_numpy()
    stacked = sum(r[f"{p}_height"].to_numpy() for p in (*PARTS, "unattributed"))
    neutrino_top = float(np.nanmax(np.r_[stacked, r["neutrino_ratio"], 1.0]))
    measured = ~np.isnan(ncu_vals)
    ncu_top = float(ncu_vals[measured].max()) if measured.any() else 0.0
    cut = ncu_top > BREAK_FACTOR * neutrino_top
    ylim = neutrino_top * 1.6 if cut else max(ncu_top, neutrino_top) * 1.18
    clipped = cut & measured & (np.nan_to_num(ncu_vals) > ylim)
    ncu = ax.bar(x - width / 2, np.minimum(np.nan_to_num(ncu_vals), ylim), width, color=style.NCU_COLOR,
                 label="Nsight Compute")
    ax.bar_label(ncu, labels=["" if c else (f"{v:.2f}x" if m else "n/a")
                              for v, c, m in zip(ncu_vals, clipped, measured, strict=True)],
                 padding=2, fontsize=value_fontsize)
    for xi, v in zip(x[clipped], ncu_vals[clipped], strict=True):
        y = ylim * 0.9
        for dy in (-0.012, 0.012):
            ax.plot([xi - width / 2 - 0.02, xi + 0.02], [y + (dy - 0.02) * ylim, y + (dy + 0.02) * ylim],
                    color="white", linewidth=2.5, clip_on=False, zorder=3)
        ax.text(xi - width / 2, ylim * 0.8, f"{v:.2f}x", rotation=90, ha="center", va="top", color="white",
                fontsize=value_fontsize, fontweight="bold", zorder=4)
    bottom = np.zeros(len(r))
    top = None
    show_un = _has_unattributed(r)
    for part in (*PARTS, "unattributed"):
        h = r[f"{part}_height"].to_numpy()
        if part == "unattributed" and not show_un:
            continue
        kw: dict[str, Any] = ({"color": "white", "edgecolor": "#808080", "hatch": "///"} if part == "unattributed"
                              else {"color": PART_COLORS[part]})
        top = ax.bar(x + width / 2, h, width, bottom=bottom, label=f"Neutrino ({part})", **kw)
        bottom = bottom + h
    # The label shows the measured ratio (the stacked sum can differ from it by rounding).
    ax.bar_label(top, labels=[f"{v:.2f}x" for v in r["neutrino_ratio"]], padding=2, fontsize=value_fontsize)
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle=":")
    ax.set_xticks(x, r["probe"], rotation=0 if len(r) <= 4 else 30, ha="center" if len(r) <= 4 else "right")
    ax.set_ylabel("time / original" + (" (axis cut)" if cut else ""))
    ax.set_title(WORKLOAD_LABELS.get(name, name))
    ax.set_ylim(0, ylim)
    ax.grid(axis="x", visible=False)

def _legend_handles(any_unattributed: bool) -> list[Patch]:
    handles = [Patch(color=style.NCU_COLOR, label="Nsight Compute")]
    handles += [Patch(color=PART_COLORS[p], label=f"Neutrino ({p})") for p in PARTS]
    if any_unattributed:
        handles.append(Patch(facecolor="white", edgecolor="#808080", hatch="///", label="Neutrino (unattributed)"))
    return handles

def _reserve_footer(fig) -> None:
    # A strip at the bottom for the synthetic-data footer, which the layout engine does not know about.
    strip = style.FOOTER_STRIP_IN / fig.get_figheight()
    fig.get_layout_engine().set(rect=(0, strip, 1, 1 - strip))

def draw_workload(name: str, r: pd.DataFrame, synthetic: bool):
    with style.style_context():
        fig = style.new_figure(min(style.MAX_WIDTH_IN, max(6.0, 1.1 * len(r) + 3.0)), 4.6, layout="constrained")
        _reserve_footer(fig)
        ax = fig.add_subplot(1, 1, 1)
        _draw_panel(ax, name, r)
        # An axes title (not suptitle) so the legend to the right cannot run into it.
        ax.set_title(f"{PAPER_REF}: exposed latency, {WORKLOAD_LABELS.get(name, name)}")
        fig.legend(handles=_legend_handles(_has_unattributed(r)), loc="outside right upper", frameon=False,
                   fontsize=8.5)
        style.mark_synthetic(fig, synthetic)
    return fig

def draw_combined(panels: Sequence[tuple[str, pd.DataFrame]], synthetic: bool):
    n = len(panels)
    ncols = 2 if n > 2 else n
    nrows = int(np.ceil(n / ncols))
    with style.style_context():
        fig = style.new_figure(style.MAX_WIDTH_IN, 3.0 * nrows + 1.2, layout="constrained")
        _reserve_footer(fig)
        axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
        for ax, (name, r) in zip(axes, panels, strict=False):
            _draw_panel(ax, name, r, value_fontsize=8.5)
        for ax in axes[n:]:
            ax.set_visible(False)
        any_un = any(_has_unattributed(r) for _, r in panels)
        # Above the panels, its title the figure's: at the notebook's width a legend at the right would
        # squeeze them, and one below would meet the synthetic-data footer.
        fig.legend(handles=_legend_handles(any_un), loc="outside upper center", ncols=4, frameon=False,
                   title=f"{PAPER_REF}: exposed latency, normalised to the un-profiled kernel",
                   title_fontsize=matplotlib.rcParams["figure.titlesize"])
        style.mark_synthetic(fig, synthetic)
    return fig


def _ratios_frame(probes: Sequence[str], columns: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """A ratios table (:func:`.analysis.ratios`' columns) from :func:`.analysis.ratio_columns`' arrays."""
    return pd.DataFrame({"probe": list(probes), **columns})


def workload_figure(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]):
    """The figure process's builder (:mod:`neutrino_ae.report.figures.process`): :func:`draw_workload`."""
    return draw_workload(params["name"], _ratios_frame(params["probes"], arrays), params["synthetic"])


def combined_figure(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]):
    """The figure process's builder: :func:`draw_combined` of every workload's panel."""
    panels = []
    for i, p in enumerate(params["panels"]):
        cols = {k.split(".", 1)[1]: v for k, v in arrays.items() if k.split(".", 1)[0] == str(i)}
        panels.append((p["name"], _ratios_frame(p["probes"], cols)))
    return draw_combined(panels, params["synthetic"])

