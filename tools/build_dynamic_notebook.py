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

import nbformat
from notebook_builder import KERNEL_CHECK, builder_main, md, notebook_text  # tools/ is sys.path[0] when run as a script

from neutrino_ae.report import registry

NOTEBOOK = registry.REPO_ROOT / "dynamic.ipynb"


code = md

INTRO = md("""
    # Neutrino (OSDI'25): dynamic evaluation — collect traces on your GPU, then analyse them

    This notebook re-runs the paper's experiments on the GPU of this machine with the Neutrino CLI
    (`neutrino -p <probe> <command>`), then turns the fresh traces into the same figures and tables
    as `static.ipynb`, with the very same analysis code. Differences from the static notebook:

    * it needs an NVIDIA GPU, the CUDA toolkit, PyTorch with PTX, Triton and Neutrino itself
      (`python prepare_env.py --check`, `--install`); CUTLASS, Nsight Systems and Nsight Compute are
      optional and only feed some rows;
    * results depend on the GPU: the paper used an A100 (108 SMs). Expect similar numbers and figure
      shapes there, and different (but explainable) ones elsewhere; make sure nothing else runs on
      the GPU while collecting;
    * traces take disk space (several GB for DMAT and Table 2 with all probes).

    Without a GPU or without `neutrino` on PATH every section prints one `skipped:` line and, when
    traces from an earlier run exist under `trace_root`, analyses those instead. Sections run in the
    source notebook's order: 1 block scheduling, 2 DMAT, 3 kernel slowdown, 4 probe memory,
    5 exposed latency, 6 warp scheduling, 7 a look inside one trace directory.
""")

PARAMETERS = code(f"""
    # Parameters (papermill: -p <name> <value>)
    # any subset, in any order (they run in the order above)
    sections = {list(registry.names())!r}
    output_dir = "results/dynamic/"  # figures, tables, results JSON, summary.json
    trace_root = "traces/dynamic/"  # collected traces, laid out like the paper's bundle
    neutrino = "neutrino"  # name or path of the Neutrino CLI
    repeats = 1  # runs per measurement where a section supports it (Fig. 12 keeps the median)
    collect = True  # False: only analyse traces already under trace_root
    timeout = 3600  # seconds allowed per collection command
    collect_args = {{}}  # extra CLI arguments per section, e.g. {{"max_mem": ["--models", "llama1b-bs32"]}}
    strict = False  # True: a failed collection or analysis stops the notebook instead of being reported
    workloads = "auto"  # "paper": the artifact's PyTorch/Triton scripts; "ptx": the same kernels as PTX
    # through the driver API (what Neutrino can probe on PyTorch >= 2.x SASS-only wheels and Triton >= 3.3);
    # "auto": ptx unless this machine's PyTorch embeds PTX and its Triton is older than 3.3
""")

ENV_MD = md("""
    ## 0. Environment

    The check below is `prepare_env.py --check` run in-process: one row per requirement, and what to
    do about anything missing. It never installs anything; run `python prepare_env.py --install`
    (idempotent; `--dry-run` lists the commands) in a terminal for that. Collection runs only when
    `collect` is true, `neutrino` is on PATH and `nvidia-smi` lists a GPU. The `workloads` row says
    which workload family runs and why: the artifact's PyTorch/Triton scripts (`paper`), or the same
    kernels as PTX launched through the CUDA driver API (`ptx`), the only kind Neutrino can probe with
    a current PyTorch (SASS-only wheels) or Triton (>= 3.3 launches with `cuLaunchKernelEx`, which
    Neutrino's hook driver lacks). Each result names the family and marks each stand-in kernel.
""")

ENV = code("""
    from neutrino_ae.run.dynamic_notebook import DynamicNotebook

    nb = DynamicNotebook(sections=sections, output_dir=output_dir, trace_root=trace_root, neutrino=neutrino,
                         repeats=repeats, collect=collect, timeout=timeout, collect_args=collect_args, strict=strict,
                         workloads=workloads)
""")

INTERNALS_MD = md("""
    ## 7. Inside a trace directory

    Not a paper result: a tour of what Neutrino writes, taken from the **newest** trace directory
    under `trace_root` that holds a result file (newest by the time in the folder's name, the rule
    every section uses to pick a collection: `neutrino_ae/formats/tracedir.py`). `probe.toml` is
    the probe that ran (its `position`, `datamodel`, `before`/`after` snippets and the
    `analyze_hook`); `event.log` is the hooked
    driver's log (process, command, memory operations, each launch with its grid, probe buffer,
    saved file and timings); each `kernel/<i>_<sha1>/` holds the probe engine's work on one kernel:
    `kernel.info` (name, parameter count, saving probes, analyze hook), `process.log` (including
    the assembler's register counts) and the PTX before (`pruned.ptx`) and after (`probed.ptx`)
    probing, compared below; `result/*.bin` are the binary traces, named by seconds since start.
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


def cells() -> list[nbformat.NotebookNode]:
    """One heading + one code cell per section of the registry, between the set-up and the summary."""
    v4 = nbformat.v4
    out = [v4.new_markdown_cell(INTRO, id="intro"), v4.new_code_cell(KERNEL_CHECK, id="kernel-check"),
           v4.new_code_cell(PARAMETERS, id="parameters", metadata={"tags": ["parameters"]}),
           v4.new_markdown_cell(ENV_MD, id="env-md"), v4.new_code_cell(ENV, id="env")]
    sections = registry.sections()
    for i, s in enumerate(sections, start=1):
        cid = s.name.replace("_", "-")
        heading = f"## {i}. {s.title} ({s.paper_ref})"
        out.append(v4.new_markdown_cell(heading + "\n\n" + s.dynamic_prose.strip(), id=f"{cid}-md"))
        out.append(v4.new_code_cell(f'nb.section("{s.name}")', id=cid))
    n = len(sections) + 1
    out += [v4.new_markdown_cell(INTERNALS_MD.replace("## 7.", f"## {n}.", 1), id="internals-md"),
            v4.new_code_cell(INTERNALS, id="internals"),
            v4.new_markdown_cell(SUMMARY_MD, id="summary-md"), v4.new_code_cell(SUMMARY, id="summary")]
    return out


def build() -> str:
    """The notebook as the exact text that is committed."""
    return notebook_text(cells())


def main(argv: list[str] | None = None) -> int:
    return builder_main(__doc__.splitlines()[0], NOTEBOOK, build, argv)


if __name__ == "__main__":
    sys.exit(main())
