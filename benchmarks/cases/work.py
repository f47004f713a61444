"""The timed work of each case. Each function runs inside a measuring child and returns a small
dict of facts (counts, a checksum of the result) so a run that silently did nothing shows up."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The cheapest section (about 0.8 s on the small bundle, against 3 s for exposed_latency).
SMOKE_SECTIONS = "kernel_overhead"


def run_block_sched(inp: Path, scratch: Path, smoke: bool) -> dict[str, Any]:
    """The Sec. 4.5 metric as the section computes it: first-warp records, the artifact's FIFO metric
    and the slot-reuse estimator per SM (figures are a fixed cost and are not part of this case)."""
    from neutrino_ae.report.section.registry import section_module

    analyze_records = section_module("block_sched", "analysis").analyze_records
    first_warp_records = section_module("block_sched", "inputs").first_warp_records
    from neutrino_ae.formats.bintrace import open_trace

    path = inp / "trace.bin"
    rec = first_warp_records(open_trace(path))
    res = analyze_records("bench", path, rec)
    return {"blocks": int(rec.grid_size), "sms": len(res.per_sm), "line": res.line,
            "mean_slot_reuse": res.mean_slot_reuse}


def warp_timelines(rec: Any) -> dict[str, Any]:
    """Fig. 13 timelines for every warp: the reconstructed warp slot of every warp on every SM
    (13a/b), active warps and busy SMs over time and the tail (13c/d)."""
    from neutrino_ae.report.section.registry import section_module
    from neutrino_ae.sched.slots import lowest_free_slots

    ws = section_module("warp_sched", "analysis")
    active_sweep, busy_sm_sweep, find_tail = ws.active_sweep, ws.busy_sm_sweep, ws.find_tail

    end = rec.lstart + rec.elapse
    tb = rec.block * (np.int64(1) << 20) + np.maximum(rec.warp, 0)
    slots = lowest_free_slots(rec.smid, rec.lstart, end, tiebreak=tb)
    t_w, active = active_sweep(rec.lstart, end)
    t_s, busy = busy_sm_sweep(rec.smid, rec.lstart, end)
    tail = find_tail(t_s, busy, rec.n_sms)
    return {"warps": int(rec.lstart.size), "max_slot": int(slots.max()) + 1, "peak_active": int(active.max()),
            "tail_fraction": tail.tail_fraction, "sweep_points": int(t_w.size + t_s.size)}


def run_warp_sched(inp: Path, scratch: Path, smoke: bool) -> dict[str, Any]:
    from neutrino_ae.formats.bintrace import open_trace
    from neutrino_ae.report.section.registry import section_module

    records_from_trace = section_module("warp_sched", "inputs").records_from_trace

    return warp_timelines(records_from_trace(open_trace(inp / "trace.bin")))


def run_dmat(inp: Path, scratch: Path, smoke: bool) -> dict[str, Any]:
    """Raw ``.bin`` → chunked sparsification → ``.dmat`` on disk → read back → PNG."""
    from benchmarks.cases import dmatgen

    return dmatgen.bin_to_png(inp / "trace.bin", scratch)


def run_eventlog(inp: Path, scratch: Path, smoke: bool) -> dict[str, Any]:
    from neutrino_ae.formats.eventlog import parse_event_log

    log = parse_event_log(inp / "event.log")
    return {"launches": len(log.launches), "mem": len(log.mem),
            "kernel_ms_sum": float(np.nansum(log.launches["kernel_ms"].to_numpy(dtype=float)))}


def run_static(inp: Path, scratch: Path, smoke: bool) -> dict[str, Any]:
    """``python -m neutrino_ae run static -p bundle <bundle>``: papermill, a fresh kernel, every cell,
    with a fresh output folder each run so no section result is reused from a cache."""
    import json

    meta = json.loads((inp / "meta.json").read_text())
    out = scratch / "results"
    # The bundle was generated with this scale and seed, so the notebook's set-up cell reuses it.
    cmd = [sys.executable, "-m", "neutrino_ae", "run", "static", "-p", "bundle", "sample",
           "-p", "sample_scale", str(meta["scale"]), "-p", "seed", str(meta["seed"]),
           "--trace-root", str(inp / "bundle"), "--output-dir", str(out)]
    if smoke:
        # The smoke run checks the harness path (papermill, kernel, bundle reuse), not the analyses,
        # which the other smoke cases and their own tests cover: one cheap section keeps it quick.
        cmd += ["--sections", SMOKE_SECTIONS]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-10:]
        raise RuntimeError(f"static notebook failed (exit {proc.returncode}): " + " | ".join(tail))
    pngs = sorted(out.rglob("*.png"))
    return {"pngs": len(pngs), "sections": SMOKE_SECTIONS if smoke else "all",
            "executed": proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else None}
