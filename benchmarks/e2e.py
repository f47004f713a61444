"""End-to-end benchmarks: each per-figure command line as a whole process, beside the artifact's own script.

    python -m benchmarks.e2e [--only block_sched,dmat,warp_sched] [--sizes 1,10,30] [--repeat N]
                             [--json PATH] [--cache DIR] [--dmat-30x] [--smoke]

What a user runs is the command line, figures and result files included, so every case here times
one whole process (interpreter start-up, imports, reading, analysis, figures, files written) on
inputs of 1x, 10x and 30x paper size:

* ``block_sched``: ``python block_sched/block_sched.py <trace.bin> --out DIR`` beside the artifact's
  ``neutrino/tools/block_sched.py <trace.bin>`` (``PYTHONPATH=<artifact tree>``; it imports
  ``neutrino.TraceHeader``). 1x = 32,768 blocks x 4 warps (2.1 MB), 10x = 327,680, 30x = 983,040.
* ``dmat``: ``python dmat/dmat.py <tracedir>/result/<t>.bin --out DIR`` beside the artifact's
  ``neutrino/tools/dmat.py <tracedir>/result/<t>.bin``, which runs the C++ sparsifier ``dmat.cc``
  (built here with ``g++ -O3 -std=c++17`` into the extracted tree, as the plotter expects it) and then
  plots in Python. Input: a random-access dmat trace (``benchmarks/cases/e2egen.py``), 1x = 64 blocks
  of 1 MiB (67.1 MB); sizes of 30x (2 GB) and more only with ``--dmat-30x``. At 64x (4096 blocks,
  4.29 GB) the row also checks the issue's large-trace target: under 60 s and 1 GiB of peak RSS.
* ``fig13a`` / ``fig13cd`` (group ``warp_sched``): ``python warp_sched/fig13a.py <trace.bin>`` and
  ``python warp_sched/fig13cd.py <trace.bin>``; 1x = the sample bundle's paper-scale shared trace
  (668 blocks x 32 warps, 0.34 MB). The artifact has no script for Fig. 13, so these have no ratio.

Per case and size: wall seconds of one run (median of ``--repeat``), peak RSS of the child (``os.wait4``:
the child and everything it reaped, e.g. the artifact's C++ sparsifier), ``ratio = artifact seconds /
our seconds``, and the seconds spent in ``neutrino_ae.report.figures.style.save_figure`` (our CLI run once
more under ``python -m cProfile``). Per case: the growth exponent of wall time against input bytes,
a least-squares fit on log-log over the sizes run (1x..30x).

The artifact tree is extracted from ``../shared/neutrino-src/neutrino-artifact.tar.gz`` (or
``$NEUTRINO_SRC/neutrino-artifact.tar.gz``; an unmodified upstream snapshot, MIT) into the cache
directory at run time, never into the repo; without it the artifact side is skipped and every row
says so.
The cases and their inputs are :mod:`benchmarks.e2e_cases`, the artifact side :mod:`benchmarks.e2e_artifact`,
one measured run, its profile and the fits :mod:`benchmarks.e2e_measure`; this module runs the sizes
and reports.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.cases import Target
from benchmarks.e2e_artifact import DEFAULT_ARTIFACT, Artifact, artifact_command, artifact_outputs, prepare_artifact
from benchmarks.e2e_cases import E2ECase, ensure_input, expand_only, generate_main
from benchmarks.e2e_measure import (
    RENDER_FILE,
    RENDER_FUNC,
    growth_exponent,
    median_runs,
    our_outputs,
    profile_render,
    run_measured,
    skip_reason,
)
from benchmarks.harness import DEFAULT_CACHE, attempt, collect, finish, parse_run_args, target_row
from benchmarks.machine import machine_description
from benchmarks.measure import warm_page_cache

MB = 1_000_000
SCHEMA_VERSION = 1
DEFAULT_SIZES = (1.0, 10.0, 30.0)
SMOKE_SIZES = (1.0, 2.0)

# Targets of issue 10.
SPEEDUP_TARGET = 10.0
EXPONENT_TARGET = 1.1
RENDER_TARGET_S = 1.0
#: A raw DMAT trace of this size or more must complete in under DMAT_LARGE_SECONDS with under
#: DMAT_LARGE_RSS bytes of peak RSS (64x = 4096 blocks of 1 MiB = 4.29 GB).
DMAT_LARGE_BYTES = 4 * 2**30
DMAT_LARGE_SECONDS = 60.0
DMAT_LARGE_RSS = 2**30


# --------------------------------------------------------------------------------------------- driver


def _case_sizes(case: E2ECase, args: argparse.Namespace) -> tuple[list[float], str | None]:
    if case.name == "dmat" and not args.smoke and not args.dmat_30x:
        kept = [m for m in args.sizes if m < 30]
        if len(kept) < len(args.sizes):
            return kept, ("30x and more (2 GB+ raw traces) left out: opt in with --dmat-30x (the artifact alone "
                          "takes minutes at 10x and its RSS grows linearly with this trace)")
    return list(args.sizes), None


def run_case(case: E2ECase, art: Artifact, args: argparse.Namespace) -> dict[str, Any]:
    """Every size of one case: inputs, our CLI (timed runs + one profiled run), the artifact's script."""
    sizes, size_note = _case_sizes(case, args)
    scratch_root = args.cache / "_e2e_scratch" / case.name
    shutil.rmtree(scratch_root, ignore_errors=True)
    rows: list[dict[str, Any]] = []
    last_art: tuple[int, dict[str, Any]] | None = None
    warmup_s = None
    our_env = dict(os.environ)
    for mult in sizes:
        blocks = case.blocks(mult, args.smoke)
        too_big = skip_reason("our CLI", rows[-1]["ours"], blocks / rows[-1]["blocks"], args) if rows else None
        if too_big:
            size_note = "; ".join(filter(None, [size_note, f"{mult:g}x and above left out: {too_big}"]))
            break
        t0 = time.perf_counter()
        inp, meta = ensure_input(case, blocks, args)
        gen_s = time.perf_counter() - t0
        files = case.files(inp)
        nbytes = sum(p.stat().st_size for p in files)
        warm_page_cache(files)
        scratch = scratch_root / f"x{mult:g}"
        if warmup_s is None and not args.smoke:
            # One untimed run first: the numba on-disk cache and .pyc files are then warm, as after a
            # user's first run; its seconds are kept in the JSON.
            w = run_measured([sys.executable, *case.ours(inp, scratch / "warmup")], our_env,
                             scratch / "warmup.log", args.timeout)
            warmup_s = w["seconds"]
            shutil.rmtree(scratch / "warmup", ignore_errors=True)
        load_before = os.getloadavg()[0]
        runs = []
        outputs: dict[str, Any] = {}
        prof = None
        largest = mult == max(sizes)
        if args.smoke and largest:
            # --smoke checks the harness, not the speed: the profiled run is also the timed one.
            prof = profile_render(case, inp, scratch / "profile", args.timeout)
            runs, outputs = [prof.pop("run")], prof.pop("outputs")
        for i in range(0 if runs else args.repeat):
            out = scratch / f"ours{i}"
            r = run_measured([sys.executable, *case.ours(inp, out)], our_env, scratch / f"ours{i}.log", args.timeout)
            outputs = our_outputs(out, r.pop("stdout"))
            runs.append(r)
            shutil.rmtree(out, ignore_errors=True)
        ours = {**median_runs(runs), "outputs": outputs, "timed_under_profile": prof is not None}
        art_row: dict[str, Any] | None = None
        art_note = art.note or (art.dmat_note if case.artifact == "dmat" else None)
        if case.artifact is None:
            art_note = "the artifact has no script for this figure"
        elif art_note is None and args.smoke and mult != min(sizes):
            art_note = "--smoke: the artifact runs at the smallest size only"
        elif art_note is None and last_art is not None:
            too_big = skip_reason("the artifact", last_art[1], nbytes / last_art[0], args)
            art_note = f"artifact skipped at {mult:g}x: {too_big}" if too_big else None
        if art_note is None:
            aruns = []
            aout: dict[str, Any] = {}
            try:
                for i in range(args.repeat):
                    ascratch = scratch / f"artifact{i}"
                    shutil.rmtree(ascratch, ignore_errors=True)
                    ascratch.mkdir(parents=True)
                    cmd, env = artifact_command(case, art, inp, ascratch)
                    r = run_measured(cmd, env, scratch / f"artifact{i}.log", args.timeout)
                    aout = artifact_outputs(case, ascratch, r.pop("stdout"))
                    aruns.append(r)
                    shutil.rmtree(ascratch, ignore_errors=True)
            except RuntimeError as exc:
                # The artifact's own failure (a crash, a timeout) is a finding of this row, not ours.
                art_note = f"artifact failed at {mult:g}x: {exc}"
            else:
                art_row = {**median_runs(aruns), "outputs": aout}
                last_art = (nbytes, art_row)
        if not args.smoke:
            prof = profile_render(case, inp, scratch / "profile", args.timeout)
            del prof["run"], prof["outputs"]
        shutil.rmtree(scratch, ignore_errors=True)
        ratio = art_row["seconds"] / ours["seconds"] if art_row else None
        targets = []
        if art_row is not None:
            values = {"speedup": ratio, "rss_vs_artifact": ours["peak_rss_bytes"] / art_row["peak_rss_bytes"]}
            targets.append(target_row(
                Target("speedup", ">=", SPEEDUP_TARGET, f"{SPEEDUP_TARGET:g}x faster than the artifact"), values))
            share = case.rss_share or 1.0
            label = "peak RSS <= artifact's" if share == 1.0 else f"peak RSS <= 1/{1 / share:g} of artifact's"
            targets.append(target_row(Target("rss_vs_artifact", "<=", share, label), values))
        if case.artifact == "dmat" and nbytes >= DMAT_LARGE_BYTES:
            values = {"seconds": ours["seconds"], "peak_rss_bytes": ours["peak_rss_bytes"]}
            targets.append(target_row(
                Target("seconds", "<=", DMAT_LARGE_SECONDS, f"a 4 GB raw trace in < {DMAT_LARGE_SECONDS:g} s"), values))
            targets.append(target_row(
                Target("peak_rss_bytes", "<=", DMAT_LARGE_RSS, "... with < 1 GiB peak RSS"), values))
        if prof is not None:
            targets.append(target_row(
                Target("render_seconds", "<=", RENDER_TARGET_S, f"figure rendering < {RENDER_TARGET_S:g} s"),
                {"render_seconds": prof["render_seconds"]}))
        rows.append({
            "size_mult": mult, "blocks": blocks,
            "input": {"path": str(inp), "bytes": nbytes, "generate_seconds": round(gen_s, 3), **meta},
            "ours": ours, "artifact": art_row, "artifact_note": art_note, "ratio": ratio,
            "render": prof, "targets": targets, "loadavg_1min_before": load_before,
        })
        print_row(case, rows[-1])
    shutil.rmtree(scratch_root, ignore_errors=True)
    exp_ours = growth_exponent([(r["input"]["bytes"], r["ours"]["seconds"]) for r in rows])
    art_pts = [(r["input"]["bytes"], r["artifact"]["seconds"]) for r in rows if r["artifact"]]
    exp_art = growth_exponent(art_pts) if len(art_pts) == len(rows) else None
    summary_targets = []
    if exp_ours is not None:
        summary_targets.append(target_row(
            Target("exponent", "<=", EXPONENT_TARGET, f"growth exponent <= {EXPONENT_TARGET:g}"),
            {"exponent": exp_ours}))
    renders = [r["render"]["render_seconds"] for r in rows if r["render"]]
    doc = {"case": case.name, "group": case.group, "title": case.title, "artifact": case.artifact,
           "sizes": rows, "exponent_ours": exp_ours, "exponent_artifact": exp_art,
           "exponent_artifact_note": None if exp_art is not None or not art_pts else
           "artifact not run at every size: no exponent",
           "render_seconds_max": max(renders) if renders else None, "warmup_seconds": warmup_s,
           "size_note": size_note, "targets": summary_targets}
    print_summary(doc)
    return doc


