"""Issue 24's table: the block_sched command line beside the artifact's script, the import floor and the
paper-scale sample bundle.

    python -m benchmarks.bench --speed [--blocks 4096,32768,300000,1000000] [--repeat 3] [--sample]
                                       [--json PATH] [--cache DIR] [--seed N]

Per size, ``python block_sched/block_sched.py <trace.bin> --out DIR`` (ours) and the artifact's
``neutrino/tools/block_sched.py <trace.bin>`` run in turn (ours, artifact, ours, artifact, ...), each a
whole process reaped with ``os.wait4``: seconds until the ``No.block:`` line is read from its stdout,
seconds until it exits, CPU seconds (its whole tree), the largest process's peak RSS; then one more run of
each for the whole tree's peak memory (PSS summed over its processes, sampled every 20 ms:
:mod:`benchmarks.tree_memory`; the memory target is judged on it, as ours runs figure processes beside the
command). The sampler reads /proc while the command runs, CPU that the command's processes would share on
a small machine, so no timed run is sampled. Medians are printed, and the ratio artifact / ours of each
pair's wall seconds (median over pairs: pairing keeps it meaningful when the machine's speed drifts). The
import floor is ``python -c 'import numpy'`` (the artifact's only import, and our command's; its figure
process imports matplotlib);
``--sample`` adds ``python -m neutrino_ae sample --scale paper``.

Targets (issue 24): the line no later than the artifact's whole run at every size, the whole command
within 2x of it at paper size (32,768 blocks), 4x faster at 300,000 and 10x at 1,000,000 blocks with
peak RSS at most the artifact's; the sample bundle in 20 s and 300 MB.

``--dmat MiB`` adds DMAT on one random-access raw trace (``--blocks ''`` times DMAT alone): ours
(``dmat/dmat.py``), the numpy floor (:mod:`benchmarks.dmat_floor`: read and bin, nothing else) and the
artifact's ``dmat.py``, back to back per repeat, and the figure's own render time
(:mod:`benchmarks.dmat_render`). Targets (issue 24 item 5): >= 30x the artifact (at 640 MB), and ours
<= 2 x the floor + the render time. Ratios are medians of the per-repeat pairs.

``--smoke`` (what tests/benchmarks/test_speed.py runs) checks that the table is produced, not the speed: per
size one run of each command, memory-sampled and timed at once, one import-floor run, and memory sampled every
0.25 s instead of every 0.02 s. Without it nothing changes: no timed run is sampled.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from benchmarks.measure import REPO_ROOT, child_env
from benchmarks.tree_memory import TreeMemory

# Kept small: a child's ru_maxrss starts at its parent's peak, so the inputs and the artifact tree are made
# in a child (``--prepare``) and this process imports no generator.
DEFAULT_CACHE = REPO_ROOT / "benchmarks" / "cache"
DEFAULT_ARTIFACT = Path(os.environ.get("NEUTRINO_SRC", REPO_ROOT.parent / "shared" / "neutrino-src")) \
    / "neutrino-artifact.tar.gz"

DEFAULT_BLOCKS = (4096, 32768, 300_000, 1_000_000)
PAPER_BLOCKS = 32768
SPEEDUP_TARGETS = {300_000: 4.0, 1_000_000: 10.0}
SAMPLE_SECONDS, SAMPLE_MB = 20.0, 300.0
DMAT_SPEEDUP = 30.0  # issue 24 item 5: at 640 MB (--dmat 640)
LINE_PREFIX = b"No.block:"
MEASURES = ("wall_s", "cpu_s", "peak_rss_bytes", "peak_tree_pss_bytes")
#: Seconds between two samples of a tree's memory (:mod:`benchmarks.tree_memory`); ``--smoke`` samples less
#: often, as each sample reads every process's smaps_rollup (most of the measuring process's own CPU).
SAMPLE_INTERVAL_S = 0.02
SMOKE_SAMPLE_INTERVAL_S = 0.25


def timed(cmd: Sequence[str], env: dict[str, str], timeout_s: float = 600.0, cwd: Path = REPO_ROOT,
          sample_memory: bool = True, interval: float = SAMPLE_INTERVAL_S) -> dict[str, Any]:
    """One whole-process run: seconds to the artifact line on stdout, to exit; CPU seconds; peak RSS; the
    process tree's peak PSS where ``sample_memory`` (else None), sampled every ``interval`` seconds."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd, env=env,
                            start_new_session=True)
    line_s, line = None, ""
    assert proc.stdout is not None
    deadline = t0 + timeout_s
    no_sampling = contextlib.nullcontext(SimpleNamespace(peak_bytes=None))
    with TreeMemory(proc.pid, interval) if sample_memory else no_sampling as mem:  # until stdout closes: all have ended
        for raw in proc.stdout:
            if line_s is None and raw.startswith(LINE_PREFIX):
                line_s, line = time.perf_counter() - t0, raw.decode().strip()
            if time.perf_counter() > deadline:
                proc.kill()
                break
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}")
    return {"line_s": line_s, "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_bytes": usage.ru_maxrss * 1024, "peak_tree_pss_bytes": mem.peak_bytes, "line": line}


