"""Build ``static.ipynb`` from the readable cell sources below (the notebook is generated, never hand-edited).

    python tools/build_static_notebook.py           # (re)write static.ipynb in the repo root
    python tools/build_static_notebook.py --check   # exit 1 if the committed notebook is out of date

The notebook is written without outputs, with deterministic cell ids, so diffs of the generated
file stay small and a test can compare it with :func:`build`. Section titles, paper references
and runtime estimates come from ``neutrino_ae.sections`` so the notebook and the registry agree.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from notebook_builder import builder_main, md, notebook_text  # noqa: E402  (tools/ is sys.path[0])

from neutrino_ae import sections  # noqa: E402  (needs the repo root on sys.path)
from neutrino_ae.bundle import fetch  # noqa: E402

NOTEBOOK = REPO_ROOT / "static.ipynb"


code = md


def _runtime_table() -> str:
    rows = ["| # | section | paper | runtime |", "|---|---|---|---|"]
    for i, s in enumerate(sections.SECTIONS, start=1):
        rows.append(f"| {i} | {s.title} (`{s.name}`) | {s.paper_ref} | {s.runtime} |")
    return "\n".join(rows)


def _header(i: int, name: str) -> str:
    s = sections.get(name)
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
    sections = {list(sections.NAMES)!r}  # any subset
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

    It then prints which kind of bundle the results will come from, and defines two helpers used by
    every section: `run(name)` (compute or reuse the section's results) and `show(result)` (display
    the saved figures and tables, then the summary text). A section whose input is missing or
    unreadable prints one line naming the file and the other sections still run; the summary at the
    end lists such sections and then stops the run with an error, so a failure is never silent.
""")

SETUP = code("""
    import sys
    import time
    from pathlib import Path

    from IPython.display import Image, Markdown, display

    from neutrino_ae.bundle import fetch
    from neutrino_ae import sections as registry
    from neutrino_ae.atomic import write_text
    from neutrino_ae.bundle.manifest import bundle_kind, read_manifest
    from neutrino_ae.errors import NeutrinoAEError
    from neutrino_ae.report.results import dataframe_to_markdown
    from neutrino_ae.report.summary import write_summary

    # run_section imports the per-figure folders lazily; keep their bytecode caches out of the source tree.
    sys.dont_write_bytecode = True

    if bundle not in ("auto", "paper", "sample"):
        raise registry.NotebookStop(f'bundle must be "auto", "paper" or "sample", not {bundle!r}')
    try:
        selected = registry.parse_names(sections)
        bundle_root = fetch.ensure_bundle(trace_root, bundle=bundle, url=bundle_url, sha256=bundle_sha256 or None,
                                          sample_scale=sample_scale, seed=int(seed))
    except (NeutrinoAEError, OSError, ValueError) as exc:
        message = str(exc)
        if 'bundle="sample"' not in message and bundle != "sample":
            message += f"; {fetch.SAMPLE_HINT}"
        raise registry.NotebookStop(message) from None

    kind = bundle_kind(bundle_root)
    out_root = Path(output_dir)
    manifest = read_manifest(bundle_root) or {}
    print(f"bundle: {kind} at {Path(bundle_root).resolve()}")
    if kind == "sample":
        print("=" * 100)
        print("WARNING: SYNTHETIC DATA. This is the sample bundle made by an execution model "
              f"(scale={manifest.get('scale')}, seed={manifest.get('seed')}), not traces from a GPU.")
        print("Its numbers test the analyses; they do not reproduce the paper. Use bundle=\\"paper\\" for that.")
        print("=" * 100)
    elif kind == "paper":
        print(f"paper traces from {manifest.get('url', 'a hand-extracted trace.zip')} "
              f"(sha256 {manifest.get('sha256', 'not recorded')})")
    print(f"sections: {', '.join(selected)}")
    print(f"outputs:  {out_root.resolve()}")

    results = {}
    failed = {}


    def run(name):
        \"\"\"Compute (or reuse) one section's results; None when it is not selected or its input is unusable.

        A section with bad input reports one line and lets the others run; the summary cell then
        stops the notebook with the list of failed sections (after saving what did work).
        \"\"\"
        if name not in selected:
            print(f"{name}: skipped (not in sections)")
            return None
        start = time.perf_counter()
        try:
            res = registry.run_section(name, bundle_root, out_root, force=force)
        except (NeutrinoAEError, OSError) as exc:
            failed[name] = str(exc)
            print(f"{name}: FAILED: {exc}", file=sys.stderr)
            return None
        failed.pop(name, None)
        results[name] = res
        elapsed = time.perf_counter() - start
        how = "reused cached results" if res.data.get("cached") else f"computed in {elapsed:.1f} s"
        print(f"{name}: {how} -> {out_root / name}")
        return res


    def show(res, figures=None, tables=None, text=True):
        \"\"\"Display a result's saved figures and tables (all, or the named ones), then its summary text.\"\"\"
        if res is None:
            return
        for key, path in res.files.items():
            if Path(path).suffix == ".png" and (figures is None or key in figures):
                display(Image(filename=str(path)))
        for tname, df in res.tables.items():
            if tables is None or tname in tables:
                display(Markdown(f"**{tname}**"))
                display(df)
        if text and res.text:
            print(res.text)
""")

