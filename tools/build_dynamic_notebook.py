"""Build ``dynamic.ipynb`` from the readable cell sources below (generated, never hand-edited).

    python tools/build_dynamic_notebook.py           # (re)write dynamic.ipynb in the repo root
    python tools/build_dynamic_notebook.py --check   # exit 1 if the committed notebook is out of date

The notebook collects fresh traces with the Neutrino CLI (``neutrino_ae.collect``), lays them out
like the paper's bundle under ``trace_root`` and analyses them with the same per-figure functions
as static.ipynb (``collect.analyze_section`` → the sections registry's adapters), writing the same
``summary.json`` shape so ``neutrino-ae compare`` can diff a dynamic run against a static one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from notebook_builder import builder_main, md, notebook_text  # noqa: E402  (tools/ is sys.path[0])

from neutrino_ae import sections  # noqa: E402

NOTEBOOK = REPO_ROOT / "dynamic.ipynb"


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
    sections = {list(sections.NAMES)!r}
    output_dir = "results/dynamic/"  # figures, tables, results JSON, summary.json
    trace_root = "traces/dynamic/"  # collected traces, laid out like the paper's bundle
    neutrino = "neutrino"  # name or path of the Neutrino CLI
    repeats = 1  # runs per measurement where a section supports it (Fig. 12 keeps the median)
    collect = True  # False: only analyse traces already under trace_root
    timeout = 3600  # seconds allowed per collection command
    collect_args = {{}}  # extra CLI arguments per section, e.g. {{"max_mem": ["--models", "llama1b-bs32"]}}
    strict = False  # True: a failed collection or analysis stops the notebook instead of being reported
""")

ENV_MD = md("""
    ## 0. Environment

    The check below is `prepare_env.py --check` run in-process: one row per requirement, and what to
    do about anything missing. It never installs anything; run `python prepare_env.py --install`
    (idempotent; `--dry-run` lists the commands) in a terminal for that. Collection runs only when
    `collect` is true, `neutrino` is on PATH and `nvidia-smi` lists a GPU.
""")

ENV = code("""
    import difflib
    import sys
    import time
    from pathlib import Path

    import pandas as pd
    from IPython.display import Image, Markdown, display

    from neutrino_ae import collect as collector
    from neutrino_ae.workloads import envcheck
    from neutrino_ae import sections as registry
    from neutrino_ae.errors import NeutrinoAEError
    from neutrino_ae.report.summary import write_summary

    sys.dont_write_bytecode = True  # keep the per-figure folders free of __pycache__

    selected = registry.parse_names(sections)
    trace_root = Path(trace_root)
    out_root = Path(output_dir)
    env_report = envcheck.run_checks(neutrino=neutrino)
    print(env_report.table())

    blocker = None if collect else "collect=False"
    if blocker is None:
        blocker = collector.collection_blocker(neutrino)
    print()
    print(f"collection: {'enabled' if blocker is None else 'off (' + blocker + ')'}")
    print(f"traces:     {trace_root.resolve()}")
    print(f"outputs:    {out_root.resolve()}")
    print(f"sections:   {', '.join(selected)}")

    results, problems = {}, []
    ctx = collector.Context(neutrino=neutrino, repeats=int(repeats), timeout=float(timeout),
                            extra_args={k: list(v) for k, v in dict(collect_args).items()})


    def _report(message):
        if strict:
            raise registry.NotebookStop(message)
        problems.append(message)
        print(message)


    def section(name):
        \"\"\"Collect (when possible) and analyse one section; None when there is nothing to show.\"\"\"
        if name not in selected:
            print(f"{name}: not selected")
            return None
        earlier = trace_root / name
        have_earlier = earlier.is_dir() and any(earlier.iterdir())
        if blocker is not None:
            tail = f"analysing earlier traces in {earlier}" if have_earlier else f"no earlier traces in {earlier}"
            print(f"{name}: skipped: {blocker}; {tail}")
            if not have_earlier:
                return None
        else:
            start = time.perf_counter()
            print(f"{name}: collecting ...")
            try:
                collector.collect_section(name, trace_root, ctx)
                print(f"{name}: collected in {time.perf_counter() - start:.1f} s -> {earlier}")
            except NeutrinoAEError as exc:
                _report(f"{name}: collection failed: {exc}")
                if not (earlier.is_dir() and any(earlier.iterdir())):
                    return None
                print(f"{name}: analysing the earlier traces in {earlier}")
        try:
            res = collector.analyze_section(name, trace_root, out_root)
        except NeutrinoAEError as exc:
            _report(f"{name}: analysis failed: {exc}")
            return None
        results[name] = res
        return res


    def show(res, figures=None, tables=True, text=True):
        \"\"\"Display a result's saved figures (all, or those whose file key is in `figures`), tables, text.\"\"\"
        if res is None:
            return
        for key, path in res.files.items():
            if Path(path).suffix == ".png" and (figures is None or key in figures):
                display(Image(filename=str(path)))
        if tables:
            for tname, df in res.tables.items():
                display(Markdown(f"**{tname}**"))
                display(df)
        if text and res.text:
            print(res.text)
""")

