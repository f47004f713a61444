"""What both notebook builders share: cell-text helpers, the committed text, and the --check CLI."""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

import nbformat


def md(text: str) -> str:
    """Cell source from an indented triple-quoted block."""
    return textwrap.dedent(text).strip("\n")


# The first code cell of both notebooks. It must run in any Jupyter kernel, so it uses only the
# standard library: a kernel without this project (or its dependencies) stops here with one line
# saying which kernel to pick or the one command that installs the project into this kernel.
KERNEL_CHECK = md("""
    # Kernel check (standard library only). Colab or another hosted Jupyter without this project:
    # set install_here = True and run this cell once (pip-installs this repository into this kernel).
    import importlib.util
    import os
    import subprocess
    import sys

    install_here = False
    if install_here and os.path.isfile("pyproject.toml"):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", "."], check=True)
        importlib.invalidate_caches()
    missing = [m for m in ("neutrino_ae", "numpy", "pandas", "matplotlib") if importlib.util.find_spec(m) is None]
    if missing:
        class KernelLacksProject(Exception):
            def _render_traceback_(self):
                return [f"KernelLacksProject: {self}"]
        here = os.getcwd() if os.path.isfile("pyproject.toml") else "<the repository root>"
        raise KernelLacksProject(
            f"this kernel ({sys.executable}) cannot import {', '.join(missing)}: pick the kernel 'neutrino-ae' "
            "(after `make setup && .venv/bin/python -m ipykernel install --user --name neutrino-ae`), "
            f"or install the project into this kernel with `{sys.executable} -m pip install -e {here}` "
            "(on Colab: set install_here = True above)")
""")


def notebook_text(cells: list[nbformat.NotebookNode]) -> str:
    """The notebook exactly as committed: no outputs, a python3 kernelspec, validated."""
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    nbformat.validate(nb)
    return nbformat.writes(nb) + "\n"


def celled_sections(text: str) -> list[str]:
    """The sections a committed notebook gives cells of their own (``nb.section("...")``), in its order."""
    try:
        cells = nbformat.reads(text, as_version=4).cells
    except Exception:  # noqa: BLE001 - not a notebook (or none): it holds no section cell, and --check says stale
        return []
    cell = re.compile(r'nb\.section\("(\w+)"\)')
    return [m.group(1) for c in cells if c.cell_type == "code" and (m := cell.fullmatch(c.source))]


def builder_main(description: str, notebook: Path, build: Callable[[Sequence[str] | None], str],
                 argv: list[str] | None = None) -> int:
    """``python tools/build_<name>_notebook.py [--check] [--out PATH]``.

    ``build(names)`` writes a heading and cells for each section in ``names`` (None: every registered one).
    ``--check`` compares the committed notebook with the build for the sections it has cells for: a section
    folder added since is no error (its ``sections = "all"`` default runs it and the summary cell shows it),
    only named, so that adding a section needs no edit outside its folder."""
    from neutrino_ae.report.section import registry

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 if {notebook.name} differs from the builder's output")
    parser.add_argument("--out", type=Path, default=notebook,
                        help=f"where to write the notebook (default: {notebook.name})")
    args = parser.parse_args(argv)
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
        celled = celled_sections(current)
        if not all(name in registry.names() for name in celled) or current != build(celled):
            print(f"error: {args.out} is out of date; run: python tools/build_{notebook.stem}_notebook.py",
                  file=sys.stderr)
            return 1
        uncelled = [name for name in registry.names() if name not in celled]
        extra = (f" (no cells of their own, shown by its summary cell: {', '.join(uncelled)}; run the builder "
                 "to give them theirs)") if uncelled else ""
        print(f"{args.out} is up to date{extra}")
        return 0
    from neutrino_ae.atomic import write_text

    write_text(args.out, build(None))
    print(f"wrote {args.out}")
    return 0
