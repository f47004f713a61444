"""``exposed_latency/{attn,gmm,conv,gemm}.csv``: Fig. 12 (one probed launch per workload x probe)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from neutrino_ae.atomic import write_text
from neutrino_ae.sample.catalog import fig12_kernels
from neutrino_ae.sample.costs import CostModel, extra_registers, ncu_ms, probe_memory, simulate_probed
from neutrino_ae.sample.device import Device
from neutrino_ae.sample.generate import SampleContext
from neutrino_ae.sample.host import HostModel

# Probes with an Nsight Compute counterpart (the original plot has three bars per workload).
FIG12_PROBES = ("block_sched", "gmem_bytes", "tensorop_count")
COLUMNS = ["probe", "original", "ncu", "neutrino", "prologue", "kernel", "epilogue"]


def _build(root: Path, device: Device, costs: CostModel, host: HostModel, rng: np.random.Generator) -> dict[str, Any]:
    truth: dict[str, Any] = {}
    for work, k in fig12_kernels().items():
        rows = []
        for probe in FIG12_PROBES:
            pc = costs.probes[probe]
            mem = probe_memory(k, pc)
            run = simulate_probed(k, pc, extra_registers(k, pc, costs, rng), device, costs,
                                  host.prologue_ms(mem), host.epilogue_ms(mem), rng)
            neutrino = run.prologue_ms + run.kernel_ms + run.epilogue_ms
            rows.append({"probe": probe, "original": run.original_ms, "ncu": ncu_ms(k, pc, device, costs, rng),
                         "neutrino": neutrino, "prologue": run.prologue_ms, "kernel": run.kernel_ms,
                         "epilogue": run.epilogue_ms})
        df = pd.DataFrame(rows, columns=COLUMNS)
        write_text(root / "exposed_latency" / f"{work}.csv", df.to_csv(index=False, float_format="%.6f"))
        truth[work] = {"kernel": k.name, "ncu_passes": {p: costs.probes[p].ncu_passes for p in FIG12_PROBES},
                       "probe_mem_bytes": {p: probe_memory(k, costs.probes[p]) for p in FIG12_PROBES},
                       "neutrino_over_original": dict(zip(df["probe"], df["neutrino"] / df["original"], strict=True)),
                       "ncu_over_original": dict(zip(df["probe"], df["ncu"] / df["original"], strict=True)),
                       # Fig. 12's stacked segments: each part's time over the original (the bar heights drawn).
                       **{f"{part}_over_original": dict(zip(df["probe"], df[part] / df["original"], strict=True))
                          for part in ("prologue", "kernel", "epilogue")}}
    return truth


def build(root: Path, ctx: SampleContext) -> dict[str, Any]:
    """The SECTION.sample entry: write ``root/exposed_latency/`` of the sample bundle; return its ground truth."""
    return _build(root, ctx.cfg.device, ctx.cfg.costs, ctx.cfg.host, ctx.rng)
