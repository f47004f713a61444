"""Which trace directory names a bare ``.dmat``'s tensors (issue 21 item 2): the newest under ``raw/<fig>/`` by the
time in its name (neutrino_ae/formats/tracedir.py), named in the results and the text."""

from __future__ import annotations

import shutil

from undrawn_analysis import leave_figures_undrawn

from dmat import dmat_figure
from dmat import inputs as dmat_inputs


def test_the_newest_raw_collection_names_the_tensors_and_is_named(tiny_bundle, tmp_path, monkeypatch):
    root = shutil.copytree(tiny_bundle, tmp_path / "bundle")
    raw = root / "dmat" / "raw" / "fig1"
    (jan,) = list(raw.iterdir())
    aug = "Aug" + jan.name[3:]  # the same collection seven months later ("Aug" < "Jan" as strings)
    shutil.copytree(jan, raw / aug)
    assert dmat_inputs.naming_for_dmat(root / "dmat" / "fig1.dmat").trace_dir == raw / aug

    leave_figures_undrawn(monkeypatch)  # the naming is read, not the figure
    res = dmat_figure(root / "dmat" / "fig1.dmat", tmp_path / "out")
    rel = f"dmat/raw/fig1/{aug}"
    assert res.data["naming"]["trace_dir"] == rel
    assert f"; names from trace dir {rel}" in res.text.splitlines()[0]
