"""Benchmarks: every analysis timed against the raw-read limit of the same machine, in one run.

    python -m benchmarks.bench --speed [--blocks ...] [--sample]   (issue 24: whole commands vs the artifact)
    python -m benchmarks.bench [--size-mb N] [--only block_sched,warp_sched,dmat,eventlog,static]
                                [--repeat 3] [--json PATH] [--cache DIR] [--smoke]

For each case the parent process

1. makes the input with the sample generator's GPU model (cached in ``--cache`` under a key of
   case, size and seed, so a second run does not pay for generation);
2. reads every input file once, so the baseline and the analysis both run with a warm page cache
   (dropping the cache needs root; warm-vs-warm is the fair comparison we can make everywhere);
3. runs the raw-read baseline and then the analysis, each in a **fresh subprocess** that repeats the
   work ``--repeat`` times and reports per-run wall times; the parent reaps each child with
   ``os.wait4`` and takes ``ru_maxrss`` of that child alone, so one case's memory never leaks into
   another's figure.

The baseline is the practical limit of reading the same bytes: ``np.fromfile`` in 64 MB chunks,
each reduced with a sum over uint64 words, run at least 7 times; its best run is the limit.
``ratio = best baseline seconds / median analysis seconds`` (the analysis throughput as a fraction
of raw-read throughput; ``ratio_vs_raw_median`` is beside it). Both come from the same run, so the
ratio survives a busy or slow machine far better than the absolute seconds.

Results are printed as a table with PASS/MISS per target and written as JSON (machine
description included). Sizes are in MB = 10**6 bytes.

The cases are :mod:`benchmarks.cases`; spawning and measuring children :mod:`benchmarks.measure`;
the run's arguments, targets and results file :mod:`benchmarks.harness` (both shared with
:mod:`benchmarks.e2e`); the machine description :mod:`benchmarks.machine`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.cases import CASES, Case, case_by_name, expand_only
from benchmarks.harness import DEFAULT_CACHE, attempt, collect, finish, parse_run_args, target_row
from benchmarks.machine import machine_description
from benchmarks.measure import child_env, child_failure, generate_in_child, spawn_measured, warm_page_cache
from neutrino_ae.atomic import write_json

MB = 1_000_000
RAW_CHUNK_BYTES = 64 << 20
RAW_MIN_RUNS = 7
SCHEMA_VERSION = 1


# --------------------------------------------------------------------------------------------- baseline


def raw_read(paths: Sequence[Path]) -> int:
    """Read every byte of ``paths`` with ``np.fromfile`` in bounded chunks and reduce it.

    The reduction (a sum over uint64 words, plus the < 8 tail bytes) forces the data through the
    CPU, as any analysis must; returning the sum keeps it from being optimised into nothing.
    """
    total = 0
    for path in paths:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            left = size // 8
            while left:
                n = min(left, RAW_CHUNK_BYTES // 8)
                total += int(np.fromfile(fh, dtype="<u8", count=n).sum(dtype=np.uint64))
                left -= n
            tail = np.fromfile(fh, dtype=np.uint8)
            total += int(tail.sum(dtype=np.uint64))
    return total & 0xFFFF_FFFF_FFFF_FFFF


# --------------------------------------------------------------------------------------------- child


def _generate_main(argv: Sequence[str]) -> int:
    """Entry point of the generating subprocess (keeps the big arrays out of the parent)."""
    ap = argparse.ArgumentParser(prog="benchmarks.bench --generate")
    ap.add_argument("--case", required=True)
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--size-mb", type=float, default=None)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--result", type=Path, required=True)
    args = ap.parse_args(argv)
    inp, meta = case_by_name(args.case).ensure_input(args.cache, args.size_mb, args.seed, args.smoke)
    write_json(args.result, {"input": str(inp), "meta": meta})
    return 0


def _ensure_input(case: Case, args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    if args.smoke:
        # Smoke inputs are tiny and their RSS figures are not reported as results, so a generating
        # child (an interpreter start and the generator's imports per case) is not worth its second.
        return case.ensure_input(args.cache, args.size_mb, args.seed, args.smoke)
    gen_args = ["--case", case.name, "--cache", str(args.cache), "--seed", str(args.seed)]
    if args.size_mb is not None:
        gen_args += ["--size-mb", str(args.size_mb)]
    return generate_in_child("benchmarks.bench", case.name, gen_args,
                             args.cache / f".generate-{case.name}-{os.getpid()}.json")


def _child_main(argv: Sequence[str]) -> int:
    """Entry point of a measuring subprocess: repeat one workload, write per-run seconds as JSON."""
    ap = argparse.ArgumentParser(prog="benchmarks.bench --child")
    ap.add_argument("--case", required=True)
    ap.add_argument("--mode", choices=("raw", "work"), required=True)
    ap.add_argument("--input", type=Path, required=True)
    ap.add_argument("--scratch", type=Path, required=True)
    ap.add_argument("--repeat", type=int, required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--result", type=Path, required=True)
    args = ap.parse_args(argv)
    case = case_by_name(args.case)
    files = case.raw_files(args.input)
    seconds: list[float] = []
    info: dict[str, Any] = {}
    for i in range(args.repeat):
        scratch = args.scratch / f"run{i}"
        if scratch.exists():
            shutil.rmtree(scratch)
        scratch.mkdir(parents=True)
        t0 = time.perf_counter()
        if args.mode == "raw":
            info = {"checksum": raw_read(files)}
        else:
            info = case.run(args.input, scratch, args.smoke) or {}
        seconds.append(time.perf_counter() - t0)
    write_json(args.result, {"seconds": seconds, "info": info})
    return 0


def _run_child(case: Case, mode: str, inp: Path, scratch: Path, repeat: int, smoke: bool,
               timeout_s: float) -> dict[str, Any]:
    """Run one measuring child; return its per-run seconds plus its own peak RSS (``os.wait4``)."""
    scratch.mkdir(parents=True, exist_ok=True)
    result = scratch / f"{mode}.json"
    result.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "benchmarks.bench", "--child", "--case", case.name, "--mode", mode,
           "--input", str(inp), "--scratch", str(scratch / mode), "--repeat", str(repeat),
           "--result", str(result)] + (["--smoke"] if smoke else [])
    log = scratch / f"{mode}.log"
    run = spawn_measured(cmd, child_env(), log, timeout_s)
    if run["returncode"] != 0 or not result.exists():
        raise child_failure(f"{case.name} {mode} child", run["returncode"], log.read_text(errors="replace"), 15)
    doc = json.loads(result.read_text())
    doc["peak_rss_bytes"] = run["peak_rss_bytes"]
    doc["cpu_seconds"] = run["cpu_seconds"]
    return doc


# --------------------------------------------------------------------------------------------- driver


def run_case(case: Case, args: argparse.Namespace) -> dict[str, Any]:
    """Make (or reuse) the input, warm it, time baseline and analysis in fresh children."""
    t0 = time.perf_counter()
    inp, input_meta = _ensure_input(case, args)
    gen_seconds = time.perf_counter() - t0
    files = case.raw_files(inp)
    nbytes = sum(p.stat().st_size for p in files)
    warm_page_cache(files)
    scratch = args.cache / "_scratch" / case.name
    if scratch.exists():
        shutil.rmtree(scratch)
    load_before = os.getloadavg()[0]
    parent_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    # The baseline is short (tens of ms for the 17-67 MB traces), so one descheduling on a shared
    # machine can inflate it several times; it gets more runs and its best run is the limit.
    raw = _run_child(case, "raw", inp, scratch, max(args.repeat, RAW_MIN_RUNS), args.smoke, args.timeout)
    work = _run_child(case, "work", inp, scratch, case.repeat(args.repeat, args.smoke), args.smoke, args.timeout)
    shutil.rmtree(scratch, ignore_errors=True)
    raw_s = min(raw["seconds"])
    raw_median = statistics.median(raw["seconds"])
    work_s = statistics.median(work["seconds"])
    values = {
        "seconds": work_s,
        "mb_per_s": nbytes / MB / work_s if work_s > 0 else float("inf"),
        "ratio": raw_s / work_s if work_s > 0 else float("inf"),
        "peak_rss_mb": work["peak_rss_bytes"] / MB,
    }
    targets = [target_row(t, values) for t in case.targets(args.smoke, input_meta)]
    return {
        "case": case.name,
        "title": case.title,
        "input": {"path": str(inp), "bytes": nbytes, "files": len(files), **input_meta,
                  "generate_seconds": round(gen_seconds, 3)},
        "seconds": work_s,
        "seconds_runs": work["seconds"],
        "mb_per_s": values["mb_per_s"],
        "peak_rss_bytes": work["peak_rss_bytes"],
        "cpu_seconds_total": work["cpu_seconds"],
        "ratio_vs_raw_median": raw_median / work_s if work_s > 0 else float("inf"),
        "raw_read": {"seconds": raw_s, "seconds_median": raw_median, "seconds_runs": raw["seconds"],
                     "mb_per_s": nbytes / MB / raw_s if raw_s > 0 else float("inf"),
                     "peak_rss_bytes": raw["peak_rss_bytes"]},
        "ratio": values["ratio"],
        "targets": targets,
        "pass": all(t["pass"] for t in targets),
        "info": work.get("info", {}),
        "loadavg_1min_before": load_before,
        # A child's ru_maxrss cannot be below the spawning parent's peak; this is that floor.
        "rss_floor_bytes": parent_peak,
    }


def _fmt_target(t: dict[str, Any]) -> str:
    got = t["measured"]
    shown = "n/a" if got is None else f"{got:.3g}"
    verdict = "PASS" if t["pass"] else f"MISS (x{t['miss_factor']:.2f} off)" if t["miss_factor"] else "MISS"
    return f"{t['label']}: {shown} {t['op']} {t['value']:g} {verdict}"


def print_row(r: dict[str, Any]) -> None:
    print(f"{r['case']:<14} {r['input']['bytes'] / MB:>9.1f} MB  {r['seconds']:>8.3f} s  "
          f"{r['mb_per_s']:>9.1f} MB/s  rss {r['peak_rss_bytes'] / MB:>7.0f} MB  "
          f"raw {r['raw_read']['seconds']:.4f} s ({r['raw_read']['mb_per_s']:.0f} MB/s)  ratio {r['ratio']:.3f}")
    for t in r["targets"]:
        print(f"{'':<16}{_fmt_target(t)}")
    sys.stdout.flush()


def _run_cases(selected: Sequence[Case], args: argparse.Namespace) -> Iterator[tuple[Case, dict[str, Any] | Exception]]:
    """Each case's row (or its exception), in registry order.

    A real run measures one case at a time. ``--smoke`` only checks that every case still runs, so
    the notebook cases (interpreter and kernel start-ups, most of the smoke run's wall time) run in
    a second thread beside the trace cases; they stay sequential among themselves because they share
    one cached bundle. Every case still gets its own measuring children.
    """
    if not args.smoke:
        for case in selected:
            yield case, attempt(run_case, case, args)
        return
    static = [c for c in selected if c.group == "static"]
    others = [c for c in selected if c.group != "static"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        lanes = [pool.submit(lambda cs: [attempt(run_case, c, args) for c in cs], cs) for cs in (others, static)]
        done = dict(zip([*others, *static], [*lanes[0].result(), *lanes[1].result()], strict=True))
    for case in selected:
        yield case, done[case]


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=None,
                    help="input size for every trace case, in MB (default: each case's paper-scale size)")
    ap.add_argument("--only", default=None,
                    help=f"comma-separated cases or groups ({', '.join(c.name for c in CASES)}; "
                         "'static' = both static cases)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per case; the median is reported (default 3)")
    ap.add_argument("--json", type=Path, default=None, help="write the results JSON here")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                    help=f"generated inputs are kept here between runs (default {DEFAULT_CACHE})")
    ap.add_argument("--seed", type=int, default=0, help="generator seed (part of the cache key)")
    ap.add_argument("--smoke", action="store_true", help="every case at a tiny size: checks the harness in seconds")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds before one measuring child is killed")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--speed" in argv:  # issue 24's table: whole commands beside the artifact's (benchmarks/speed.py)
        # In a process of its own that imports no numpy: a child's ru_maxrss starts at its parent's peak.
        import subprocess

        from benchmarks.measure import REPO_ROOT, child_env

        return subprocess.call([sys.executable, "-m", "benchmarks.speed", *(a for a in argv if a != "--speed")],
                               cwd=REPO_ROOT, env=child_env())
    parsed = parse_run_args(argv, build_parser(), {"--child": _child_main, "--generate": _generate_main},
                            expand_only)
    if isinstance(parsed, int):
        return parsed
    args, selected = parsed
    machine = machine_description()
    print(f"machine: {machine['cpu_model']}, {machine['cpus_usable']} usable CPUs, "
          f"{(machine['mem_total_bytes'] or 0) / 2**30:.1f} GiB RAM, load {machine['loadavg_at_start'][0]:.2f}; "
          f"python {machine['versions']['python']}, numpy {machine['versions']['numpy']}")
    print(f"{'case':<14} {'input':>12}  {'median':>10}  {'throughput':>14}  {'peak RSS':>11}")
    results, failures = collect(_run_cases(selected, args), 14, print_row)
    misses = [t["label"] for r in results for t in r["targets"] if not t["pass"]]
    method = {
        "baseline": "np.fromfile in 64 MB chunks + uint64 sum over the same input files, warm page cache, "
                    f"at least {RAW_MIN_RUNS} runs, best run taken as the limit",
        "ratio": "best baseline seconds / median analysis seconds, both measured in this run",
        "peak_rss": "ru_maxrss of the measuring child (os.wait4), including children it reaped",
        "mb": "10**6 bytes",
    }
    return finish("python -m benchmarks.bench", argv, args, SCHEMA_VERSION, machine, results, failures, misses,
                  extra={"method": method})


if __name__ == "__main__":
    sys.exit(main())