def _fmt_mb(b: float) -> str:
    return f"{b / MB:.0f} MB" if b >= 10 * MB else f"{b / MB:.2f} MB"


def _verdicts(targets: Sequence[dict[str, Any]]) -> str:
    out = []
    for t in targets:
        got = t["measured"]
        if t["pass"]:
            out.append(f"{t['label']}: PASS")
        else:
            off = f" x{t['miss_factor']:.2g} off" if t["miss_factor"] else ""
            shown = "n/a" if got is None else f"{got:.3g}"
            out.append(f"{t['label']}: MISS ({shown}{off})")
    return "; ".join(out)


def print_row(case: E2ECase, r: dict[str, Any]) -> None:
    o, a = r["ours"], r["artifact"]
    art = f"{a['seconds']:>8.2f} s {a['peak_rss_bytes'] / MB:>6.0f} MB" if a else f"{'-':>10} {'-':>9}"
    ratio = f"{r['ratio']:>6.2f}x" if r["ratio"] is not None else f"{'-':>7}"
    render = f"{r['render']['render_seconds']:>6.2f} s" if r["render"] else f"{'-':>8}"
    size = f"{r['blocks']:,} {case.count_word}, {_fmt_mb(r['input']['bytes'])}"
    print(f"{case.name:<12} {r['size_mult']:>3g}x {size:<32} {o['seconds']:>8.2f} s {o['peak_rss_bytes'] / MB:>6.0f} MB"
          f"  {art}  {ratio}  {render}")
    if r["targets"]:
        print(f"{'':<18}{_verdicts(r['targets'])}")
    if r["artifact_note"] and case.artifact is not None:
        print(f"{'':<18}note: {r['artifact_note']}")
    sys.stdout.flush()


