"""``max_mem/<model>/<probe>/<sub>/``: Fig. 11 inputs (stdout.log ``max memory:`` + ``--memusage`` traces)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from neutrino_ae.atomic import write_text
from neutrino_ae.formats.eventlog.write import EventLogWriter
from neutrino_ae.sample.costs import PROBE_ORDER
from neutrino_ae.sample.emit import write_trace_dir
from neutrino_ae.sample.generate import SampleContext
from neutrino_ae.sample.host import DeviceAllocator
from neutrino_ae.sample.probes import PROBES

from .sample_model import PROBE_DATAMODEL, models, probe_mem


def _build(root: Path, rng: np.random.Generator) -> dict[str, Any]:
    truth: dict[str, Any] = {}
    pid = 400000
    for model, subs in models().items():
        truth[model] = {}
        for probe in PROBE_ORDER:
            per_sub = {}
            for sub in subs:
                pid += int(rng.integers(3, 40))
                ev = EventLogWriter().pid(pid).cmd(["python", f"max_mem/compiled/{model}/{sub.name}.py"])
                alloc = DeviceAllocator(0x7F5600000000 + (pid % 256) * (1 << 34))
                ptr = alloc.alloc(sub.peak_bytes())
                ev.mem_alloc(ptr, sub.peak_bytes())
                t_ns = 2_000_000_000
                mems = []
                for launch in sub.launches:
                    per_unit, mem = probe_mem(launch, probe)
                    t_ns += int(rng.integers(20_000, 400_000))
                    ev.launch(t_ns, [ptr], (launch.grid, 1, 1), (launch.threads, 1, 1), 0, probe_bytes=per_unit,
                              probe_mem=mem, probe_level=PROBE_DATAMODEL[probe][0])
                    mems.append(mem)
                sub_dir = root / "max_mem" / model / probe / sub.name
                trace_name = f"Jan_25_{(pid // 3600) % 24:02d}_{(pid // 60) % 60:02d}_{pid % 60:02d}_{pid}"
                write_trace_dir(sub_dir / trace_name, [PROBES[probe]], ev, [])
                write_text(sub_dir / "stdout.log", f"compiled {model}/{sub.name}\nmax memory: {sub.peak_bytes()}\n")
                per_sub[sub.name] = {"max_memory": sub.peak_bytes(), "max_probe_mem": max(mems),
                                     "launches": len(mems), "trace_dir": trace_name}
            truth[model][probe] = {
                "max_memory": max(v["max_memory"] for v in per_sub.values()),
                "max_probe_mem": max(v["max_probe_mem"] for v in per_sub.values()),
                "subs": per_sub,
            }
    return truth


def build(root: Path, ctx: SampleContext) -> dict[str, Any]:
    """The SECTION.sample entry: write ``root/max_mem/`` of the sample bundle; return its ground truth."""
    ctx.model["max_mem_models"] = {
        m: [{"name": s.name, "weights": s.weights, "input_bytes": s.input_bytes,
             "launches": [asdict(x) for x in s.launches]} for s in subs]
        for m, subs in models().items()}
    return _build(root, ctx.rng)
