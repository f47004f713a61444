"""Build ``static.ipynb`` from the readable cell sources below (the notebook is generated, never hand-edited).

    python tools/build_static_notebook.py           # (re)write static.ipynb in the repo root
    python tools/build_static_notebook.py --check   # exit 1 if the committed notebook is out of date

The notebook is written without outputs, with deterministic cell ids, so diffs of the generated
file stay small and a test can compare it with :func:`build`. Section titles, paper references
runtime estimates and each section's text come from the section registry (``neutrino_ae.run.registry``):
adding a section folder adds its cells here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from notebook_builder import builder_main, md, notebook_text  # tools/ is sys.path[0] when run as a script

from neutrino_ae.bundle import fetch
from neutrino_ae.run import registry

NOTEBOOK = registry.REPO_ROOT / "static.ipynb"


code = md


def _runtime_table() -> str:
    rows = ["| # | section | paper | runtime |", "|---|---|---|---|"]
    for i, s in enumerate(registry.sections(), start=1):
        rows.append(f"| {i} | {s.title} (`{s.name}`) | {s.paper_ref} | {s.runtime} |")
    return "\n".join(rows)


def _header(i: int, name: str) -> str:
    s = registry.get(name)
    return (f"## {i}. {s.title}\n\n"
            f"* Paper: **{s.paper_ref}**\n"
            f"* Reads (inside the bundle): {', '.join(f'`{p}`' for p in s.inputs)}\n"
            f"* Runtime (measured, 2-core machine): {s.runtime}")


INTRO = md("""
    # Neutrino (OSDI'25): static evaluation on collected traces

    This notebook turns the GPU traces that Neutrino collected into every table and figure of
    *Neutrino: Fine-grained GPU Kernel Profiling via Programmable Probing* (OSDI'25). It needs no GPU:
    only the traces and a CPU. The GPU-side collection is in `dynamic.ipynb`.

    **How to run.** *Run All*, or from a shell in the repository root:

    ```
    python -m neutrino_ae run static -p bundle sample     # synthetic sample bundle, offline
    python -m neutrino_ae run static                      # the paper's traces (downloaded once, ~1.5 GB)
    ```

    * Hardware: any machine with a CPU. Disk: ~1.5 GB for the paper's bundle (a few MB for the small sample).
    * Software: Python >= 3.11 with this repository installed (`make setup`); no shell tools.
    * Every section writes its figures, tables and a results JSON under `output_dir/<section>/` and
      keeps them: running a section again reuses them unless `force = True`. After the set-up cell,
      each section can be run on its own.
    * The last section collects every number into `summary.json` / `summary.md` in `output_dir`.
    * Runtime on a 2-core machine: a full Run All on the small sample bundle takes about 25 s including
      generating the bundle (3 s when re-run on cached results); on the paper-scale sample bundle
      (475 MB) about 35 s. The paper's own bundle (~1.5 GB) has not been timed here.
""") + "\n\n" + _runtime_table() + "\n\n" + md("""
    ### What to expect

    With the paper's traces the figures and tables should closely match the paper, with one known
    exception the authors point out: the traces behind **the first five rows of Table 2** and
    **Sec. 4.5** (block scheduling cost) were lost and later **re-collected**. GPU runtime dynamics at
    this granularity never repeat exactly, so those numbers come out similar to the paper's, not
    identical.

    With the **sample bundle** (`bundle = "sample"`) every number comes from a synthetic execution
    model of an A100, not from a GPU. Figures carry a *SYNTHETIC* watermark, results files say
    `synthetic: true`, and the summary shows the value the model injected (ground truth) next to
    what the analysis measured. Such numbers check that the analyses work; they are **not** a
    reproduction of the paper's measurements.
""")

PARAMETERS = code(f"""
    # Parameters (papermill: -p <name> <value>)
    bundle = "auto"  # "auto": bundle already in trace_root, else download the paper's; "paper"; "sample" (synthetic)
    trace_root = "traces/"  # where the bundle lives (or is downloaded/generated to)
    bundle_url = "{fetch.PAPER_BUNDLE_URL}"  # the paper's trace.zip
    bundle_sha256 = ""  # expected sha256 of trace.zip; "" trusts the first download and records its digest
    sections = {list(registry.names())!r}  # any subset
    output_dir = "results/"  # figures, tables, results JSON, summary.json / summary.md
    sample_scale = "small"  # sample bundle size: "small" or "paper"
    seed = 0  # sample bundle seed
    force = False  # recompute sections even when their cached results are current (never re-downloads)
""")

SETUP_MD = md("""
    ## 0. Set-up: the trace bundle

    The original notebook fetched the traces with `wget` and `unzip`. Here the set-up cell resolves
    the bundle in Python (`neutrino_ae.bundle.fetch.ensure_bundle`):

    * `bundle = "auto"`: use the bundle already in `trace_root`; if there is none, download the paper's
      `trace.zip` (resumable, sha256 checked or recorded on first use, extracted safely). If that fails
      the notebook **stops** with one message saying what to do; it never switches to synthetic data on
      its own.
    * `bundle = "paper"`: the paper's traces, downloading them if needed.
    * `bundle = "sample"`: generate (or reuse) the synthetic sample bundle; works offline.

    It then prints which kind of bundle the results will come from. The cells below are one call each
    on the object it makes, `nb` (`neutrino_ae.run.notebook.StaticNotebook`): `nb.section(name)`
    computes or reuses a section's results and shows its figures, tables and summary text. A section
    whose input is missing or unreadable prints one line naming the file and the other sections
    still run; the summary at the end lists such sections and then stops the run with an error, so a
    failure is never silent.
""")

SETUP = code("""
    from neutrino_ae.run.notebook import StaticNotebook

    nb = StaticNotebook(bundle=bundle, trace_root=trace_root, bundle_url=bundle_url, bundle_sha256=bundle_sha256,
                        sections=sections, output_dir=output_dir, sample_scale=sample_scale, seed=seed, force=force)
""")

SUMMARY_MD = md(f"""
    ## {len(registry.sections()) + 1}. Summary of every result

    One row per reported number: section, paper reference, value and unit, and the bundle kind it
    came from. On the sample bundle the **ground truth** column holds the value the execution model
    injected, for comparison. Sections not run yet in this kernel are run (or their cached results
    reused) first. The table is saved as `summary.json` and `summary.md` in `output_dir`.
""")

SUMMARY = code("""
    nb.summary()
""")


def cells() -> list[nbformat.NotebookNode]:
    """The notebook's cells, in order, with stable ids: one heading + one code cell per section of
    the registry (plus one cell per figure a section lists in ``notebook_figures``)."""
    v4 = nbformat.v4
    out = [
        v4.new_markdown_cell(INTRO, id="intro"),
        v4.new_code_cell(PARAMETERS, id="parameters", metadata={"tags": ["parameters"]}),
        v4.new_markdown_cell(SETUP_MD, id="setup-md"),
        v4.new_code_cell(SETUP, id="setup"),
    ]
    for i, s in enumerate(registry.sections(), start=1):
        cid = s.name.replace("_", "-")
        out.append(v4.new_markdown_cell(_header(i, s.name) + "\n\n" + s.static_prose.strip(), id=f"{cid}-md"))
        out.append(v4.new_code_cell(f'nb.section("{s.name}")', id=cid))
        for key, caption in s.notebook_figures:
            out.append(v4.new_code_cell(f'# {caption}\nnb.figure("{s.name}", "{key}")', id=f"{cid}-{Path(key).stem}"))
    out += [
        v4.new_markdown_cell(SUMMARY_MD, id="summary-md"),
        v4.new_code_cell(SUMMARY, id="summary"),
    ]
    return out


def build() -> str:
    """The notebook as the exact text that is committed."""
    return notebook_text(cells())


def main(argv: list[str] | None = None) -> int:
    return builder_main(__doc__.splitlines()[0], NOTEBOOK, build, argv)


if __name__ == "__main__":
    sys.exit(main())