def print_summary(doc: dict[str, Any]) -> None:
    exp = doc["exponent_ours"]
    shown = "n/a (one size)" if exp is None else f"{exp:.2f}"
    parts = [f"growth exponent ours {shown}"]
    if doc["exponent_artifact"] is not None:
        parts.append(f"artifact {doc['exponent_artifact']:.2f}")
    if doc["render_seconds_max"] is not None:
        parts.append(f"max rendering {doc['render_seconds_max']:.2f} s")
    line = ", ".join(parts)
    if doc["targets"]:
        line += "  -- " + _verdicts(doc["targets"])
    print(f"{'':<18}{doc['case']}: {line}")
    if doc["size_note"]:
        print(f"{'':<18}note: {doc['size_note']}")
    sys.stdout.flush()


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.e2e", description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=None,
                    help="comma-separated cases or groups (block_sched, dmat, fig13a, fig13cd; warp_sched = both)")
    ap.add_argument("--sizes", default=None,
                    help="comma-separated multiples of paper size (default 1,10,30; --smoke: 1,2 of tiny inputs)")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs per tool and size; median reported (default 1)")
    ap.add_argument("--json", type=Path, default=None, help="write the results JSON here")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                    help=f"inputs and the extracted artifact are kept here (default {DEFAULT_CACHE})")
    ap.add_argument("--artifact", type=Path, default=DEFAULT_ARTIFACT,
                    help=f"the artifact snapshot tarball (default {DEFAULT_ARTIFACT})")
    ap.add_argument("--seed", type=int, default=0, help="generator seed (part of the cache key)")
    ap.add_argument("--dmat-30x", action="store_true",
                    help="also run dmat at 30x and more (2 GB raw at 30x, 4.29 GB at 64x; the artifact is "
                         "skipped where its RSS would not fit)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny inputs, sizes 1,2, profile at the largest only, cases in two lanes: checks the harness")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds before one process is killed")
    return ap