BLOCK_MD = md("""
    ## 1. Block scheduling cost (Sec. 4.5) — start here

    The kick-the-tires run. `block_sched/raw.py` zero-fills a 4096×4096 fp16 tensor with
    `torch.zeros`, a kernel of 32,768 small blocks, under `neutrino -p block_sched`: every warp saves
    its start clock, elapsed cycles and SM id. The analysis replays each SM's blocks in block-index
    order and counts the idle gap before a block could reuse a finished block's slot (the artifact's
    metric, unchanged so numbers stay comparable). On the authors' A100:
    `No.block:32768 Running:602241 Scheduling:87713(cycle)`, scheduling ≈ 13 % of running.

    Sec. 4.5's two fixes are collected too: `block_sched/persist.py`, a persistent Triton kernel with
    one program per SM (traced: far fewer blocks to schedule), and `block_sched/memset.py`, the
    driver's `cuMemsetD16` (no kernel of ours to probe, so it is only timed). With Nsight Systems on
    PATH the three are timed (`nsys profile --stats=true`); the reports land in
    `trace_root/block_sched/timing/`.
""")

BLOCK = code("""
    block_res = section("block_sched")
    show(block_res)
    timing = trace_root / "block_sched" / "timing"
    if block_res is not None:
        logs = sorted(timing.glob("nsys_*.stdout.log")) if timing.is_dir() else []
        print("nsys timings: " + (", ".join(str(p) for p in logs) if logs else "none (nsys not on PATH)"))
""")

DMAT_MD = md("""
    ## 2. Densified memory access timelines (Fig. 1, Fig. 10a/b/c)

    `neutrino -p dmat -k <keyword>` records the clock and address of every global load/store of the
    matching kernel. The collector sparsifies each raw trace into the paper's `.dmat` file (accesses
    per 64 KiB page per clock), which the DMAT plotter of the static notebook reads. Workloads,
    all with q, k, v of shape (4, 32, 4096, 64) fp16, seed 42, scale 0.5, non-causal:
    `dmat/fig1.py` (our Triton FlashAttention-2, BLOCK_M 128 / BLOCK_N 64 / 2 stages / 8 warps),
    `dmat/fig10a.py` (64 / 64 / 2 / 4), `dmat/fig10b.py` (PyTorch SDPA, flash backend, keyword
    `flash`), `dmat/fig10c.py` (SDPA memory-efficient backend, keyword `fmha`).

    DMAT traces are large and slow to collect (minutes per figure). The pattern depends on the GPU
    (the paper notes an RTX 3080 reproduces its plots exactly) and varies a little run to run.
""")

DMAT = code("""
    dmat_res = section("dmat")
    show(dmat_res)
""")

