"""The figure process's warm-up done once in a test process: what a figure process imports (matplotlib, the
house style, every registered section's figure module) and its small text figure (fonts loaded), by the
figure process's own functions. A command line run in that process forks its figure process from it, which
then finds them loaded instead of importing them again on every run; what it draws, and how, is unchanged."""

from __future__ import annotations

from neutrino_ae.report.figures import process
from neutrino_ae.report.section import registry


def preload_figures() -> None:
    process._import_for_figures([f"{s.package or s.name}.figures" for s in registry.sections()])
    process._warm_text()
