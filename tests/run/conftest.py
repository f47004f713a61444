"""Runs of the public command that several tests of tests/run/ only read, made once per test run
(tests/shared_build.py): a failed run and a partial run after it, both on a copy of the session's good
run of every section (tests/conftest.py ``sample_run``). Tests must not modify them; copy them first
(``faultkit.copy_run``)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from shared_build import build_once, load_process, save_process
from shared_runs import GOOD_SET, PARTIAL_SECTION, run_cli

from tests.reliability.faultkit import copy_run, digests


@pytest.fixture(scope="session")
def typo_run(sample_run, tmp_path_factory) -> SimpleNamespace:
    """A run refused for a typo in ``--sections`` (``nope``), into a copy of the good run's folder::

        neutrino-ae -q run static --trace-root <sample_run.traces> --output-dir <out> --sections nope

    ``.before``: the good run's GOOD_SET digests (as copied); ``.out`` as the failed run left it
    (``static.failed.ipynb`` beside the good run's files); ``.proc`` the finished process."""

    def build(folder: Path) -> None:
        out = copy_run(sample_run.out, folder / "out")
        (folder / "before.json").write_text(json.dumps(digests(out, GOOD_SET)))
        save_process(folder / "proc.json", run_cli(out, sample_run.traces, "--sections", "nope"))

    folder = build_once(tmp_path_factory, "typo-run", build)
    return SimpleNamespace(out=folder / "out", traces=sample_run.traces, proc=load_process(folder / "proc.json"),
                           before=json.loads((folder / "before.json").read_text()))


@pytest.fixture(scope="session")
def partial_run(typo_run, tmp_path_factory) -> SimpleNamespace:
    """A run of one section (PARTIAL_SECTION) into a copy of ``typo_run``'s folder (the good run of every
    section on the same bundle, and the failed run's notebook beside it)::

        neutrino-ae -q run static --trace-root <sample_run.traces> --output-dir <out> --sections kernel_overhead

    ``.out`` as it left it, ``.proc`` the finished process."""

    def build(folder: Path) -> None:
        out = copy_run(typo_run.out, folder / "out")
        save_process(folder / "proc.json", run_cli(out, typo_run.traces, "--sections", PARTIAL_SECTION))

    folder = build_once(tmp_path_factory, "partial-run", build)
    return SimpleNamespace(out=folder / "out", traces=typo_run.traces, proc=load_process(folder / "proc.json"))
