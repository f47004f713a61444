"""Build ``dynamic.ipynb`` from the readable cell sources below (generated, never hand-edited).

    python tools/build_dynamic_notebook.py           # (re)write dynamic.ipynb in the repo root
    python tools/build_dynamic_notebook.py --check   # exit 1 if the committed notebook is out of date

The notebook collects fresh traces with the Neutrino CLI (each section's ``collect`` entry), lays
them out like the paper's bundle under ``trace_root`` and analyses them with the same analyses as
static.ipynb (``neutrino_ae.run.dynamic_notebook.DynamicNotebook``), writing the same
``summary.json`` shape so ``neutrino-ae compare`` can diff a dynamic run against a static one.
Each section's heading text comes from its folder (``SECTION.dynamic_prose``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import nbformat

# tools/ is sys.path[0] when run as a script
from notebook_builder import KERNEL_CHECK, SETUP_MARK, builder_main, md, notebook_text, whole

from neutrino_ae.report.section import registry

NOTEBOOK = registry.REPO_ROOT / "dynamic.ipynb"


code = md

INTRO = md("""
    # Neutrino (OSDI'25): dynamic evaluation — collect traces on your GPU, then analyse them

    Re-runs the paper's experiments on this machine's NVIDIA GPU with the Neutrino CLI
    (`neutrino -p <probe> <command>`) and turns the fresh traces into the figures and tables of
    `static.ipynb`, with the same analysis code. It needs an NVIDIA GPU, the CUDA toolkit and
    Neutrino (section 0 says what is missing here and how to install it); results depend on the
    GPU (the paper used an A100), and traces take several GB. Without a GPU nothing is collected:
    each section says so in one line, the verdict lists the claims a GPU run is judged on as
    *not run*, and the last section still tours a real trace directory.
""")

PARAMETERS = code("""
    # Parameters (papermill: -p <name> <value>)
    sections = "all"  # every registered section, or any subset in any order (they run in the order above)
    output_dir = "results/dynamic/"  # figures, tables, results JSON, summary.json
    trace_root = "traces/dynamic/"  # collected traces, laid out like the paper's bundle
    neutrino = "neutrino"  # name or path of the Neutrino CLI
    repeats = 1  # runs per measurement where a section supports it (Fig. 12 keeps the median)
    collect = True  # False: only analyse traces already under trace_root
    bundle = ""  # "sample", "paper" or a folder: analyse that bundle instead of collecting (said so in the verdict)
    timeout = 3600  # seconds allowed per collection command
    collect_args = {}  # extra CLI arguments per section, e.g. {"max_mem": ["--models", "llama1b-bs32"]}
    strict = False  # True: a failed collection or analysis stops the notebook instead of being reported
    workloads = "auto"  # "paper": the artifact's PyTorch/Triton scripts; "ptx": the same kernels as PTX
    # through the driver API (what Neutrino can probe on PyTorch >= 2.x SASS-only wheels and Triton >= 3.3);
    # "auto": ptx unless this machine's PyTorch embeds PTX and its Triton is older than 3.3
""")

ENV_MD = md("""
    ## 0. Environment

    `prepare_env.py --check`, run in-process: what is missing and how to get it (it installs
    nothing; `python prepare_env.py --install` in a terminal does, `--dry-run` lists the commands).
    Collection runs only when `collect` is true, `neutrino` is on PATH and `nvidia-smi` lists a
    GPU. The workloads line says which kernels run: the artifact's PyTorch/Triton scripts
    (`paper`), or the same kernels as PTX through the CUDA driver API (`ptx`), the only kind
    Neutrino can probe with a current PyTorch (SASS-only wheels) or Triton (>= 3.3).
""")

ENV = code(f"""
    {SETUP_MARK}
    from neutrino_ae.run.dynamic_notebook import DynamicNotebook

    nb = DynamicNotebook(sections=sections, output_dir=output_dir, trace_root=trace_root, neutrino=neutrino,
                         repeats=repeats, collect=collect, timeout=timeout, collect_args=collect_args, strict=strict,
                         workloads=workloads, bundle=bundle)
""")

INTERNALS_MD = md("""
    ## 7. Inside Neutrino: probes, a trace directory, the probe engine

    Not a paper result: what Neutrino is made of and what it writes, from real files only. The
    built-in probes and the analysis script come from Neutrino's source (installed, or a checkout);
    the trace directory is the newest block_sched one collected under `trace_root`, else one from
    the paper's bundle, else the genuine one the real Neutrino wrote for this suite's tests.
""")

INTERNALS = code("""
    nb.internals()
""")

SUMMARY_MD = md("""
    ## Summary

    Every headline number of the sections that produced results, in the same `summary.json` shape
    as `static.ipynb` (`bundle_kind` is `dynamic`), so a run can be compared with a static one:
    `neutrino-ae compare results/static results/dynamic`.
""")

SUMMARY = code("""
    nb.summary()
""")


def cells(names: Sequence[str] | None = None) -> list[nbformat.NotebookNode]:
    """One heading + one code cell per section of the registry (or of ``names``), between the set-up and the
    summary. A section without cells is still collected (``sections = "all"``) and shown by the summary cell."""
    v4 = nbformat.v4
    hidden = {"jupyter": {"source_hidden": True}, "tags": ["remove-input"]}  # plumbing: outputs only
    shown_whole = {**hidden, **whole()}
    out = [v4.new_markdown_cell(INTRO, id="intro"),
           v4.new_code_cell(KERNEL_CHECK, id="kernel-check", metadata=hidden),
           v4.new_code_cell(PARAMETERS, id="parameters", metadata={"tags": ["parameters"]}),
           v4.new_markdown_cell(ENV_MD, id="env-md"), v4.new_code_cell(ENV, id="env", metadata=shown_whole)]
    sections = registry.sections() if names is None else [registry.get(n) for n in names]
    for i, s in enumerate(sections, start=1):
        cid = s.name.replace("_", "-")
        heading = f"## {i}. {s.title} ({s.paper_ref})"
        out.append(v4.new_markdown_cell(heading + "\n\n" + s.dynamic_prose.strip(), id=f"{cid}-md"))
        out.append(v4.new_code_cell(f'nb.section("{s.name}")', id=cid, metadata=whole()))
    n = len(sections) + 1
    out += [v4.new_markdown_cell(INTERNALS_MD.replace("## 7.", f"## {n}.", 1), id="internals-md"),
            v4.new_code_cell(INTERNALS, id="internals", metadata=whole()),
            v4.new_markdown_cell(SUMMARY_MD, id="summary-md"),
            v4.new_code_cell(SUMMARY, id="summary", metadata=whole())]
    return out


def build(names: Sequence[str] | None = None) -> str:
    """The notebook as the exact text that is committed (``names``: the sections given cells, default all)."""
    return notebook_text(cells(names))


def main(argv: list[str] | None = None) -> int:
    return builder_main(__doc__.splitlines()[0], NOTEBOOK, build, argv)


if __name__ == "__main__":
    sys.exit(main())
