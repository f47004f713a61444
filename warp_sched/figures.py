"""Figures of Fig. 13a-d: builders ``fn(arrays, params) -> Figure`` (:mod:`neutrino_ae.report.figures.process`;
what they are given is made in :mod:`.figure_inputs`), shared style."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from neutrino_ae.report.figures.style import (
    FIXED_TITLES,
    MAX_WIDTH_IN,
    PALETTE,
    interval_bars,
    mark_synthetic,
    style_context,
    tight_figure,
)

from .analysis import LastWaveTail, Tail  # noqa: I001


def _figure(width: float, height: float):
    """Tight layout (one text-measuring pass) with a strip kept free at the bottom for the synthetic-data
    footer."""
    return tight_figure(width, height)

def timeline_figure(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]):
    """Fig. 13a/13b: warp slots over time on each SM (``arrays``: :func:`.analysis.timeline_columns`;
    ``params``: ``sms``, ``title``, ``synthetic``, ``x_max``, which fixes the x range: 13a and 13b share one)."""
    sms, title, x_max = params["sms"], params["title"], params["x_max"]
    smid = arrays["smid"]
    with style_context(FIXED_TITLES):  # y axes are warp slots: no offset text for a title to avoid
        fig = _figure(MAX_WIDTH_IN, 1.2 + 2.2 * len(sms))
        axes = fig.subplots(len(sms), 1, squeeze=False)[:, 0]
        for ax, sm in zip(axes, sms, strict=True):
            on = smid == sm
            blocks, start, end, slot = arrays["block"][on], arrays["start"][on], arrays["end"][on], arrays["slot"][on]
            # Colour index by order of first appearance on this SM, so neighbours differ.
            ub, first_idx = np.unique(blocks, return_index=True)
            rank = np.empty(ub.size, np.int64)
            rank[np.argsort(start[first_idx], kind="stable")] = np.arange(ub.size)
            colour_idx = rank[np.searchsorted(ub, blocks)] % len(PALETTE[:7])
            colours = np.array(PALETTE[:7])[colour_idx]
            interval_bars(ax, slot, start, end - start, list(colours), height=0.85, edgecolor="white", linewidth=0.3)
            nslots = int(slot.max()) + 1
            ax.set_ylim(nslots - 0.4, -0.6)
            ax.set_ylabel("warp slot")
            ax.set_title(f"SM {sm}: {ub.size} blocks, {int(on.sum())} warps, {nslots} warp slots used", fontsize=10)
            ax.grid(axis="y", visible=False)
            ax.set_xlim(0, (x_max if x_max else max(int(end.max()), 1)) * 1.01)
            if nslots > 16:
                ax.set_yticks(np.arange(0, nslots, max(1, nslots // 8)))
        axes[-1].set_xlabel("cycles since the SM's first warp start")
        fig.suptitle(f"{title} (bar colour = block)")
        mark_synthetic(fig, params["synthetic"])
    return fig


def active_warps_figure(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]):
    """Fig. 13c: active warps over time (``arrays``: the sweep ``t``, ``v``; ``params``: :func:`_tail_params`)."""
    tail, wave = Tail(**params["tail"]), LastWaveTail(**params["wave"])
    t, active = arrays["t"], arrays["v"]
    # Warp and SM counts stay far below 1e6: no y offset text for a title to avoid, so titles stay fixed.
    with style_context(FIXED_TITLES):
        fig = _figure(MAX_WIDTH_IN, 3.6)
        ax = fig.subplots()
        draw_step(ax, t, active, tail.kernel_start, tail.kernel_end, PALETTE[0], 1, "active warps", fill_alpha=0.25)
        _shade_tail(ax, tail, wave)
        ax.set_xlabel(params["xlabel"])
        ax.set_ylabel("active warps (all SMs)")
        ax.set_ylim(0, max(int(active.max()), 1) * 1.3)
        ax.set_xlim(tail.kernel_start, tail.kernel_end)
        ax.legend(loc="upper right", ncols=3)
        ax.set_title(f"Fig. 13c: active warps over time ({params['n_sms']} SMs)")
        mark_synthetic(fig, params["synthetic"])
    return fig


def busy_sms_figure(arrays: Mapping[str, np.ndarray], params: Mapping[str, Any]):
    """Fig. 13d and 13d-sub: busy SMs over ``[lo, hi]`` (``arrays``: the sweep ``t``, ``v``; ``params``:
    :func:`_tail_params` and ``lo``, ``hi``, ``title``)."""
    tail, wave = Tail(**params["tail"]), LastWaveTail(**params["wave"])
    n_sms, threshold, lo, hi = params["n_sms"], tail.threshold, params["lo"], params["hi"]
    with style_context(FIXED_TITLES):
        fig = _figure(MAX_WIDTH_IN, 3.6)
        ax = fig.subplots()
        draw_step(ax, arrays["t"], arrays["v"], lo, hi, PALETTE[2], 1.2, "busy SMs")
        ax.axhline(threshold * n_sms, color="grey", lw=1, ls="-.", label=f"{threshold:.0%} of {n_sms} SMs")
        _shade_tail(ax, tail, wave)
        ax.set_xlim(lo, hi)
        ax.set_ylim(0, n_sms * 1.35)
        ax.set_xlabel(params["xlabel"])
        ax.set_ylabel("SMs with running warps")
        ax.legend(loc="upper right", ncols=2)
        ax.set_title(params["title"])
        mark_synthetic(fig, params["synthetic"])
    return fig


def _shade_tail(ax, tail: Tail, wave: LastWaveTail) -> None:
    ax.axvspan(tail.tail_start, tail.kernel_end, color=PALETTE[1], alpha=0.12, lw=0,
               label=f"tail (<{tail.threshold:.0%} SMs busy): {tail.tail_fraction:.1%} of the kernel")
    ax.axvline(tail.tail_start, color=PALETTE[1], lw=1.2, ls="--")
    ax.axvline(wave.start, color=PALETTE[3], lw=1.2, ls=":", label=f"first SM done ({wave.fraction:.1%} left)")


#: A step curve with more steps than this in view is drawn as its per-column envelope: beyond the
#: figure's pixel width, per-column min and max draw the same picture at a cost that does not grow
#: with the trace (a sweep has two steps per warp).
STEP_COLUMNS = 2000


def step_envelope(t: np.ndarray, v: np.ndarray, lo: int, hi: int,
                  columns: int = STEP_COLUMNS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Column edges over ``[lo, hi]`` and the min and max the step function (``v[i]`` on
    ``[t[i], t[i+1])``, 0 before ``t[0]``; ``t`` ascending) takes within each column."""
    t = np.asarray(t, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    edges = lo + (hi - lo) * np.arange(columns + 1, dtype=np.int64) // columns
    at_start = np.searchsorted(t, edges[:-1], side="right") - 1
    carry = np.where(at_start >= 0, v[np.maximum(at_start, 0)], 0)
    vmin, vmax = carry.copy(), carry.copy()
    a, b = np.searchsorted(t, [lo, hi], side="left")
    if b > a and hi > lo:
        col = np.minimum(np.searchsorted(edges, t[a:b], side="right") - 1, columns - 1)
        first = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
        cols = col[first]
        vmax[cols] = np.maximum(vmax[cols], np.maximum.reduceat(v[a:b], first))
        vmin[cols] = np.minimum(vmin[cols], np.minimum.reduceat(v[a:b], first))
    return edges, vmin, vmax


def draw_step(ax, t: np.ndarray, v: np.ndarray, lo: int, hi: int, color: str, lw: float, label: str,
              fill_alpha: float | None = None) -> None:
    """``ax.step(t, v, where="post")`` over ``[lo, hi]``, as an envelope when it has many steps there;
    ``fill_alpha`` also shades the area under the curve."""
    a, b = np.searchsorted(t, [lo, hi])
    if b - a <= STEP_COLUMNS:
        ax.step(t, v, where="post", color=color, lw=lw, label=label)
        if fill_alpha is not None:
            ax.fill_between(t, v, step="post", color=color, alpha=fill_alpha)
        return
    edges, vmin, vmax = step_envelope(t, v, lo, hi)
    top, bottom = np.r_[vmax, vmax[-1]], np.r_[vmin, vmin[-1]]
    # Rasterised: a per-column envelope is already a picture at pixel resolution, so a vector copy of it
    # holds nothing more, and the figure is saved as PNG only (save_figure) instead of also as SVG.
    ax.step(edges, top, where="post", color=color, lw=lw, label=label, rasterized=True)
    ax.fill_between(edges, bottom, top, step="post", color=color, lw=0, rasterized=True)
    if fill_alpha is not None:
        ax.fill_between(edges, bottom, step="post", color=color, alpha=fill_alpha, lw=0, rasterized=True)