KERNEL_MD = md("""
    ## 3. Kernel slowdown and extra registers (Table 2)

    `kernel_overhead/collect.py` runs each kernel under `neutrino --benchmark -p <probe> --filter
    distribution:copy`: the probed kernel and the pruned original are both timed, so the slowdown is
    probed / original, and `process.log` gives the extra registers (probed − pruned). Kernels:
    CUTLASS GEMM, Stream-K GEMM and Conv2D (each under its own key; they need the artifact's CUTLASS
    build, otherwise those rows are skipped), Triton grouped GEMM and FlashAttention-2, PyTorch
    Batch/LayerNorm, Softmax, Sum, Max/AvgPool, Embedding, Gather. Probes: block_sched, gmem_bytes,
    tensorop_count, dmat. The paper's first five rows came from traces that were later re-collected:
    expect similar, not identical, values.
""")

KERNEL = code("""
    show(section("kernel_overhead"))
""")

MAXMEM_MD = md("""
    ## 4. Maximum probe memory (Fig. 11)

    `max_mem/collect.py` runs torch.compile'd sub-modules of each model under
    `neutrino -p <probe> --memusage` (memory accounting only, no trace saving): compiling routes
    every matmul to Triton/ATen kernels that Neutrino can probe (cuBLAS it cannot). The largest
    probe buffer of any launch is compared with the workload's own peak memory. Without the
    artifact's sub-module scripts (`collect_args={"max_mem": ["--compiled", DIR]}`) built-in
    ResNet-block and Llama-layer sub-modules stand in; `sd-bs1` and `mamba-bs32` are then skipped.
""")

MAXMEM = code("""
    show(section("max_mem"))
""")

LATENCY_MD = md("""
    ## 5. Exposed latency vs. Nsight Compute (Fig. 12)

    `exposed_latency/main.py` times one launch of each workload (attention, grouped GEMM, CUTLASS conv
    and GEMM) per probe: Neutrino's prologue / kernel / epilogue from `event.log`, the un-probed
    original, and the extra wall time of the same launch under Nsight Compute when `ncu` is on
    PATH. The figure normalises both to the original kernel.
""")

LATENCY = code("""
    show(section("exposed_latency"))
""")

WARP_MD = md("""
    ## 6. Warp scheduling and the tailing effect (Fig. 13)

    `warp_sched/main.py` traces every warp of one compute-bound Triton kernel launched three ways:
    one block per SM (exclusive schedulers, Fig. 13a), four blocks per SM (shared schedulers,
    Fig. 13b) and 2.5 waves of blocks with growing work (the tail, Fig. 13c/d). This workload is our
    reconstruction; expect the paper's qualitative picture, and timelines that differ by GPU.
""")

WARP = code("""
    show(section("warp_sched"))
""")

INTERNALS_MD = md("""
    ## 7. Inside a trace directory

    Not a paper result: a tour of what Neutrino writes, taken from the **newest** trace directory
    under `trace_root` (by modification time). `probe.toml` is the probe that ran (its `position`,
    `datamodel`, `before`/`after` snippets and the `analyze_hook`); `event.log` is the hooked
    driver's log (process, command, memory operations, each launch with its grid, probe buffer,
    saved file and timings); each `kernel/<i>_<sha1>/` holds the probe engine's work on one kernel:
    `kernel.info` (name, parameter count, saving probes, analyze hook), `process.log` (including
    the assembler's register counts) and the PTX before (`pruned.ptx`) and after (`probed.ptx`)
    probing, compared below; `result/*.bin` are the binary traces, named by seconds since start.
""")

