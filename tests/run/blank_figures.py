"""Section analyses whose figures are left undrawn but leave an empty file where each figure's PNG goes.

tests/undrawn_analysis.py names each figure's PNG without writing it; the results cache
(``neutrino_ae.run.runner``) stamps every output file and reuses a result only while they are all
there, so tests of the cache, of a run's summary or of its verdict that never read a figure use
:func:`leave_figures_blank`: the same analysis (``runner.run_section``, the notebook facade), about a
CPU-second less per figure. Through ``monkeypatch`` so it is undone after."""

from __future__ import annotations

from pathlib import Path

import pytest
from undrawn_analysis import undrawn

from neutrino_ae.report.figures import process
from neutrino_ae.report.section import driver


def blank(job) -> dict[str, Path]:
    files = undrawn(job)
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    return files


def leave_figures_blank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "draw", blank)
    monkeypatch.setattr(process, "draw", blank)  # the figure process's (forked: it inherits this)
