"""collect_args={"dmat": ["--figures", ...]} picks which DMAT figures a GPU run collects (each takes minutes)."""

from __future__ import annotations

import pytest

from dmat import collect as dmat_collect
from neutrino_ae.workloads.neutrino import CollectContext, CollectError


def test_figures_named_in_collect_args_are_the_ones_collected(tmp_path, monkeypatch):
    ran = []

    def fake_run(argv, _stdin, dest, *args, **kwargs):
        ran.append(argv[argv.index("-k") + 1])
        raise CollectError("stop after the first command")

    monkeypatch.setattr(dmat_collect, "run_neutrino", fake_run)
    ctx = CollectContext(extra_args={"dmat": ["--figures", "fig10b"]})
    with pytest.raises(CollectError):
        dmat_collect.collect(tmp_path, ctx)
    assert ran == ["flash"]  # fig10b's keyword, not fig1's "attn"
    assert not (tmp_path / "dmat").exists()  # a failed collection leaves no half-filled folder


@pytest.mark.parametrize("args, figures", [([], None), (["--figures", "fig1,fig10c"], ["fig1", "fig10c"])])
def test_figures_from_args(args, figures):
    assert dmat_collect.figures_from_args(args) == figures


@pytest.mark.parametrize("args, message", [
    (["--figures", "fig2"], "unknown figure"),
    (["--models", "x"], "unknown argument"),
])
def test_bad_figure_arguments_are_one_line_errors(args, message):
    with pytest.raises(CollectError, match=message):
        dmat_collect.figures_from_args(args)
