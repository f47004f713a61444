"""The paper sections, discovered: the only code that knows which folders are sections.

A section is a folder beside ``neutrino_ae/`` in the source checkout (installed from a wheel, the
copies shipped in ``neutrino_ae/_sections/``; or in a folder named by ``$NEUTRINO_AE_SECTIONS``,
``os.pathsep``-separated, searched too) whose ``__init__.py`` defines ``SECTION``, a
:class:`~neutrino_ae.report.section.Section`. Folders are imported as packages by their path, so
nothing edits ``sys.path``; the result is ordered by ``Section.order``.

>>> from neutrino_ae.report.section import registry
>>> registry.names()       # by Section.order: the paper's (and the notebooks'); a folder added later follows
('block_sched', 'dmat', 'kernel_overhead', 'max_mem', 'exposed_latency', 'warp_sched')

Everything that needs the list of sections reads it here (docs/DESIGN.md, "Adding a section").
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from neutrino_ae.errors import InputError, NeutrinoAEError
from neutrino_ae.logs import claim
from neutrino_ae.report.command.layout import checkout_root
from neutrino_ae.report.section import Section

#: The section folders shipped inside the package by a wheel build (setup.py).
BUNDLED_SECTIONS = Path(__file__).resolve().parents[2] / "_sections"
#: The checkout holding the package and the section folders; installed from a wheel (no checkout),
#: the package's own copy of the section folders.
REPO_ROOT = checkout_root() or BUNDLED_SECTIONS
EXTRA_ROOTS_ENV = "NEUTRINO_AE_SECTIONS"


def search_roots() -> list[Path]:
    extra = [Path(p) for p in os.environ.get(EXTRA_ROOTS_ENV, "").split(os.pathsep) if p]
    return [REPO_ROOT, *extra]


def _declares_section(folder: Path) -> bool:
    init = folder / "__init__.py"
    try:
        return init.is_file() and "SECTION" in init.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def import_folder(folder: Path) -> object:
    """Import ``folder`` as the top-level package named after it (by its path, not ``sys.path``)."""
    name = folder.name
    init = (folder / "__init__.py").resolve()
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == init:
        return loaded
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(folder.resolve())])
    if spec is None or spec.loader is None:
        raise NeutrinoAEError(f"{folder}: cannot be imported as a package")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


@cache
def _discover(roots: tuple[Path, ...]) -> tuple[Section, ...]:
    found: dict[str, Section] = {}
    for root in roots:
        if not root.is_dir():
            continue
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
            if folder.name in found or not _declares_section(folder):
                continue
            section = getattr(import_folder(folder), "SECTION", None)
            if not isinstance(section, Section):
                continue
            if section.name != folder.name:
                raise NeutrinoAEError(f"{folder}/__init__.py: SECTION.name is {section.name!r}, not the folder name")
            found[section.name] = dataclasses.replace(section, package=folder.name, folder=folder.resolve())
            claim(folder.name)  # its modules' logging.getLogger(__name__) reaches the console and run.log
    return tuple(sorted(found.values(), key=lambda s: (s.order, s.name)))


def sections() -> tuple[Section, ...]:
    """Every section, in paper order."""
    return _discover(tuple(search_roots()))


def names() -> tuple[str, ...]:
    return tuple(s.name for s in sections())


def get(name: str) -> Section:
    """The section called ``name``; an unknown name raises a one-line InputError listing the valid ones."""
    for s in sections():
        if s.name == name:
            return s
    raise InputError(None, f"unknown section {name!r}; valid sections: {', '.join(names())}")


def section_module(name: str, module: str) -> object:
    """Module ``module`` of section ``name``'s package (for benchmarks and tools that drive a
    section's code directly; the folders themselves never import each other)."""
    import importlib

    section = get(name)
    return importlib.import_module(f"{section.package}.{module}")


def parse_names(value: str | Iterable[str] | None) -> list[str]:
    """Normalise a ``sections`` parameter: None/"all" -> all; a comma/space separated string or a
    list of names -> those names in registry order (duplicates dropped). Unknown names raise."""
    all_names = names()
    if value is None:
        return list(all_names)
    if isinstance(value, str):
        items = [v for v in value.replace(",", " ").split() if v]
        if items == ["all"]:
            return list(all_names)
    else:
        items = [str(v) for v in value]
    for item in items:
        get(item)
    return [n for n in all_names if n in items]
