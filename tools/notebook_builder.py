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


# The first line of each notebook's set-up cell: the cell whose failure stops the notebook (below).
SETUP_MARK = "# Set-up (if it stops, every cell below does nothing and the last one says why)"
# The last code cell of both notebooks: where Lab has scrolled after Run All, so it repeats why set-up stopped.
LAST_CELL = "nb.summary()"

# The first code cell of both notebooks. It must run in any Jupyter kernel, so it uses only the
# standard library: a kernel without this project (or its dependencies) stops here with one line
# saying how to start Jupyter with it, which kernel to pick, or the one command that installs the
# project into this kernel.
#
# It also installs the set-up guard. Front ends keep running queued cells after an error unless the
# kernel aborts them, and a freshly started kernel often lets some through (Lab and Notebook 7: later
# cells printed NameError and ModuleNotFoundError tracebacks). So once this check, the parameters or the
# set-up cell fail, the guard lets the cell end without an error status (its one error line is shown,
# papermill still fails the run on it), every later cell runs as `pass` and the last cell prints the
# reason, where Lab has scrolled. Running this cell again, the parameters or a set-up that succeeds
# clears it.
KERNEL_CHECK = md("""
    # Kernel check (standard library only). Colab or another hosted Jupyter without this project:
    # set install_here = True and run this cell once (pip-installs this repository into this kernel).
    import importlib.util
    import os
    import subprocess
    import sys

    install_here = False


    class _SetUpGuard:
        \"\"\"Once set-up fails, the cells below run as `pass` (no tracebacks) and the last one says why.\"\"\"

        STEPS = ("# Kernel check", "# Parameters", "# Set-up")  # the cells whose failure stops the notebook

        def __init__(self, shell):
            self.reason, self.importable = None, True
            for old in [t for t in shell.input_transformers_cleanup if type(t).__name__ == "_SetUpGuard"]:
                shell.input_transformers_cleanup.remove(old)
                shell.events.unregister("post_run_cell", old.after)
            shell.input_transformers_cleanup.insert(0, self)
            shell.events.register("post_run_cell", self.after)

        def __call__(self, lines):  # the source the kernel runs instead of the cell's
            text = "".join(lines)
            if self.reason is None or text.startswith(self.STEPS[:2 + self.importable]):
                return lines
            if text.strip() == "nb.summary()":  # the last cell: where Lab has scrolled after Run All
                return [f"print({('Set-up stopped, so no cell after it ran: ' + self.reason)!r})\\n"]
            return ["pass\\n"]

        def after(self, result):
            text = result.info.raw_cell if result.info else ""
            if not text.startswith(self.STEPS):
                return
            error = result.error_in_exec or result.error_before_exec
            if text.startswith(self.STEPS[0]):
                self.importable = error is None
            if error is not None:
                self.reason = f"{type(error).__name__}: {error}"
                result.error_in_exec = result.error_before_exec = None  # its line is shown; the cells below run
            elif self.importable:
                self.reason = None


    try:
        _SetUpGuard(get_ipython())
    except NameError:  # not in IPython: nothing to guard
        pass
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
            f"this kernel ({sys.executable}) cannot import {', '.join(missing)}: start Jupyter with `make lab` "
            f"in {here} (its default kernel is the project's), pick the kernel 'neutrino-ae' "
            "(after `make setup && .venv/bin/python -m ipykernel install --user --name neutrino-ae`), "
            f"or install the project into this kernel with `{sys.executable} -m pip install -e {here}` "
            "(on Colab: set install_here = True above)")
""")
assert SETUP_MARK.startswith("# Set-up") and "# Set-up" in KERNEL_CHECK and LAST_CELL in KERNEL_CHECK


def whole() -> dict[str, bool]:
    """Metadata of a cell whose outputs are shown whole: Notebook 7 otherwise puts any output taller than
    about 1,820 px (1.3 x font size x 100) into a 310 px scroll box; its scroll-output plugin leaves a cell
    alone once ``scrolled`` is set. JupyterLab reads ``scrolled: false`` the same way (not collapsed)."""
    return {"scrolled": False}


def notebook_text(cells: list[nbformat.NotebookNode]) -> str:
    """The notebook exactly as committed: no outputs, ipykernel's python3 kernelspec, validated."""
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        # as ipykernel's own kernelspec names itself: Jupyter then does not rewrite it (and mark the notebook
        # modified) when it opens the notebook on that kernel (make lab's default)
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
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
