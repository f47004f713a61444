"""Every number of the section, per trace, with numpy alone: the artifact's FIFO metric (the line), the
slot-reuse estimator, the trace's label, its bundle and that bundle's ground truth.

The command line computes these right after printing the line and sends the figures to their process
(:mod:`.figure_inputs`) before the tables and results files are written (:mod:`.pipeline`);
a notebook goes through the same function from :func:`.pipeline.block_sched`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from neutrino_ae.bundle.context import Bundle, bundle_of
from neutrino_ae.errors import InputError

from .fast import BlockRecords, FifoPerSM, FirstLine, SlotReuse, first_lines, share_of_running, slot_reuse_per_sm


@dataclass
class TraceEstimates:
    """One trace: its label, records, both estimators per SM, bundle and ground truth (sample bundles).
    The slot-reuse estimator is computed on first use: the timeline figure needs only the FIFO metric, and
    the command line sends it before that."""

    label: str
    path: Path
    first: FirstLine
    bundle: Bundle
    truth: dict | None

    @cached_property
    def slot_reuse(self) -> SlotReuse:
        rec = self.records
        return slot_reuse_per_sm(rec.lstart, rec.elapse, rec.smid)

    @property
    def records(self) -> BlockRecords:
        return self.first.records

    @property
    def fifo(self) -> FifoPerSM:
        return self.first.fifo

    def per_sm_ratios(self) -> tuple[np.ndarray, np.ndarray]:
        """Scheduling / running and slot reuse / running per SM (NaN where an SM ran for 0 cycles), in the
        FIFO metric's SM order."""
        reuse = self.slot_reuse.on(self.fifo.smid)[1]
        return self.artifact_ratio(), share_of_running(reuse, self.fifo.running_cycles)

    def artifact_ratio(self) -> np.ndarray:
        """Scheduling / running per SM by the artifact's metric (NaN where an SM ran for 0 cycles)."""
        return share_of_running(self.fifo.scheduling_cycles, self.fifo.running_cycles)


def _gt(truth: dict | None, key: str) -> float | None:
    """A ground-truth number of a trace (None: no truth, or not this one)."""
    return None if not truth or key not in truth else float(truth[key])


def trace_label(path: Path, used: set[str], bundle: Bundle) -> str:
    """``variants/<name>/...`` → name; a bundle's main block_sched trace → ``raw``; else the trace dir name."""
    parts = path.resolve().parts
    if "variants" in parts and parts.index("variants") + 1 < len(parts):
        label = parts[parts.index("variants") + 1]
    elif "block_sched" in parts and "variants" not in parts and bundle.manifest_root is not None:
        label = "raw"
    else:
        label = path.parent.parent.name if path.parent.name == "result" else path.stem
    base, i = label, 2
    while label in used:
        label, i = f"{base}-{i}", i + 1
    used.add(label)
    return label


def trace_truth(path: Path, bundle: Bundle, section: str = "block_sched") -> dict | None:
    """The sample generator's truth for this trace: top level for the main trace, ``variants/<label>`` else.

    Matched by the trace's bundle-relative path (the generator records it), so labels do not matter.
    """
    truth = bundle.ground_truth(section)
    root = bundle.manifest_root
    if not isinstance(truth, dict) or root is None:
        return None
    rel = path.resolve().relative_to(root).as_posix()
    candidates = [truth, *(v for v in (truth.get("variants") or {}).values() if isinstance(v, dict))]
    for cand in candidates:
        if cand.get("trace") == rel:
            return cand
    return None


def estimate(paths: Sequence[str | os.PathLike[str]], section: int = 0, bundle: Bundle | None = None,
             first: Sequence[FirstLine] | None = None) -> list[TraceEstimates]:
    """Every trace of ``paths`` (``.bin`` or trace dirs), in order. ``bundle``: the run's; without it each
    trace's own, found from its path. ``first``: :func:`.fast.first_lines` of the same paths, if computed."""
    if not paths:
        raise InputError(None, "no block_sched trace given")
    used: set[str] = set()
    out = []
    for f in (first if first is not None else first_lines(paths, section)):
        owner = bundle or bundle_of(f.path)
        out.append(TraceEstimates(trace_label(f.path, used, owner), f.path, f, owner, trace_truth(f.path, owner)))
    return out
