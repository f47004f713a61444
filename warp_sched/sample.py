"""``warp_sched/``: Fig. 13 inputs: exclusive vs shared warp timelines and the tail-effect trace."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from neutrino_ae.formats.bintrace import TraceHeader
from neutrino_ae.formats.bintrace_write import write_trace
from neutrino_ae.formats.eventlog.write import EventLogWriter
from neutrino_ae.formats.level import Level
from neutrino_ae.sample.device import Device, blocks_per_sm
from neutrino_ae.sample.emit import KernelBuild, result_path, write_trace_dir
from neutrino_ae.sample.generate import SampleContext
from neutrino_ae.sample.host import DeviceAllocator, HostModel
from neutrino_ae.sample.probes import PROBES

from .sample_model import WarpRun, WarpSchedParams, simulate

#: This section's sample parameters by scale (``tiny``: 1 full wave, 2 for the tail trace).
PARAMS = {"tiny": WarpSchedParams(full_waves=1, tail_full_waves=2), "small": WarpSchedParams(),
          "paper": WarpSchedParams()}

# (folder under warp_sched/, policy, result seconds, pid); exclusive/shared names are the paper's.
RUNS = {
    "exclusive": ("exclusive_sched", "exclusive", 2.756086, 271402),
    "shared": ("shared_sched", "shared", 3.201079, 271877),
    "tail": ("tail/Jan_23_08_14_52_273310", "shared", 1.904417, 273310),
}


def _write(trace_dir: Path, run: WarpRun, seconds: float, pid: int, params: WarpSchedParams, device: Device,
           host: HostModel) -> str:
    k = params.kernel
    grid = run.records.shape[0]
    probe = PROBES["warp_sched"]
    alloc = DeviceAllocator(0x7F4C00000000 + (pid % 64) * (1 << 30))
    # A toy attention-shaped launch: q, k, v, out of grid*64 rows x 64 halves each.
    ptrs = [alloc.alloc(grid * 64 * 64 * 2) for _ in range(4)]
    ev = EventLogWriter().pid(pid).cmd(["python", "main.py"]).line("[info] init success")
    for p in ptrs:
        ev.mem_alloc(p, grid * 64 * 64 * 2)
    rel = f"./trace/{trace_dir.name}/result/{seconds:.6f}.bin"
    nbytes = run.records.nbytes
    ev.launch(int(round(seconds * 1e9)), ptrs, (grid, 1, 1), (k.threads, 1, 1), 0, probe_bytes=probe.bytes,
              probe_level="warp", save=(rel, nbytes + 48),
              timing=(host.prologue_ms(nbytes), device.cycles_to_ms(run.truth["makespan_cycles"]),
                      host.epilogue_ms(nbytes)))
    write_trace_dir(trace_dir, [probe], ev, [KernelBuild(k.name, 4, k.regs, k.regs + 4)])
    out = result_path(trace_dir, seconds)
    write_trace(out, TraceHeader((grid, 1, 1), (k.threads, 1, 1), 0), [(Level.WARP, run.records)], layout="v1")
    return out.as_posix()


def _build(root: Path, device: Device, params: WarpSchedParams, host: HostModel,
          rng: np.random.Generator) -> dict[str, Any]:
    k = params.kernel
    slots = device.sms * blocks_per_sm(device, k.threads, k.regs)
    grids = {"exclusive": params.full_waves * slots + params.tail_blocks,
             "shared": params.full_waves * slots + params.tail_blocks,
             "tail": params.tail_full_waves * slots + params.tail_tail_blocks}
    truth: dict[str, Any] = {}
    for name, (folder, policy, seconds, pid) in RUNS.items():
        run = simulate(device, k, grids[name], policy, params.clock, rng)
        path = _write(root / "warp_sched" / folder, run, seconds, pid, params, device, host)
        truth[name] = {**run.truth, "trace": Path(path).relative_to(root).as_posix()}
    truth["shared_vs_exclusive_makespan"] = truth["shared"]["makespan_cycles"] / truth["exclusive"]["makespan_cycles"]
    return truth


def build(root: Path, ctx: SampleContext) -> dict[str, Any]:
    """The SECTION.sample entry: write ``root/warp_sched/`` of the sample bundle; return its ground truth."""
    params = PARAMS[ctx.scale]
    ctx.model["warp_sched"] = asdict(params)
    return _build(root, ctx.cfg.device, params, ctx.cfg.host, ctx.rng)