INTERNALS = code("""
    def _head(path, n=40):
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
        return "\\n".join(lines[:n] + ([f"... ({len(lines) - n} more lines)"] if len(lines) > n else []))


    newest = collector.newest_trace_dir(trace_root)
    if newest is None:
        print(f"internals: skipped: no trace directory under {trace_root} yet")
    else:
        print(f"newest trace directory: {newest}\\n")
        for path in sorted(newest.rglob("*")):
            rel = path.relative_to(newest)
            print("  " * (len(rel.parts) - 1) + rel.name + ("/" if path.is_dir() else f"  ({path.stat().st_size} B)"))
        for name in ("probe.toml", "event.log"):
            if (newest / name).is_file():
                print(f"\\n--- {name}\\n" + _head(newest / name))
        kdirs = sorted((newest / "kernel").glob("*/"), key=lambda p: p.stat().st_mtime_ns)
        if kdirs:
            kdir = kdirs[-1]
            for name in ("kernel.info", "process.log"):
                if (kdir / name).is_file():
                    print(f"\\n--- kernel/{kdir.name}/{name}\\n" + _head(kdir / name))
            pruned, probed = kdir / "pruned.ptx", kdir / "probed.ptx"
            if pruned.is_file() and probed.is_file():
                diff = difflib.unified_diff(
                    pruned.read_text(errors="replace").splitlines(), probed.read_text(errors="replace").splitlines(),
                    "pruned.ptx", "probed.ptx", lineterm="", n=1)
                print("\\n--- pruned.ptx vs probed.ptx (what the probe engine added)\\n" + "\\n".join(list(diff)[:80]))
        results_bins = collector.results_by_time(newest)
        print(f"\\nresult files in launch order: {[p.name for p in results_bins]}")
""")

SUMMARY_MD = md("""
    ## Summary

    Every headline number of the sections that produced results, in the same `summary.json` shape
    as `static.ipynb` (`bundle_kind` is `dynamic`), so a run can be compared with a static one:
    `neutrino-ae compare results/static results/dynamic`.
""")

SUMMARY = code("""
    rows = registry.summary_rows(results, bundle_kind="dynamic")
    gpu = [f"{g.name} (sm_{g.compute_cap.replace('.', '')}, {g.sm_count} SMs)" for g in env_report.gpus]
    summary_path = write_summary(out_root / "summary.json", rows, notebook="dynamic", bundle_kind="dynamic",
                                 trace_root=str(trace_root.resolve()), gpu=gpu, collected=blocker is None,
                                 sections=selected, problems=problems)
    print(f"wrote {summary_path} ({len(rows)} rows)")
    if rows:
        display(pd.DataFrame(rows)[["section", "key", "paper_ref", "value", "unit"]])
    for p in problems:
        print(f"problem: {p}")
""")


def cells() -> list[nbformat.NotebookNode]:
    v4 = nbformat.v4
    pairs = [("intro", INTRO, None), ("parameters", PARAMETERS, "parameters"), ("env-md", ENV_MD, None),
             ("env", ENV, "code"), ("block-sched-md", BLOCK_MD, None), ("block-sched", BLOCK, "code"),
             ("dmat-md", DMAT_MD, None), ("dmat", DMAT, "code"), ("kernel-overhead-md", KERNEL_MD, None),
             ("kernel-overhead", KERNEL, "code"), ("max-mem-md", MAXMEM_MD, None), ("max-mem", MAXMEM, "code"),
             ("exposed-latency-md", LATENCY_MD, None), ("exposed-latency", LATENCY, "code"),
             ("warp-sched-md", WARP_MD, None), ("warp-sched", WARP, "code"),
             ("internals-md", INTERNALS_MD, None), ("internals", INTERNALS, "code"),
             ("summary-md", SUMMARY_MD, None), ("summary", SUMMARY, "code")]
    out = []
    for cid, src, kind in pairs:
        if kind is None:
            out.append(v4.new_markdown_cell(src, id=cid))
        elif kind == "parameters":
            out.append(v4.new_code_cell(src, id=cid, metadata={"tags": ["parameters"]}))
        else:
            out.append(v4.new_code_cell(src, id=cid))
    return out


def build() -> str:
    """The notebook as the exact text that is committed."""
    return notebook_text(cells())


def main(argv: list[str] | None = None) -> int:
    return builder_main(__doc__.splitlines()[0], NOTEBOOK, build, argv)


if __name__ == "__main__":
    sys.exit(main())
