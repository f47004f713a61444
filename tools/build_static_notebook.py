"""Build ``static.ipynb`` from the readable cell sources below (the notebook is generated, never hand-edited).

    python tools/build_static_notebook.py           # (re)write static.ipynb in the repo root
    python tools/build_static_notebook.py --check   # exit 1 if the committed notebook is out of date

The notebook is written without outputs, with deterministic cell ids, so diffs of the generated
file stay small and a test can compare it with :func:`build`. Section titles, paper references
runtime estimates and each section's text come from the section registry (``neutrino_ae.report.section.registry``):
adding a section folder adds its cells here.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import nbformat

# tools/ is sys.path[0] when run as a script
from notebook_builder import KERNEL_CHECK, SETUP_MARK, builder_main, md, notebook_text, whole

from neutrino_ae.bundle import fetch
from neutrino_ae.report.section import registry

NOTEBOOK = registry.REPO_ROOT / "static.ipynb"


code = md


def _header(i: int, name: str) -> str:
    s = registry.get(name)
    return (f"## {i}. {s.title}\n\n"
            f"* Paper: **{s.paper_ref}**\n"
            f"* Reads (inside the bundle): {', '.join(f'`{p}`' for p in s.inputs)}\n"
            f"* Runtime (measured, 2-core machine): {s.runtime}")


INTRO = md("""
    # Neutrino (OSDI'25): static evaluation on collected traces

    Turns the GPU traces that Neutrino collected into every table and figure of *Neutrino:
    Fine-grained GPU Kernel Profiling via Programmable Probing* (OSDI'25), on a CPU. GPU-side
    collection is in `dynamic.ipynb`. *Run All*, or from a shell in the repository root:
    `make run` (synthetic sample bundle, offline) or `.venv/bin/neutrino-ae run static -p bundle paper`
    (the paper's traces, downloaded once). Both write to `results/static/`.

    Each section states the paper's claim and shows its result once, in the paper's form; full
    tables are saved next to the figures and linked. Every claim is judged at the end (and, in
    `neutrino-ae run`'s saved copy, at the top): PASS / DIFFERS / SKIPPED, also in `verdict.json`.
    Known difference from the paper (the authors'): the traces behind the first five rows of
    Table 2 and Sec. 4.5 were re-collected, so those numbers are similar, not identical. On the
    **sample bundle** (`bundle = "sample"`) every number comes from a synthetic execution model,
    not a GPU: figures say *SYNTHETIC* and the verdict checks the pipeline, not the paper.
""")

PARAMETERS = code(f"""
    # Parameters (papermill: -p <name> <value>)
    # First run: "auto" downloads the paper's trace.zip (about 1.5 GB, once, into traces/paper/). Offline or for a
    # quick look: bundle = "sample", a synthetic bundle made here (32 MB, about 20 s in all; not the paper's data).
    bundle = "auto"  # "auto": trace_root's bundle, else download the paper's; "paper"; "sample"; a trace.zip's path
    trace_root = ""  # where the bundle lives; empty: traces/sample/ for the sample bundle, else traces/paper/
    bundle_url = "{fetch.PAPER_BUNDLE_URL}"  # the paper's trace.zip
    bundle_sha256 = ""  # expected sha256 of trace.zip; "" trusts the first download and records its digest
    sections = "all"  # every registered section, or any subset: ["dmat", "max_mem"]
    output_dir = "results/static/"  # figures, tables, results JSON, summary, verdict (as neutrino-ae run)
    sample_scale = "small"  # sample bundle size: "small" or "paper"
    seed = 0  # sample bundle seed
    force = False  # recompute sections even when their cached results are current (never re-downloads)
    workers = 2  # sections computed at once, in worker processes (0 or 1: one at a time, in this kernel)
""")

SETUP_MD = md("""
    ## 0. Set-up: the trace bundle

    `bundle = "auto"` uses the bundle already in `trace_root`, else downloads the paper's
    `trace.zip` (resumable, checksummed, extracted safely); if that fails the notebook stops with
    one message and never switches to synthetic data by itself. `"paper"` always means the
    paper's traces, `"sample"` the synthetic sample bundle (offline). A `trace.zip` downloaded by
    hand: set `bundle` to its path, or unzip it into a folder and set `trace_root` to that folder.
    The sample and the paper
    bundle live in different folders (`traces/sample/`, `traces/paper/`), so both work in any
    order. `nb.section(name)` computes a section (or reuses its cached results) and shows it; a
    section whose input is unusable prints one line, the others still run, and the summary then
    stops the run naming it.
""")

SETUP = code(f"""
    {SETUP_MARK}
    from neutrino_ae.run.notebook import StaticNotebook

    nb = StaticNotebook(bundle=bundle, trace_root=trace_root, bundle_url=bundle_url, bundle_sha256=bundle_sha256,
                        sections=sections, output_dir=output_dir, sample_scale=sample_scale, seed=seed, force=force,
                        workers=workers)
""")

SUMMARY_MD = md("""
    ## {n}. Verdict

    Every number is saved in `summary.json` / `summary.md` (on the sample bundle with the value
    the execution model injected beside it). Below: each claim of the paper with what is expected
    and what was obtained, also saved as `verdict.json`.
""")

SUMMARY = code("""
    nb.summary()
""")


def cells(names: Sequence[str] | None = None) -> list[nbformat.NotebookNode]:
    """The notebook's cells, in order, with stable ids: one heading + one code cell per section of
    the registry (or of ``names``), plus one cell per figure a section lists in ``notebook_figures``. A
    section without cells is still run (``sections = "all"``) and shown by the summary cell."""
    sections = registry.sections() if names is None else [registry.get(n) for n in names]
    v4 = nbformat.v4
    out = [
        v4.new_markdown_cell(INTRO, id="intro"),
        # Collapsed in Jupyter, left out of the exported report (make report): it only checks the kernel.
        v4.new_code_cell(KERNEL_CHECK, id="kernel-check",
                         metadata={"jupyter": {"source_hidden": True}, "tags": ["remove-input"]}),
        v4.new_code_cell(PARAMETERS, id="parameters", metadata={"tags": ["parameters"]}),
        v4.new_markdown_cell(SETUP_MD, id="setup-md"),
        v4.new_code_cell(SETUP, id="setup", metadata=whole()),
    ]
    for i, s in enumerate(sections, start=1):
        cid = s.name.replace("_", "-")
        out.append(v4.new_markdown_cell(_header(i, s.name) + "\n\n" + s.static_prose.strip(), id=f"{cid}-md"))
        out.append(v4.new_code_cell(f'nb.section("{s.name}")', id=cid, metadata=whole()))
        for key, caption in s.notebook_figures:
            out.append(v4.new_code_cell(f'# {caption}\nnb.figure("{s.name}", "{key}")', id=f"{cid}-{Path(key).stem}",
                                        metadata=whole()))
        if s.timelines:  # the traces it read, as Perfetto timelines, linked beside its figures
            out.append(v4.new_code_cell(f'from neutrino_ae.run.timelines import show_timelines\n\n'
                                        f'show_timelines(nb, "{s.name}")', id=f"{cid}-perfetto"))
    out += [
        v4.new_markdown_cell(SUMMARY_MD.format(n=len(sections) + 1), id="summary-md"),
        v4.new_code_cell(SUMMARY, id="summary", metadata=whole()),
    ]
    return out


def build(names: Sequence[str] | None = None) -> str:
    """The notebook as the exact text that is committed (``names``: the sections given cells, default all)."""
    return notebook_text(cells(names))


def main(argv: list[str] | None = None) -> int:
    return builder_main(__doc__.splitlines()[0], NOTEBOOK, build, argv)


if __name__ == "__main__":
    sys.exit(main())
