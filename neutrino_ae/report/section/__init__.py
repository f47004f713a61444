"""The section contract: what a paper-result folder declares about itself.

Each folder (``block_sched/``, ``dmat/`` ...) is a package whose ``__init__.py`` defines
``SECTION = Section(...)``. Everything else in the suite -- the registry, both notebooks, the
sample generator, collection, the summary and the benchmarks -- reads the folder through that one
object, so adding a paper result is adding a folder.

Entry points are ``"<module>:<function>"`` strings inside the section's own package, imported only
when used, so discovering the sections stays cheap (no pandas or matplotlib at import):

* ``analyze(bundle, out_dir) -> SectionResult``: the analysis of one bundle, for both notebooks
  (``bundle`` is the run's :class:`~neutrino_ae.bundle.context.Bundle`, read once by the runner);
* ``collect(trace_root, ctx) -> None``: how dynamic.ipynb collects the section's traces into
  ``trace_root/<name>/`` with the ``neutrino`` CLI (``ctx`` is a
  :class:`~neutrino_ae.workloads.neutrino.CollectContext`);
* ``sample(root, ctx) -> dict``: writes the section's part of the synthetic sample bundle under
  ``root/<name>/`` and returns its ground truth (``ctx`` is the sample generator's context).

A section on the driver (:mod:`neutrino_ae.report.section.driver`) names ``load``, ``compute`` and ``figures``
instead of ``analyze``, and says what its command line's inputs are (``command_inputs``, ``command``):
the driver is then its ``analyze`` and its command line (``driver.analyzer(section)``,
``driver.command(section)``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.report.claims import AnyClaim


@dataclass(frozen=True)
class Section:
    """One paper result. ``inputs`` are bundle-relative paths or globs (``*``) that must exist;
    ``optional_inputs`` are globs used when present. ``order`` places the section in the paper's
    (and both notebooks') order. ``runtime`` is the wall time measured on a 2-core machine.
    ``static_prose`` / ``dynamic_prose`` are the notebook text under the section's heading;
    ``notebook_figures`` are ``(figure key, caption)`` pairs shown one cell each (else the
    section's cell shows its figures). ``notebook_show`` names the figures (file names such as
    ``"max_mem.png"``) the section's cell shows, in the paper's form: None shows every figure,
    ``()`` none. ``notebook_text`` is how the cell shows the result's summary text: ``"open"``
    (the text is the paper's form, e.g. a table), ``"folded"`` (collapsed under the figures, which
    already show the same numbers) or ``"hidden"``. Full tables are never shown inline: the cell
    links the files."""

    name: str
    title: str
    paper_ref: str
    order: int
    runtime: str
    inputs: tuple[str, ...]
    analyze: str = ""
    optional_inputs: tuple[str, ...] = ()
    collect: str | None = None
    sample: str | None = None
    static_prose: str = ""
    dynamic_prose: str = ""
    notebook_figures: tuple[tuple[str, str], ...] = ()
    notebook_show: tuple[str, ...] | None = None
    notebook_text: str = "open"
    claims: tuple[AnyClaim, ...] = ()  # what the paper claims, checked on every run (report/claims/__init__.py): shape,
    # published-number and ground-truth claims
    # The trace dirs it reads (data["trace_dirs"]) are block_sched/warp_sched timelines: the static
    # notebook exports them for Perfetto beside the figures (run/timelines.py, report/figures/perfetto.py).
    timelines: bool = False
    # What the ptx workload family runs for this section, each stand-in named (dynamic.ipynb with
    # workloads="ptx": shown with the section and recorded in its results, neutrino_ae/workloads/family.py)
    ptx_workloads: str = ""
    # On the driver (neutrino_ae/report/section/driver.py): load(source) -> frames, compute(frames) -> Result,
    # figures(result) -> [Figure]; the command line's positional inputs (a metavar, "..." for several),
    # what they are and whether, without any, it reads the section's folder (False: one must be named).
    load: str = ""
    compute: str = ""
    figures: str = ""
    command_inputs: str = "root"
    command: str = ""
    command_default: bool = True
    package: str = field(default="", compare=False)  # set by the registry: the imported package name
    folder: Path | None = field(default=None, compare=False)  # set by the registry

    def entry(self, which: str) -> Callable[..., Any]:
        """The function behind entry point ``which`` (``analyze``, ``collect``, ``sample``; ``load``,
        ``compute``, ``figures`` for a section on the driver, whose ``analyze`` is
        :func:`neutrino_ae.report.section.driver.analyzer`'s)."""
        spec = getattr(self, which)
        if not spec:
            raise NeutrinoAEError(f"section {self.name} has no {which} entry point")
        module, _, func = spec.partition(":")
        mod = importlib.import_module(f"{self.package or self.name}.{module}")
        return getattr(mod, func)


class NotebookStop(NeutrinoAEError):
    """Stops a notebook cell with one line (no traceback): the message is what the reader should do.

    IPython renders an exception through ``_render_traceback_`` when it has one; papermill then
    reports exactly this line.
    """

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]


class NotebookInputError(NotebookStop):
    """A :class:`NotebookStop` for bad input: a notebook parameter, a path the user gave (a file
    where a folder belongs, a folder below a file), a bundle that cannot be had. ``neutrino-ae
    run`` exits 2 for it, like every command line for bad input; a run that fails later exits 1."""


class NotebookNetworkError(NotebookInputError):
    """The bundle could not be downloaded for the network or the server (a
    :class:`~neutrino_ae.errors.NetworkError`): ``neutrino-ae run`` exits 4 for it, as ``fetch`` does."""
