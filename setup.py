"""Packaging beside pyproject.toml: only ``neutrino_ae`` goes into site-packages.

The section folders (``block_sched/``, ``dmat/``, ...: every top-level folder whose ``__init__.py``
declares a ``SECTION``, the registry's rule) and the two notebooks are shipped as data of the
package, under ``neutrino_ae/_sections/<name>/`` and ``neutrino_ae/_notebooks/``, where the registry
and ``neutrino-ae run`` look when there is no source checkout around the package. An editable
install (``pip install -e .``) copies nothing: it runs from the checkout, sections included.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
NOTEBOOKS = ("static.ipynb", "dynamic.ipynb")


def section_folders(root: Path) -> list[Path]:
    """The registry's rule (neutrino_ae/report/section/registry.py), without importing the package."""
    found = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        init = folder / "__init__.py"
        if init.is_file() and "SECTION" in init.read_text(encoding="utf-8", errors="replace"):
            found.append(folder)
    return found


class BuildPyWithSections(build_py):
    """build_py, plus the section folders and notebooks copied into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # the editable install finds them in the checkout
        package = Path(self.build_lib) / "neutrino_ae"
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo")
        for folder in section_folders(HERE):
            dest = package / "_sections" / folder.name
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(folder, dest, ignore=ignore)
        (package / "_notebooks").mkdir(parents=True, exist_ok=True)
        for name in NOTEBOOKS:
            shutil.copy2(HERE / name, package / "_notebooks" / name)


setup(cmdclass={"build_py": BuildPyWithSections})