BLOCK_MD = _header(1, "block_sched") + "\n\n" + md("""
    A GPU runs a kernel's blocks on its SMs; when a block finishes, the SM has to retire it and
    start the next one. The cycles in between do no work: that is the **block scheduling cost**
    (Sec. 4.5). Neutrino's `block_sched` probe saves, for every warp, its start clock, its elapsed
    cycles and the SM it ran on. From each block's first warp the analysis replays every SM's blocks
    in block-index order: when the oldest still-resident block on that SM has finished before the
    new block starts, the gap between that block's end and the new block's start is counted as
    scheduling cost. The section reports, averaged over the SMs that ran blocks, the total
    **running** cycles and the total **scheduling** cycles, and their ratio: the share of time lost
    to scheduling.

    This is the artifact's metric, kept exactly so the numbers are comparable (without the original
    script's crash on non-contiguous SM ids). On the authors' A100 the traced kernel,
    `torch.zeros((4096, 4096), fp16)`, printed `No.block:32768 Running:602241 Scheduling:87713(cycle)`,
    i.e. scheduling ≈ 13 % of running. The traces behind Sec. 4.5 were re-collected after the paper,
    so expect similar, not identical, values. The two optimisations of Sec. 4.5 (a `cuMemsetD16`
    fill and a persistent kernel) need a GPU and are in `dynamic.ipynb`; the sample bundle carries
    modelled traces of both (`block_sched/variants/`), analysed here beside the main trace, and a
    smaller main kernel than the paper's.
""")

BLOCK = code("""
    block_res = run("block_sched")
    show(block_res)
""")

DMAT_MD = _header(2, "dmat") + "\n\n" + md("""
    A **densified memory access timeline** (DMAT) plots every global-memory access of a kernel:
    time (GPU clock since kernel entry) on the x axis, memory page on the y axis, colour for how many
    accesses hit that page at that time. It shows access patterns that counters cannot, such as the
    streaming of K/V tiles in attention kernels. Four plots, all of attention kernels with q, k, v of
    shape (4, 32, 4096, 64) in fp16 (the sample bundle models a smaller shape, so its plots are shorter):

    * **Fig. 1**: Triton FlashAttention-2 (BLOCK_M 128, BLOCK_N 64, 2 stages, 8 warps);
    * **Fig. 10a**: the same kernel with BLOCK_M 64 and 4 warps;
    * **Fig. 10b**: PyTorch SDPA, flash backend; **Fig. 10c**: PyTorch SDPA, memory-efficient backend.

    The artifact's plotter silently dropped every access after clock 5,000,000; here the whole
    kernel is plotted.
""")

DMAT_RUN = code("""
    dmat_res = run("dmat")
    show(dmat_res, figures=(), tables=())
""")


def _dmat_fig(fig: str, caption: str) -> str:
    return code(f"""
        # {caption}
        if dmat_res is not None:
            show(dmat_res, figures=["{fig}.png"], tables=["dmat_{fig}_tensors"], text=False)
    """)


KERNEL_MD = _header(3, "kernel_overhead") + "\n\n" + md("""
    The cost of probing, per kernel and probe (`block_sched`, `gmem_bytes`, `tensorop_count`, `dmat`):

    * **slowdown**: probed kernel time divided by the time of the same kernel without probes
      (Neutrino's `--benchmark` mode runs both and logs the ratio per launch; the table shows the
      median over launches, so one disturbed launch does not move a row);
    * **extra registers**: registers of the probed kernel minus those of the original, from the
      assembler's `Used N registers` lines.

    Kernels: CUTLASS GEMM, Stream-K GEMM and Conv2D; Triton group-GEMM and FlashAttention-2; PyTorch
    normalisation, softmax, reductions, pooling, embedding and gather. The original notebook printed
    the three groups from three scripts; here they form one table. The CUTLASS and Triton rows (the
    **first five rows of Table 2**) were re-collected after the paper and differ slightly from it.
""")

KERNEL = code("""
    kernel_res = run("kernel_overhead")
    show(kernel_res)
""")

MAXMEM_MD = _header(4, "max_mem") + "\n\n" + md("""
    Neutrino allocates a buffer for the probes' records on every launch. Fig. 11 compares, per model
    and probe, the **largest probe buffer** (the `[exec] probe-mem` lines of `event.log`) with the
    **peak memory of the workload itself** (the `max memory:` line the workload prints in
    `stdout.log`). Models: ResNet (batch 32), Stable Diffusion (batch 1), Mamba (batch 32),
    Llama 1B/3B/8B (batch 32) and Llama 8B at batch 128 and 256.

    Unlike the original loop this reads every matching line (not just the first) and names any
    missing log instead of crashing.
""")

MAXMEM = code("""
    maxmem_res = run("max_mem")
    show(maxmem_res)
""")