def _sizes(blocks: str) -> list[str]:
    """``--blocks``: comma-separated sizes; empty (``--blocks ''``) times no block_sched trace."""
    return [b for b in blocks.split(",") if b.strip()]


def _interval(smoke: bool) -> float:
    return SMOKE_SAMPLE_INTERVAL_S if smoke else SAMPLE_INTERVAL_S


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def block_sched_input(cache: Path, blocks: int, seed: int) -> Path:
    """A trace of ``blocks`` blocks from the sample model (benchmarks.cases.gen), made once per size and seed."""
    from benchmarks.cases.gen import MODEL_TAG, make_block_sched

    out = cache / f"speed-block_sched-{blocks}-s{seed}-{MODEL_TAG}"
    if not (out / ".complete").exists():
        out.mkdir(parents=True, exist_ok=True)
        made = make_block_sched(out, blocks * 64 / 1_000_000, seed, False)
        if made["blocks"] != blocks:
            raise RuntimeError(f"asked for {blocks} blocks, the generator made {made['blocks']}")
        (out / ".complete").write_text("ok\n")
    return out / "trace.bin"


def _prepare_main(argv: Sequence[str]) -> int:
    """Child: make the traces and extract the artifact; print their paths as JSON."""
    import json

    from benchmarks.e2e_artifact import prepare_artifact

    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", type=Path)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--blocks")
    ap.add_argument("--artifact", type=Path)
    ap.add_argument("--dmat", type=int, default=0)
    a = ap.parse_args(argv)
    art = prepare_artifact(a.artifact, a.cache, need_dmat=a.dmat > 0)
    traces = {b: str(block_sched_input(a.cache, int(b), a.seed)) for b in _sizes(a.blocks)}
    dmat = None
    if a.dmat:
        from benchmarks.cases.e2egen import dmat_random_result, make_dmat_random

        inp = a.cache / f"speed-dmat-{a.dmat}-s{a.seed}"
        if not (inp / ".complete").exists():
            make_dmat_random(inp, a.dmat, a.seed)
            (inp / ".complete").write_text("ok\n")
        dmat = {"trace": str(dmat_random_result(inp)), "note": art.dmat_note}
    print(json.dumps({"tree": str(art.tree) if art.tree else None, "note": art.note, "traces": traces,
                      "dmat": dmat}))
    return 0


