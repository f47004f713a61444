"""Entry of a section folder's artifact-compatible script (``python block_sched/block_sched.py <trace>``).

Run as a file, such a script has its own folder as ``sys.path[0]``, so ``import block_sched`` would
find the script itself rather than the package. The script therefore imports only this module
and names the function to run; the folder is imported as its package by path (the registry's
rule) and nothing edits ``sys.path``::

    # block_sched/block_sched.py
    from neutrino_ae.run.script import run_folder_script

    if __name__ == "__main__":
        raise SystemExit(run_folder_script(__file__, "cli:main"))
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path

from neutrino_ae.report.script import run_main
from neutrino_ae.run.registry import import_folder


def run_folder_script(script_file: str, entry: str, argv: Sequence[str] | None = None, up: int = 0) -> int:
    """Run ``entry`` (``"<module>:<function>"`` in the section package) as a CLI ``main``; the
    section folder is the script's folder, or ``up`` folders above it (for scripts in subfolders)."""
    folder = Path(script_file).resolve().parents[up]
    import_folder(folder)
    module, _, func = entry.partition(":")
    main = getattr(importlib.import_module(f"{folder.name}.{module}"), func)
    return run_main(main, argv)
