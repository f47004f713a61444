"""Sec. 4.5's comparison figure labels each running bar with the number the artifact's line prints:
the mean truncated to an integer, as ``block_sched/estimates.py: line_of`` does (issue 37 item 8: the bar
said 75,265 where the line said 75264)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

from block_sched.estimates import line_of  # noqa: E402
from block_sched.figures import compare_figure  # noqa: E402


def test_running_bar_label_is_the_lines_number():
    line, mean_running, _ = line_of(8, np.array([75264, 75265, 75264, 75265, 75265, 75264, 75265, 75265]),
                                    np.array([10] * 8))
    assert mean_running == 75264.625 and "Running:75264 " in line
    fig = compare_figure({}, {"labels": ["a"], "running": [mean_running], "scheduling": [10.0],
                              "slot_reuse": [9.0], "ground_truth": [None], "synthetic": False})
    ax_run = fig.axes[0]
    labels = [t.get_text() for t in ax_run.texts]
    assert labels == ["75,264"], labels