def _check_sizes(args: argparse.Namespace) -> None:
    """``--sizes`` (or the default sizes) as sorted distinct positive multiples, into ``args.sizes``."""
    sizes = [float(s) for s in args.sizes.split(",") if s.strip()] if args.sizes else \
        list(SMOKE_SIZES if args.smoke else DEFAULT_SIZES)
    if not sizes or any(s <= 0 for s in sizes):
        raise ValueError("--sizes must be positive numbers")
    args.sizes = sorted(set(sizes))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parsed = parse_run_args(argv, build_parser(), {"--generate": generate_main}, expand_only, _check_sizes)
    if isinstance(parsed, int):
        return parsed
    args, selected = parsed
    load_start = list(os.getloadavg())
    need_dmat = any(c.artifact == "dmat" for c in selected)
    art = prepare_artifact(args.artifact, args.cache, need_dmat)
    if art.note:
        print(f"note: {art.note}")
    elif art.dmat_note:
        print(f"note: {art.dmat_note}")
    print(f"{'case':<12} {'size':>4} {'input':<32} {'ours (wall, peak RSS)':>21}  {'artifact':>19}  "
          f"{'art/ours':>7}  {'render':>8}")
    if args.smoke:
        # Only the harness is checked: two cases at a time, the costliest first (the inputs are tiny;
        # interpreter start-ups and the artifact's DMAT plot are most of the time).
        order = sorted(selected, key=lambda c: (c.artifact != "dmat", c.artifact is None))
        with ThreadPoolExecutor(max_workers=2) as pool:
            futs = {c: pool.submit(attempt, run_case, c, art, args) for c in order}
            results_in_order = [(c, futs[c].result()) for c in selected]
    else:
        results_in_order = [(c, attempt(run_case, c, art, args)) for c in selected]
    results, failures = collect(results_in_order, 12)
    # After the measurements: describing the machine imports pandas and matplotlib for their
    # versions, which would raise the parent's RSS (the floor of every child's ru_maxrss).
    parent_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    machine = machine_description()
    machine["loadavg_at_start"] = load_start
    misses = [t["label"] for c in results for r in c["sizes"] for t in r["targets"] if not t["pass"]]
    misses += [t["label"] for c in results for t in c["targets"] if not t["pass"]]
    extra = {
        "artifact": {"tarball": art.tarball, "tree": str(art.tree) if art.tree else None, "note": art.note,
                     "dmat_note": art.dmat_note, "dmat_build_seconds": art.build_seconds},
        "method": {
            "seconds": "wall clock of the whole process from spawn to exit (start-up, imports, figures, files), "
                       "warm page cache; median of --repeat runs",
            "peak_rss": "ru_maxrss from os.wait4 of the process: its peak and that of every child it reaped",
            "ratio": "artifact seconds / our seconds at the same size",
            "render": f"cumulative seconds of {RENDER_FILE}:{RENDER_FUNC} in one more run under python -m cProfile",
            "exponent": "least-squares slope of log(seconds) on log(input bytes) over the sizes run",
            "mb": "10**6 bytes",
        },
        "rss_floor_bytes": parent_peak,
    }
    return finish("python -m benchmarks.e2e", argv, args, SCHEMA_VERSION, machine, results, failures, misses,
                        run={"sizes": args.sizes}, extra=extra)


if __name__ == "__main__":
    sys.exit(main())