LATENCY_MD = _header(5, "exposed_latency") + "\n\n" + md("""
    How much slower a workload runs while being profiled, Neutrino against Nsight Compute, for four
    workloads (attention, group-GEMM, convolution, GEMM) and several probes. Bars are normalised to
    the un-profiled run; Neutrino's bar is split into the time spent in the (probed) kernel, the
    epilogue that copies the probe records back and writes the trace, and the prologue that sets the
    probe buffers up, so the exposed part is visible. The original notebook's unused, hard-coded
    proportions table is gone: every number here comes from the CSVs.
""")

LATENCY = code("""
    latency_res = run("exposed_latency")
    show(latency_res)
""")

WARP_MD = _header(6, "warp_sched") + "\n\n" + md("""
    Section 7 of the paper uses warp-level timing to look at how warps share an SM:

    * **Fig. 13a / 13b**: per-SM warp timelines (one row per warp slot, coloured by block) of the same
      attention kernel under exclusive and under shared warp scheduling;
    * **Fig. 13c / 13d**: the **tailing effect**: active warps and busy SMs over time; in the last wave
      most SMs run out of work while a few still finish theirs. 13d also has a zoom on the tail.

    The original Fig. 13c/d input was a Python pickle (`warp_sched/tmp.pkl`); unpickling a downloaded
    file can run arbitrary code, so this suite refuses it and reads the tail-effect input from a
    regular trace directory, `warp_sched/tail/<tracedir>/` (the sample bundle has one; `dynamic.ipynb`
    collects one on a GPU). On a paper bundle that only has the pickle, Fig. 13a/b are still drawn and
    Fig. 13c/d are reported as skipped, with the reason and how to convert the table.
""")

WARP = code("""
    warp_res = run("warp_sched")
    show(warp_res)
""")

SUMMARY_MD = md("""
    ## 7. Summary of every result

    One row per reported number: section, paper reference, value and unit, and the bundle kind it
    came from. On the sample bundle the **ground truth** column holds the value the execution model
    injected, for comparison. Sections not run yet in this kernel are run (or their cached results
    reused) first. The table is saved as `summary.json` and `summary.md` in `output_dir`.
""")

SUMMARY = code("""
    for name in selected:
        if name not in results and name not in failed:
            run(name)

    rows = registry.summary_rows(results, bundle_kind=kind)
    summary_df = registry.summary_table(rows, ground_truth=(kind == "sample"))
    note = " (SYNTHETIC sample data: values come from an execution model, not from a GPU)" if kind == "sample" else ""
    table_md = f"Summary of {len(rows)} results, bundle kind: {kind}{note}\\n\\n{dataframe_to_markdown(summary_df)}\\n"
    if failed:
        table_md += "\\nFailed sections (no results):\\n\\n" + "".join(f"* {n}: {m}\\n" for n, m in failed.items())

    summary_json = write_summary(out_root / "summary.json", rows, notebook="static", bundle=bundle, bundle_kind=kind,
                                 bundle_root=str(Path(bundle_root).resolve()), sections=selected,
                                 failed_sections=dict(failed))
    summary_md = write_text(out_root / "summary.md", table_md)
    print(f"wrote {summary_json} and {summary_md}")
    display(Markdown(table_md))
    if failed:
        problems = "; ".join(f"{n}: {m}" for n, m in failed.items())
        raise registry.NotebookStop(f"{len(failed)} section(s) failed, the others are saved: {problems}")
""")


def cells() -> list[nbformat.NotebookNode]:
    """The notebook's cells, in order, with stable ids."""
    v4 = nbformat.v4
    out = [
        v4.new_markdown_cell(INTRO, id="intro"),
        v4.new_code_cell(PARAMETERS, id="parameters", metadata={"tags": ["parameters"]}),
        v4.new_markdown_cell(SETUP_MD, id="setup-md"),
        v4.new_code_cell(SETUP, id="setup"),
        v4.new_markdown_cell(BLOCK_MD, id="block-sched-md"),
        v4.new_code_cell(BLOCK, id="block-sched"),
        v4.new_markdown_cell(DMAT_MD, id="dmat-md"),
        v4.new_code_cell(DMAT_RUN, id="dmat"),
    ]
    for fig, caption in (("fig1", "Fig. 1: Triton FlashAttention-2"),
                         ("fig10a", "Fig. 10a: Triton FlashAttention-2, BLOCK_M 64, 4 warps"),
                         ("fig10b", "Fig. 10b: PyTorch SDPA, flash backend"),
                         ("fig10c", "Fig. 10c: PyTorch SDPA, memory-efficient backend")):
        out.append(v4.new_code_cell(_dmat_fig(fig, caption), id=f"dmat-{fig}"))
    out += [
        v4.new_markdown_cell(KERNEL_MD, id="kernel-overhead-md"),
        v4.new_code_cell(KERNEL, id="kernel-overhead"),
        v4.new_markdown_cell(MAXMEM_MD, id="max-mem-md"),
        v4.new_code_cell(MAXMEM, id="max-mem"),
        v4.new_markdown_cell(LATENCY_MD, id="exposed-latency-md"),
        v4.new_code_cell(LATENCY, id="exposed-latency"),
        v4.new_markdown_cell(WARP_MD, id="warp-sched-md"),
        v4.new_code_cell(WARP, id="warp-sched"),
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
