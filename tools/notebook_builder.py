"""What both notebook builders share: cell-text helpers, the committed text, and the --check CLI."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import nbformat


def md(text: str) -> str:
    """Cell source from an indented triple-quoted block."""
    return textwrap.dedent(text).strip("\n")


def notebook_text(cells: list[nbformat.NotebookNode]) -> str:
    """The notebook exactly as committed: no outputs, a python3 kernelspec, validated."""
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    nbformat.validate(nb)
    return nbformat.writes(nb) + "\n"


def builder_main(description: str, notebook: Path, build: Callable[[], str], argv: list[str] | None = None) -> int:
    """``python tools/build_<name>_notebook.py [--check] [--out PATH]``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 if {notebook.name} differs from the builder's output")
    parser.add_argument("--out", type=Path, default=notebook,
                        help=f"where to write the notebook (default: {notebook.name})")
    args = parser.parse_args(argv)
    text = build()
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
        if current != text:
            print(f"error: {args.out} is out of date; run: python tools/build_{notebook.stem}_notebook.py",
                  file=sys.stderr)
            return 1
        print(f"{args.out} is up to date")
        return 0
    from neutrino_ae.atomic import write_text

    write_text(args.out, text)
    print(f"wrote {args.out}")
    return 0