def _prepare(args: argparse.Namespace) -> dict[str, Any]:
    import json

    proc = subprocess.run([sys.executable, "-m", "benchmarks.speed", "--prepare", "--cache", str(args.cache),
                           "--seed", str(args.seed), "--blocks", args.blocks, "--artifact", str(args.artifact),
                           "--dmat", str(args.dmat)],
                          cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"preparing the inputs failed: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_block_sched(blocks: int, trace: Path, art_tree: Path, args: argparse.Namespace,
                    scratch: Path) -> dict[str, Any]:
    with open(trace, "rb") as fh:  # warm the page cache for both, in chunks (this process's RSS is the floor)
        while fh.read(1 << 20):
            pass
    root = args.ours or REPO_ROOT
    ours_cmd = [sys.executable, str(root / "block_sched" / "block_sched.py"), str(trace), "--out",
                str(scratch / f"bs{blocks}")]
    ours_env = {**child_env(), "PYTHONPATH": str(root)}
    art_cmd = [sys.executable, str(art_tree / "neutrino" / "tools" / "block_sched.py"), str(trace)]
    art_env = {**child_env(), "PYTHONPATH": str(art_tree)}
    ours, art = [], []
    if args.smoke:
        # --smoke checks the table, not the speed: the one memory-sampled run of each is also its timed run.
        ours.append(timed(ours_cmd, ours_env, cwd=root, interval=SMOKE_SAMPLE_INTERVAL_S))
        art.append(timed(art_cmd, art_env, interval=SMOKE_SAMPLE_INTERVAL_S))
    for _ in range(0 if args.smoke else args.repeat):
        ours.append(timed(ours_cmd, ours_env, cwd=root, sample_memory=False))
        art.append(timed(art_cmd, art_env, sample_memory=False))
    memory = {"ours": ours[0]["peak_tree_pss_bytes"], "artifact": art[0]["peak_tree_pss_bytes"]} if args.smoke \
        else {"ours": timed(ours_cmd, ours_env, cwd=root)["peak_tree_pss_bytes"],
              "artifact": timed(art_cmd, art_env)["peak_tree_pss_bytes"]}
    if ours[0]["line"] != art[0]["line"]:
        raise RuntimeError(f"lines differ: ours {ours[0]['line']!r}, artifact {art[0]['line']!r}")
    pair = [a["wall_s"] / o["wall_s"] for o, a in zip(ours, art, strict=True)]
    row = {"blocks": blocks, "bytes": trace.stat().st_size, "line": ours[0]["line"],
           "ours": {k: _median(ours, k) for k in ("line_s", *MEASURES)},
           "artifact": {k: _median(art, k) for k in MEASURES},
           "ratio": statistics.median(pair), "ratio_runs": pair,
           "ratio_cpu": _median(art, "cpu_s") / _median(ours, "cpu_s")}
    for who in ("ours", "artifact"):  # from the sampled run of each
        row[who]["peak_tree_pss_bytes"] = memory[who]
    row["targets"] = _targets(row)
    return row


def _targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    o, a = r["ours"], r["artifact"]
    out = [{"label": "line by the artifact's exit", "measured": o["line_s"], "want": a["wall_s"],
            "pass": o["line_s"] is not None and o["line_s"] <= a["wall_s"]}]
    if r["blocks"] == PAPER_BLOCKS:
        out.append({"label": "whole command within 2x", "measured": o["wall_s"], "want": 2 * a["wall_s"],
                    "pass": o["wall_s"] <= 2 * a["wall_s"]})
    if r["blocks"] in SPEEDUP_TARGETS:
        want = SPEEDUP_TARGETS[r["blocks"]]
        out.append({"label": f">= {want:g}x faster", "measured": r["ratio"], "want": want, "pass": r["ratio"] >= want})
        # The whole tree's memory (our figure processes included), PSS summed: ru_maxrss is one process's.
        key = "peak_tree_pss_bytes" if o.get("peak_tree_pss_bytes") and a.get("peak_tree_pss_bytes") \
            else "peak_rss_bytes"
        out.append({"label": "peak memory <= artifact's", "measured": o[key], "want": a[key], "pass": o[key] <= a[key],
                    "measure": key})
    return out


def run_dmat(prepared: dict[str, Any], tree: Path, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    """Ours (``dmat/dmat.py``), the artifact's ``dmat.py`` (C++ sparsifier + Python plotter) and the numpy
    floor (:mod:`benchmarks.dmat_floor`) on one random-access raw trace, in turn."""
    src = Path(prepared["trace"])
    with open(src, "rb") as fh:
        while fh.read(1 << 24):
            pass
    root = args.ours or REPO_ROOT
    env = {**child_env(), "PYTHONPATH": str(root)}
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], "floor": [], "artifact": []}
    load_before = os.getloadavg()[0]
    for i in range(args.repeat):
        runs["ours"].append(timed([sys.executable, str(root / "dmat" / "dmat.py"), str(src), "--out",
                                   str(scratch / f"dmat-ours-{i}")], env, cwd=root, interval=_interval(args.smoke)))
        runs["floor"].append(timed([sys.executable, "-m", "benchmarks.dmat_floor", str(src)], child_env(),
                                   interval=_interval(args.smoke)))
        if prepared["note"] is None:
            # dmat.py writes <trace>.dmat and .png beside the trace (reusing a .dmat it finds), and reads
            # ../event.log and ../tensor.trace: a fresh trace dir of links each run.
            tdir = scratch / f"dmat-art-{i}" / src.parent.parent.name
            (tdir / "result").mkdir(parents=True)
            for name in ("event.log", "tensor.trace"):
                (tdir / name).symlink_to(src.parent.parent / name)
            (tdir / "result" / src.name).symlink_to(src)
            runs["artifact"].append(timed([sys.executable, str(tree / "neutrino" / "tools" / "dmat.py"),
                                           str(tdir / "result" / src.name)], {**child_env(), "PYTHONPATH": str(tree)},
                                          timeout_s=3600, interval=_interval(args.smoke)))
    row: dict[str, Any] = {"bytes": src.stat().st_size, "note": prepared["note"],
                           "load": [load_before, os.getloadavg()[0]], "runs": runs}
    for who, rs in runs.items():
        row[who] = {k: _median(rs, k) for k in MEASURES} if rs else None
    # Per pair (ours and the floor, ours and the artifact, run back to back): the median ratio.
    row["ours_over_floor"] = statistics.median(o["wall_s"] / f["wall_s"]
                                               for o, f in zip(runs["ours"], runs["floor"], strict=True))
    row["ratio"] = statistics.median(a["wall_s"] / o["wall_s"] for o, a in zip(runs["ours"], runs["artifact"],
                                                                               strict=False)) \
        if runs["artifact"] else None
    row["render_s"] = dmat_render_seconds(src, env, root)
    row["targets"] = _dmat_targets(row)
    return row


