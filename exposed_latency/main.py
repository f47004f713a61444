"""Fig. 12 collection: time each workload x probe under Neutrino and under Nsight Compute.

Writes ``<out>/{attn,gmm,conv,gemm}.csv`` with columns
``probe, original, ncu, neutrino, prologue, kernel, epilogue`` (milliseconds of one launch):

* prologue / kernel / epilogue: the probed launch's ``[exec] prologue .. kernel .. epilogue`` line of
  a NORMAL run (no ``--benchmark``). Only a normal run saves the trace: the epilogue then holds the
  device-to-host copy and the file write, the cost Fig. 12 exposes. In ``--benchmark`` mode the hook
  driver jumps past both (``goto leave`` in src/cuda.c), so its epilogue would understate it;
* original: the unprobed (pruned) kernel time from a second, ``--benchmark`` run of the same cell;
  neutrino = prologue + kernel + epilogue;
* ncu: extra wall time of ``ncu -k regex:<kw> -c 1 --metrics <m>`` over the plain run, when ``ncu``
  is on PATH (empty otherwise). The metric approximates what the probe measures.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import time
from pathlib import Path

from neutrino_ae.workloads.neutrino import script_collector

PROBES = ("block_sched", "gmem_bytes", "tensorop_count")
NCU_METRICS = {
    "block_sched": "sm__cycles_elapsed.avg",
    "gmem_bytes": "dram__bytes.sum",
    "tensorop_count": "sm__inst_executed_pipe_tensor.sum",
    "dmat": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
}
COLUMNS = ("probe", "original", "ncu", "neutrino", "prologue", "kernel", "epilogue")


def workloads(python: str, family: str = "paper") -> dict[str, tuple[list[str], str]]:
    """name -> (command, kernel keyword)."""
    from neutrino_ae.workloads.cutlass import CUTLASS_OPS
    from neutrino_ae.workloads.envcheck import cutlass_bin_dir

    if family == "ptx":  # Triton attn/gmm from sm_80 PTX; gemm/conv as CUDA C tensor-core stand-ins for CUTLASS
        from neutrino_ae.workloads.ptx_ops import KERNELS

        ptx_ops = [python, "-m", "neutrino_ae.workloads.ptx_ops"]
        return {name: ([*ptx_ops, name], KERNELS[name]) for name in ("attn", "gmm", "conv", "gemm")}
    ops = [python, "-m", "neutrino_ae.workloads.ops"]
    bdir = cutlass_bin_dir()
    return {
        "attn": ([*ops, "attn"], "attn"),
        "gmm": ([*ops, "gmm"], "gmm"),
        "conv": ([str(bdir / CUTLASS_OPS["conv"][0]), *CUTLASS_OPS["conv"][1:]], "conv"),
        "gemm": ([str(bdir / CUTLASS_OPS["gemm"][0]), *CUTLASS_OPS["gemm"][1:]], "gemm"),
    }


def launch_times(event_log: Path) -> dict[str, float]:
    """prologue/kernel/epilogue (ms) of the last launch in ``event_log`` that saved its trace."""
    from neutrino_ae.formats.eventlog import parse_event_log

    df = parse_event_log(event_log).launches
    saved = df[df["kernel_ms"].notna() & df["save_path"].notna()] if len(df) else df
    if not len(saved):
        raise ValueError(f"{event_log}: no launch that saved a trace with prologue/kernel/epilogue times "
                         "(a --benchmark run saves none)")
    row = saved.iloc[-1]
    out = {k: float(row[f"{k}_ms"]) for k in ("prologue", "kernel", "epilogue")}
    out["neutrino"] = out["prologue"] + out["kernel"] + out["epilogue"]
    return out


def original_time(event_log: Path) -> float:
    """The unprobed kernel time (ms) of the last benchmarked launch in ``event_log``."""
    from neutrino_ae.formats.eventlog import parse_event_log

    df = parse_event_log(event_log).launches
    timed = df["original_ms"].dropna() if len(df) else df
    if not len(timed):
        raise ValueError(f"{event_log}: no [benchmark] line with the original kernel time")
    return float(timed.iloc[-1])


def _wall(argv: list[str], timeout: float) -> float | None:
    import subprocess

    t0 = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (time.monotonic() - t0) * 1e3 if proc.returncode == 0 else None


def ncu_overhead_ms(cmd: list[str], kw: str, probe: str, timeout: float) -> float:
    if shutil.which("ncu") is None:
        return math.nan
    plain = _wall(cmd, timeout)
    metric = NCU_METRICS.get(probe, NCU_METRICS["block_sched"])
    prof = _wall(["ncu", "-k", f"regex:{kw}", "-c", "1", "--metrics", metric, *cmd], timeout)
    return math.nan if plain is None or prof is None else max(prof - plain, 0.0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("traces/exposed_latency"))
    ap.add_argument("--neutrino", default="neutrino")
    ap.add_argument("--probes", default=",".join(PROBES))
    ap.add_argument("--workloads", default="attn,gmm,conv,gemm")
    ap.add_argument("--repeats", type=int, default=1, help="runs per cell; the median is kept")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--family", choices=("paper", "ptx"), default="paper",
                    help="paper: Triton and CUTLASS binaries; ptx: the same kernels as PTX (ptx_ops.py)")
    args = ap.parse_args(argv)

    import os

    import pandas as pd

    from neutrino_ae.atomic import atomic_open
    from neutrino_ae.formats.tracedir import engine_errors
    from neutrino_ae.workloads.neutrino import CollectError, run_neutrino, staged

    if args.family == "ptx":
        from neutrino_ae.workloads.ptx_kernels import prebuild
        from neutrino_ae.workloads.ptx_ops import SOURCES

        prebuild(SOURCES)  # nvcc runs here, not inside the profiled processes
    wl = workloads(sys.executable, args.family)
    written = 0
    for name in [w for w in args.workloads.split(",") if w]:
        if name not in wl:
            print(f"skipped {name}: unknown workload (known: {', '.join(wl)})")
            continue
        cmd, kw = wl[name]
        if cmd[0] != sys.executable and not os.access(cmd[0], os.X_OK):
            print(f"skipped {name}: {cmd[0]} not built (python prepare_env.py --install)")
            continue
        rows = []
        for probe in [p for p in args.probes.split(",") if p]:
            samples = []
            for r in range(max(1, args.repeats)):
                dest = args.out / "traces" / name / Path(probe).stem / f"run{r}"
                try:  # a new run replaces the previous one only once both of its collections are in and whole
                    with staged(dest) as stage:
                        res = run_neutrino(["-p", probe, "-k", kw, *cmd], None, stage / "normal", args.neutrino,
                                           timeout=args.timeout)
                        built = engine_errors(res.trace_dir)
                        if built:  # the hook ran the kernel unprobed: nothing of this probe to time
                            raise CollectError(f"probe not built: {built[0]}")
                        times = launch_times(res.trace_dir / "event.log")
                        res = run_neutrino(["--benchmark", "-p", probe, "-k", kw, *cmd], None, stage / "benchmark",
                                           args.neutrino, timeout=args.timeout)
                        sample = {**times, "original": original_time(res.trace_dir / "event.log")}
                    samples.append(sample)
                except (CollectError, ValueError) as exc:
                    print(f"failed {name}/{probe}: {exc}")
            if not samples:
                continue
            med = pd.DataFrame(samples).median()
            rows.append({"probe": Path(probe).stem, "original": med["original"],
                         "ncu": ncu_overhead_ms(cmd, kw, probe, args.timeout), "neutrino": med["neutrino"],
                         "prologue": med["prologue"], "kernel": med["kernel"], "epilogue": med["epilogue"]})
        if rows:
            with atomic_open(args.out / f"{name}.csv", "w", encoding="utf-8", newline="") as fh:
                pd.DataFrame(rows, columns=list(COLUMNS)).to_csv(fh, index=False)
            written += 1
            print(f"{name}: {len(rows)} probe(s) -> {args.out / (name + '.csv')}")
    print(f"exposed_latency: {written} workload CSV(s) written")
    return 0 if written else 1


#: The SECTION.collect entry: this script run as a subprocess into ``<trace_root>/exposed_latency/``.
collect = script_collector("exposed_latency", __file__)


if __name__ == "__main__":
    sys.exit(main())
