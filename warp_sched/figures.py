"""Figures of Fig. 13a-d: tables in, matplotlib figures out (shared style)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from neutrino_ae.report.style import PALETTE, interval_bars, mark_synthetic, new_figure, style_context

from .analysis import LastWaveTail, Tail  # noqa: I001


def _figure(width: float, height: float):
    """Constrained layout with a strip kept free at the bottom for the synthetic-data footer."""
    fig = new_figure(width, height, layout="constrained")
    fig.get_layout_engine().set(rect=(0, 0.3 / height, 1, 1 - 0.3 / height))
    return fig

def _timeline_figure(tab: pd.DataFrame, sms: Sequence[int], title: str, synthetic: bool):
    with style_context():
        fig = _figure(10.0, 1.2 + 2.4 * len(sms))
        axes = fig.subplots(len(sms), 1, squeeze=False)[:, 0]
        for ax, sm in zip(axes, sms, strict=True):
            d = tab[tab["smid"] == sm]
            blocks = d["block"].to_numpy()
            # Colour index by order of first appearance on this SM, so neighbours differ.
            ub, first_idx = np.unique(blocks, return_index=True)
            rank = np.empty(ub.size, np.int64)
            rank[np.argsort(d["start"].to_numpy()[first_idx], kind="stable")] = np.arange(ub.size)
            colour_idx = rank[np.searchsorted(ub, blocks)] % len(PALETTE[:7])
            colours = np.array(PALETTE[:7])[colour_idx]
            interval_bars(ax, d["slot"].to_numpy(), d["start"].to_numpy(), (d["end"] - d["start"]).to_numpy(),
                          list(colours), height=0.85, edgecolor="white", linewidth=0.3)
            nslots = int(d["slot"].max()) + 1
            ax.set_ylim(nslots - 0.4, -0.6)
            ax.set_ylabel("warp slot")
            ax.set_title(f"SM {sm}: {ub.size} blocks, {len(d)} warps, {nslots} warp slots used", fontsize=10)
            ax.grid(axis="y", visible=False)
            if nslots > 16:
                ax.set_yticks(np.arange(0, nslots, max(1, nslots // 8)))
        axes[-1].set_xlabel("cycles since the SM's first warp start")
        fig.suptitle(f"{title} (bar colour = block)")
        mark_synthetic(fig, synthetic)
    return fig

def _shade_tail(ax, tail: Tail, wave: LastWaveTail) -> None:
    ax.axvspan(tail.tail_start, tail.kernel_end, color=PALETTE[1], alpha=0.12, lw=0,
               label=f"tail (<{tail.threshold:.0%} SMs busy): {tail.tail_fraction:.1%} of the kernel")
    ax.axvline(tail.tail_start, color=PALETTE[1], lw=1.2, ls="--")
    ax.axvline(wave.start, color=PALETTE[3], lw=1.2, ls=":", label=f"first SM done ({wave.fraction:.1%} left)")