def dmat_render_seconds(trace: Path, env: dict[str, str], root: Path) -> float:
    """The figure's own render time (:mod:`benchmarks.dmat_render`: drawing and saving, matplotlib imported)."""
    proc = subprocess.run([sys.executable, "-m", "benchmarks.dmat_render", str(trace)], cwd=REPO_ROOT,
                          env={**env, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(root)])},
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"benchmarks.dmat_render failed: {proc.stderr.strip()[-500:]}")
    return float(proc.stdout.split()[-1])


def _dmat_targets(r: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 24 item 5: >= 30x the artifact at 640 MB (judged at any size), ours <= 2 x floor + render."""
    o, f = r["ours"], r["floor"]
    want = 2 * f["wall_s"] + r["render_s"]
    out = [{"label": "ours <= 2x floor + render", "measured": o["wall_s"], "want": want,
            "pass": o["wall_s"] <= want}]
    if r["ratio"] is not None:
        out.append({"label": f">= {DMAT_SPEEDUP:g}x the artifact", "measured": r["ratio"], "want": DMAT_SPEEDUP,
                    "pass": r["ratio"] >= DMAT_SPEEDUP})
    return out


def import_floor(repeat: int, smoke: bool = False) -> dict[str, Any]:
    runs = [timed([sys.executable, "-c", "import numpy"], child_env(), interval=_interval(smoke))
            for _ in range(1 if smoke else max(3, repeat))]
    return {"wall_s": min(r["wall_s"] for r in runs), "wall_s_median": _median(runs, "wall_s"),
            "cpu_s": _median(runs, "cpu_s")}


def sample_paper(scratch: Path, root: Path) -> dict[str, Any]:
    r = timed([sys.executable, "-m", "neutrino_ae", "sample", "--scale", "paper", "--out", str(scratch / "sample"),
               "--force"], {**child_env(), "PYTHONPATH": str(root)}, timeout_s=1800, cwd=root)
    return {**r, "pass": r["wall_s"] <= SAMPLE_SECONDS and r["peak_rss_bytes"] <= SAMPLE_MB * 1e6}


def _mb(m: dict[str, Any]) -> str:
    """The tree's peak PSS (all its processes) where sampled, else the largest process's peak RSS."""
    if m.get("peak_tree_pss_bytes"):
        return f"{m['peak_tree_pss_bytes'] / 1e6:>5.0f} MB"
    return f"{m['peak_rss_bytes'] / 1e6:>5.0f} MB rss"


def _fmt(r: dict[str, Any]) -> str:
    o, a = r["ours"], r["artifact"]
    verdicts = "; ".join(f"{t['label']}: {'PASS' if t['pass'] else 'MISS'}" for t in r["targets"])
    return (f"{r['blocks']:>9,}  {a['wall_s']:>7.2f} s {_mb(a)}  "
            f"{o['line_s']:>6.2f} s {o['wall_s']:>7.2f} s {_mb(o)}  "
            f"{r['ratio']:>6.2f}x (cpu {r['ratio_cpu']:.2f}x)  {verdicts}")


def _fmt_dmat(d: dict[str, Any]) -> str:
    o, f, a = d["ours"], d["floor"], d["artifact"]
    verdicts = "; ".join(f"{t['label']}: {'PASS' if t['pass'] else 'MISS'}" for t in d["targets"])
    return (f"dmat {d['bytes'] / 1e6:.0f} MB: ours {o['wall_s']:.2f} s {_mb(o).strip()}, "
            f"numpy floor {f['wall_s']:.2f} s {_mb(f).strip()}, figure render {d['render_s']:.2f} s; "
            + (f"artifact {a['wall_s']:.2f} s {_mb(a).strip()}; " if a
               else f"artifact skipped: {d['note']}; ")
            + f"load {d['load'][0]:.1f}-{d['load'][1]:.1f}; ours/floor {d['ours_over_floor']:.2f}x "
            f"(want <= 2 + render/floor = {2 + d['render_s'] / f['wall_s']:.2f}x)"
            + (f", artifact/ours {d['ratio']:.1f}x" if d["ratio"] is not None else "") + f"  {verdicts}")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench --speed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", default=",".join(str(b) for b in DEFAULT_BLOCKS),
                    help="comma-separated grid sizes of the block_sched traces ('' for none: only --dmat)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each command per size, alternating (default 3)")
    ap.add_argument("--sample", action="store_true", help="also time `neutrino-ae sample --scale paper` (once)")
    ap.add_argument("--dmat", type=int, default=0, metavar="BLOCKS",
                    help="also time DMAT on a random-access raw trace of BLOCKS MiB (64 = the 67 MB paper size): "
                         "ours, the artifact's dmat.py and the numpy floor (benchmarks/dmat_floor.py)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--artifact", type=Path, default=DEFAULT_ARTIFACT)
    ap.add_argument("--smoke", action="store_true",
                    help="checks the table, not the speed (the tests' run): per size one run of each command, "
                         "memory-sampled and timed at once (a real run never times a sampled run), one "
                         "import-floor run, memory sampled every 0.25 s (not 0.02 s); --repeat then counts "
                         "for DMAT only")
    ap.add_argument("--ours", type=Path, default=None,
                    help="another checkout whose block_sched command to time as 'ours' (a before/after comparison)")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--prepare"]:
        return _prepare_main(argv[1:])
    args = build_parser().parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    prepared = _prepare(args)
    if prepared["tree"] is None:
        print(f"error: {prepared['note']}", file=sys.stderr)
        return 2
    tree = Path(prepared["tree"])
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPUs, load {load:.2f}; medians of {args.repeat} alternating runs")
    floor = import_floor(args.repeat, args.smoke)
    print(f"import floor (python -c 'import numpy'): {floor['wall_s']:.2f} s best, {floor['wall_s_median']:.2f} s "
          "median")
    if _sizes(args.blocks):
        print(f"{'blocks':>9}  {'artifact (wall, mem)':>20}  {'ours: line, done, mem':>27}  ratio   "
              "(mem: peak PSS of the whole process tree)")
    rows = []
    # Outside the repository: our commands refuse to write results into a source folder (benchmarks/).
    with tempfile.TemporaryDirectory(prefix="speed-") as tmp:
        for blocks in (int(b) for b in _sizes(args.blocks)):
            rows.append(run_block_sched(blocks, Path(prepared["traces"][str(blocks)]), tree, args, Path(tmp)))
            print(_fmt(rows[-1]), flush=True)
        dmat = run_dmat(prepared["dmat"], tree, args, Path(tmp)) if args.dmat else None
        sample = sample_paper(Path(tmp), args.ours or REPO_ROOT) if args.sample else None
    if dmat:
        print(_fmt_dmat(dmat))
    if sample:
        print(f"sample --scale paper: {sample['wall_s']:.1f} s wall, {sample['cpu_s']:.1f} s CPU, "
              f"{sample['peak_rss_bytes'] / 1e6:.0f} MB peak: {'PASS' if sample['pass'] else 'MISS'} "
              f"(<= {SAMPLE_SECONDS:g} s, <= {SAMPLE_MB:g} MB)")
    floor_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"(peak RSS cannot read below this process's own, {floor_rss / 1e6:.0f} MB)")
    if args.json:
        from benchmarks.machine import machine_description  # numpy: only after the measurements
        from neutrino_ae.atomic import write_json

        machine = machine_description()

        write_json(args.json, {"schema": 1, "command": ["python", "-m", "benchmarks.bench", "--speed", *(argv or [])],
                               "machine": machine, "import_floor": floor, "block_sched": rows, "sample": sample,
                               "dmat": dmat,
                               "loadavg_at_end": os.getloadavg(),
                               "rss_floor_bytes": floor_rss})
    return 0


if __name__ == "__main__":
    sys.exit(main())
