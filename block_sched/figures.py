"""Figures of the block_sched section: the arrays and parameters of :func:`.analysis.figures` in, matplotlib
figures out (shared style). Each builder is ``fn(arrays, params) -> Figure``, as a figure process calls it."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import MaxNLocator

from neutrino_ae.report.figures.style import (
    FIXED_TITLES,
    MAX_WIDTH_IN,
    PALETTE,
    SMALL_PT,
    boxes,
    interval_bars,
    mark_synthetic,
    style_context,
    tight_figure,
)
from neutrino_ae.sched.slots import lowest_free_slots


def _figure(width: float, height: float):
    """Tight layout (one text-measuring pass) with a strip kept free at the bottom for the synthetic-data
    footer."""
    return tight_figure(width, height)


def _bars(ax, x: np.ndarray, heights: np.ndarray, width: float, color: str, label: str) -> None:
    """``ax.bar`` as one vector artist (same picture): a patch per bar is drawn one by one, about 10 ms per
    hundred bars in each format saved; a bar whose height is NaN is left out, as ``bar`` does."""
    ok = np.isfinite(heights)
    y1 = heights[ok]
    boxes(ax, x[ok] - width / 2, x[ok] + width / 2, np.zeros_like(y1), y1, color, edgecolors="none", label=label)


def per_sm_figure(arrays: dict[str, np.ndarray], params: dict):
    """Scheduling / running per SM, one panel per trace (:func:`.analysis.per_sm_spec`)."""
    panels = params["panels"]
    with style_context(FIXED_TITLES):  # y axis in percent: no offset text for a title to avoid
        fig = _figure(MAX_WIDTH_IN, 2.6 * len(panels) + 0.8)
        axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
        for i, (ax, panel) in enumerate(zip(axes, panels, strict=True)):
            smid = arrays[f"{i}.smid"]
            ratio, reuse = 100 * arrays[f"{i}.ratio"], 100 * arrays[f"{i}.slot_reuse_ratio"]
            x = np.arange(smid.size)
            _bars(ax, x, ratio, 0.85, PALETTE[0], "artifact metric (first-entry FIFO)")
            ax.plot(x, reuse, ls="none", marker=".", ms=4, color=PALETTE[1], label="slot-reuse estimator")
            mean_ratio = 100 * panel["mean_ratio"] if panel["mean_ratio"] is not None else float("nan")
            ax.axhline(mean_ratio, color="black", lw=1, ls="--", label=f"mean {mean_ratio:.1f}%")
            ax.set_ylabel("scheduling / running (%)")
            ax.set_title(f"{panel['label']}: {panel['line']}", fontsize=10)
            step = max(1, smid.size // 16)
            ax.set_xticks(x[::step], [str(s) for s in smid[::step]])
            ax.set_xlim(-0.8, smid.size - 0.2)
            top = np.nanmax(np.r_[ratio, reuse, 1.0])
            ax.set_ylim(0, top * 1.35)  # headroom so the legend sits above the bars
            if not np.nanmax(np.r_[ratio, 0.0]) > 0:
                ax.text(0.5, 0.45, "no dispatch gap measured on any SM", transform=ax.transAxes, ha="center",
                        va="center", fontsize=10, color="dimgrey")
            ax.legend(loc="upper right", ncols=3, frameon=True, framealpha=0.9)
        axes[-1].set_xlabel("SM id")
        fig.suptitle("Block scheduling cost per SM (Sec. 4.5)")
        mark_synthetic(fig, params["synthetic"])
    return fig


def timeline_figure(arrays: dict[str, np.ndarray], params: dict):
    """Block timeline of three SMs, whole and zoomed on the first refills (:func:`.analysis.timeline_spec`)."""
    sms = params["sms"]
    zoom_blocks = params["zoom_blocks"]
    with style_context(FIXED_TITLES):  # y axes are block slots: no offset text for a title to avoid
        fig = _figure(MAX_WIDTH_IN - 0.2, 1.9 * len(sms) + 1.2)  # its y labels reach past the edge
        axes = fig.subplots(len(sms), 2, squeeze=False, gridspec_kw={"width_ratios": [2, 1]})
        # Every SM's slots in one call: the greedy steps over each SM's k-th block together.
        starts = [arrays[f"{info['sm']}.start"] for info in sms]
        ends = [s + arrays[f"{info['sm']}.elapse"] for s, info in zip(starts, sms, strict=True)]
        which = np.repeat(np.arange(len(sms)), [s.size for s in starts])
        all_slots = np.split(lowest_free_slots(which, np.concatenate(starts), np.concatenate(ends)),
                             np.cumsum([s.size for s in starts])[:-1])
        for row, info in enumerate(sms):
            sm = info["sm"]
            start, end, slots = starts[row], ends[row], all_slots[row]
            t0 = start.min()
            # Zoom on the first refills: gaps between a finished block and the next are visible there.
            order = np.sort(end - t0)
            k = min(order.size - 1, zoom_blocks)
            zoom_end = order[k] * 1.02 if order[k] > 0 else 1
            parity = np.arange(start.size) % 2  # k-th block of this SM in index order
            for col, ax in enumerate(axes[row]):
                # The zoom draws only the blocks that start in its range: the others lie beyond its edge.
                shown_here = np.ones(start.size, bool) if col == 0 else (start - t0) <= zoom_end
                for p in (0, 1):
                    m = shown_here & (parity == p)
                    interval_bars(ax, slots[m], (start - t0)[m], (end - start)[m], PALETTE[p * 2])
                ax.set_xlim(0, (end - t0).max() * 1.01 if end.size else 1)
                ax.set_ylim(slots.max() + 0.7, -0.7)
                if col == 0:
                    ax.set_ylabel(f"SM {sm}\nblock slot")
                    total = info["total"]
                    shown = f"first {start.size:,} of {total:,} blocks" if start.size < total else f"{total:,} blocks"
                    ratio = info["ratio"] if info["ratio"] is not None else float("nan")
                    ax.set_title(f"SM {sm}: {shown}, ratio {ratio:.1%}", fontsize=10)
                else:
                    ax.set_xlim(0, zoom_end)
                    ax.set_title(f"zoom: first {k + 1} block ends", fontsize=10)
                    ax.tick_params(labelleft=False)  # the same slots as the full timeline beside it
                ax.grid(axis="y", visible=False)
                # Five or so cycle labels per axis read as well as nine, and each label is text to lay out
                # and draw: the six panels' tick labels are most of this figure's rendering time.
                ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
        # The zoom column's label is short: the long one, centred under that narrow column, reached past the
        # figure's edge, and a figure whose ink touches its edge is drawn twice to be cropped.
        axes[-1][0].set_xlabel("cycles since the SM's first block start")
        axes[-1][1].set_xlabel("cycles (zoom)")
        # Two lines: on one, the title is wider than the figure.
        fig.suptitle(f"{params['label']}: block timeline of {len(sms)} SMs (lowest, median, highest scheduling "
                     "ratio)\ncolours alternate along the SM's blocks in index order")
        mark_synthetic(fig, params["synthetic"])
    return fig


def compare_figure(arrays: dict[str, np.ndarray], params: dict):
    """Left: running cycles per SM; right: scheduling cycles per SM by both estimators (+ ground truth)
    (:func:`.analysis.compare_spec`)."""
    labels = params["labels"]
    x = np.arange(len(labels))
    run = np.array(params["running"], dtype=float)
    sched = np.array(params["scheduling"], dtype=float)
    reuse = np.array(params["slot_reuse"], dtype=float)
    gt = np.array([np.nan if g is None else g for g in params["ground_truth"]], dtype=float)
    synthetic = params["synthetic"]
    with style_context():
        fig = _figure(min(MAX_WIDTH_IN, 1.6 * len(labels) + 3.2), 4.2)
        ax_run, ax_sched = fig.subplots(1, 2)
        bars = ax_run.bar(x, run, 0.6, color=PALETTE[0])
        # truncated as the artifact's line prints it (estimates.py: line_of), not rounded: one number, one value
        ax_run.bar_label(bars, labels=[f"{int(v):,}" for v in run], fontsize=8)
        ax_run.set_xticks(x, labels)
        ax_run.set_ylabel("cycles per SM (mean over SMs)")
        ax_run.set_ylim(0, max(run.max(), 1) * 1.15)
        ax_run.set_title("running")
        has_gt = bool(np.isfinite(gt).any())
        series = [(sched, PALETTE[1], "artifact metric (first-entry FIFO)", None),
                  (reuse, PALETTE[2], "slot-reuse estimator", None)]
        if has_gt:
            series.append((np.nan_to_num(gt), "white", "ground truth (sample model)", "//"))
        w = 0.8 / len(series)
        for i, (vals, colour, name, hatch) in enumerate(series):
            bars = ax_sched.bar(x + (i - (len(series) - 1) / 2) * w, vals, w, color=colour, label=name,
                                hatch=hatch, edgecolor="black" if hatch else colour, linewidth=0.8)
            ax_sched.bar_label(bars, labels=[f"{v / r:.1%}" if r else "" for v, r in zip(vals, run, strict=True)],
                               fontsize=SMALL_PT)
        ax_sched.set_xticks(x, labels)
        ax_sched.set_ylim(0, max(np.nanmax(np.r_[sched, reuse, gt, 1.0]), 1) * 1.45)
        ax_sched.set_title("scheduling (labels: share of running)")
        ax_sched.legend(loc="upper right")
        fig.suptitle("Block scheduling cost: variants compared (Sec. 4.5)")
        mark_synthetic(fig, synthetic)
    return fig
