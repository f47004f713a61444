"""Where things go on disk, for every entry point (Jupyter, ``neutrino-ae run``, ``make run``, the
per-figure command lines). No imports beyond the standard library: the per-figure command lines
and the GPU workloads read it without pandas.

* The notebooks write under ``results/<notebook>/`` (``results/static/``, ``results/dynamic/``);
  each section's cache record (:data:`RECORD`) sits in its folder there.
* The per-figure command lines write under ``results/cli/`` (:data:`CLI_RESULTS`), so they never
  touch a notebook's cached results.
* The sample and the paper bundle have their own default trace roots, so ``bundle="sample"`` and
  ``bundle="paper"`` work in any order.
"""

from __future__ import annotations

import os
from pathlib import Path

#: A section's cache record in ``<output_dir>/<section>/`` (:mod:`neutrino_ae.run.runner`).
RECORD = "section-run.json"

CLI_RESULTS = Path("results") / "cli"

#: The largest ``summary.json`` that ``compare`` (and every reader of a summary) reads: a run's has one
#: row per headline number (about 300 rows, 75 KB), so this is ~200 times that; a larger file is refused
#: in one line before it is read, rather than loaded whole into memory.
MAX_SUMMARY_BYTES = 16 * 2**20


def notebook_results(name: str) -> str:
    """The default output folder of notebook ``name`` (``static`` -> ``results/static/``)."""
    return f"results/{name}/"


STATIC_RESULTS = notebook_results("static")
DYNAMIC_RESULTS = notebook_results("dynamic")

# Default bundle roots (the command lines' defaults; the notebooks' carry a trailing slash).
SAMPLE_TRACES = "traces/sample"
PAPER_TRACES = "traces/paper"
DYNAMIC_TRACES = "traces/dynamic/"
TRACE_ROOTS = {"sample": f"{SAMPLE_TRACES}/", "paper": f"{PAPER_TRACES}/"}


def default_trace_root(bundle: str) -> str:
    """The trace root used when none is given: ``traces/sample/`` for the sample bundle,
    ``traces/paper/`` for the paper's (``auto`` uses the paper's folder: it never picks synthetic
    data by itself)."""
    return TRACE_ROOTS.get(bundle, TRACE_ROOTS["paper"])


def checkout_root() -> Path | None:
    """The source checkout holding this package (a clone, used in place or installed editable),
    or None for a package installed from a wheel (then there is no repository around it)."""
    root = Path(__file__).resolve().parents[3]
    return root if (root / "pyproject.toml").is_file() and (root / "neutrino_ae").is_dir() else None


def third_party_dir() -> Path:
    """Where ``prepare_env.py`` clones and builds Neutrino and CUTLASS, and where the collection
    looks for them: ``$THIRD_PARTY``, else ``third_party/`` at the checkout's root (the working
    directory's for an installed wheel)."""
    env = os.environ.get("THIRD_PARTY")
    return Path(env) if env else (checkout_root() or Path.cwd()) / "third_party"
