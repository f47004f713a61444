"""The toy's figure builder (run in the figure process)."""

from __future__ import annotations

from typing import Any

from neutrino_ae.report.figures.style import new_figure


def bars(arrays: dict[str, Any], params: dict[str, Any]) -> Any:
    fig = new_figure(3.0, 2.0)
    ax = fig.add_subplot(1, 1, 1)
    ax.bar(range(len(arrays["counts"])), arrays["counts"])
    ax.set_title(params["title"])
    return fig
