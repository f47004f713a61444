"""The block_sched section's computations: records and tables in, tables and numbers out (no I/O, no plots)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from neutrino_ae.sched import intervals as accel

from .estimates import _gt  # noqa: F401  (re-exported for callers)
from .fast import BlockRecords, FifoPerSM, SlotReuse, fifo_per_sm, line_of, slot_reuse_per_sm


@dataclass
class TraceSched:
    label: str
    path: Path
    records: BlockRecords
    per_sm: pd.DataFrame
    line: str
    mean_running: float
    mean_scheduling: float
    mean_slot_reuse: float

    @property
    def blocks_per_sm(self) -> float:
        """Blocks per SM, mean over the SMs that ran one (the divisor of 'Running' per block)."""
        return float(self.per_sm["blocks"].mean()) if len(self.per_sm) else 0.0

    @property
    def dispatches_per_sm(self) -> float:
        """Blocks per SM that waited for a freed slot: all but the SM's peak number of resident blocks."""
        if not len(self.per_sm):
            return 0.0
        return float((self.per_sm["blocks"] - self.per_sm["peak_resident"]).clip(lower=0).mean())

    @property
    def running_per_block(self) -> float | None:
        """The artifact's 'Running' (cycles per SM) per block: the mean block duration."""
        return self.mean_running / self.blocks_per_sm if self.blocks_per_sm else None

    @property
    def scheduling_per_dispatch(self) -> float | None:
        """The artifact's 'Scheduling' (cycles per SM) per block dispatched into a freed slot."""
        return self.mean_scheduling / self.dispatches_per_sm if self.dispatches_per_sm else None

def artifact_metric(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """Per SM: blocks, running and scheduling cycles under the artifact's first-entry-only FIFO rule.

    Compiled single pass (:func:`neutrino_ae.sched.intervals.artifact_fifo_kernel`) when numba is available,
    else :func:`artifact_metric_numpy`; both give the same table.
    """
    if not accel.use_numba(np.size(lstart)):
        return artifact_metric_numpy(lstart, elapse, smid)
    lstart, elapse = accel.i64(lstart), accel.i64(elapse)
    sms, gidx = accel.dense_ids(smid)
    blocks, running, sched = accel.artifact_fifo_kernel(lstart, elapse, gidx, sms.size)
    return pd.DataFrame({"smid": sms, "blocks": blocks, "running_cycles": running, "scheduling_cycles": sched})

def artifact_metric_numpy(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """:func:`artifact_metric` in numpy (the path without numba): :func:`.fast.fifo_per_sm` as a table."""
    return _fifo_table(fifo_per_sm(lstart, elapse, smid))

def _fifo_table(f: FifoPerSM) -> pd.DataFrame:
    return pd.DataFrame({"smid": f.smid, "blocks": f.blocks, "running_cycles": f.running_cycles,
                         "scheduling_cycles": f.scheduling_cycles})

def slot_reuse_metric(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """Per SM: peak resident blocks C and the slot-reuse scheduling total ``sum start_(i) - end_(i-C)``.

    Compiled merge over the per-SM sorted starts and ends when numba is available, else
    :func:`slot_reuse_metric_numpy`; both give the same table.
    """
    if not accel.use_numba(np.size(lstart)) or np.size(lstart) == 0:
        return slot_reuse_metric_numpy(lstart, elapse, smid)
    lstart = accel.i64(lstart)
    end = lstart + accel.i64(elapse)
    sms, gidx = accel.dense_ids(smid)
    (starts, ends), first, counts = accel.group_sorted(gidx, sms.size, lstart, end)
    peak, total = accel.peak_and_reuse_kernel(starts, ends, first, counts)
    return pd.DataFrame({"smid": sms, "peak_resident": peak, "slot_reuse_cycles": total})

def slot_reuse_metric_numpy(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """:func:`slot_reuse_metric` in numpy (the path without numba): :func:`.fast.slot_reuse_per_sm` as a table."""
    return _reuse_table(slot_reuse_per_sm(lstart, elapse, smid))

def _reuse_table(r: SlotReuse) -> pd.DataFrame:
    return pd.DataFrame({"smid": r.smid, "peak_resident": r.peak_resident, "slot_reuse_cycles": r.slot_reuse_cycles})

def artifact_line(grid_size: int, per_sm: pd.DataFrame) -> tuple[str, float, float]:
    """The artifact's line and the two means it truncates, from :func:`artifact_metric`'s table."""
    return line_of(grid_size, per_sm["running_cycles"].to_numpy(), per_sm["scheduling_cycles"].to_numpy())

def analyze_records(label: str, path: Path, rec: BlockRecords, fifo: FifoPerSM | None = None,
                    compiled: bool | None = None, slot_reuse: SlotReuse | None = None) -> TraceSched:
    """Both estimators per SM and the artifact's line. ``fifo`` and ``slot_reuse``: the estimators already
    computed (the command line computes them before pandas is imported); ``compiled``: whether the numba
    kernels may be used (default: the :mod:`neutrino_ae.jit` rule by size; a one-shot command passes whether
    numba is loaded already, as importing it costs more than numpy spends at a million blocks)."""
    if compiled is None:
        compiled = accel.use_numba(np.size(rec.lstart))
    if fifo is not None:
        per_sm = _fifo_table(fifo)
    else:
        per_sm = (artifact_metric if compiled else artifact_metric_numpy)(rec.lstart, rec.elapse, rec.smid)
    if slot_reuse is not None:
        reuse = _reuse_table(slot_reuse)
    else:
        reuse = (slot_reuse_metric if compiled else slot_reuse_metric_numpy)(rec.lstart, rec.elapse, rec.smid)
    if np.array_equal(per_sm["smid"].to_numpy(), reuse["smid"].to_numpy()):
        # Both tables list the same SMs in ascending order: columns line up without a merge's hashing.
        per_sm["peak_resident"] = reuse["peak_resident"].to_numpy()
        per_sm["slot_reuse_cycles"] = reuse["slot_reuse_cycles"].to_numpy()
    else:
        per_sm = per_sm.merge(reuse, on="smid", how="left")
    with np.errstate(divide="ignore", invalid="ignore"):
        per_sm["ratio"] = per_sm["scheduling_cycles"] / per_sm["running_cycles"].where(per_sm["running_cycles"] > 0)
        per_sm["slot_reuse_ratio"] = per_sm["slot_reuse_cycles"] / per_sm["running_cycles"].where(
            per_sm["running_cycles"] > 0)
    line, mean_run, mean_sched = artifact_line(rec.grid_size, per_sm)
    mean_reuse = float(per_sm["slot_reuse_cycles"].mean()) if len(per_sm) else 0.0
    per_sm.insert(0, "trace", label)
    return TraceSched(label, path, rec, per_sm, line, mean_run, mean_sched, mean_reuse)
