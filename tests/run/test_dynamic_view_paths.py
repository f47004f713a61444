"""The dynamic notebook shows no folder of this machine, also when the checkout's path has a space (issue 48:
from a clone at ``/tmp/x y``, ``/tmp/x`` was cut out of a path and `` y/third_party/...`` left in the table)."""

from __future__ import annotations

from neutrino_ae.run.dynamic_view import unabsolute


def test_a_path_inside_a_working_folder_with_a_space_is_shown_relative(tmp_path, monkeypatch):
    here = tmp_path / "x y"
    (here / "third_party").mkdir(parents=True)
    monkeypatch.chdir(here)
    text = f"{here}/third_party/cutlass/build: no benchmark binaries; see {here}"
    assert unabsolute(text) == "third_party/cutlass/build: no benchmark binaries; see ."


def test_a_longer_path_that_merely_contains_the_working_folder_is_not_cut(tmp_path, monkeypatch):
    here = tmp_path / "x y"
    here.mkdir()
    monkeypatch.chdir(here)
    shown = unabsolute(f"/elsewhere{here}/tool")
    assert "elsewheretool" not in shown and shown.startswith("…/")  # not cut to /elsewhere + tool
