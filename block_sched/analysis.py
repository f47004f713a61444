"""The block_sched section's computations: records and tables in, tables and numbers out (no I/O, no plots)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from neutrino_ae.report.columns import Columns
from neutrino_ae.sched import intervals as accel

from .estimates import _gt  # noqa: F401  (re-exported for callers)
from .fast import BlockRecords, FifoPerSM, SlotReuse, fifo_per_sm, line_of, slot_reuse_per_sm

if TYPE_CHECKING:  # the tables are numpy columns; pandas only for the DataFrame forms, imported there
    import pandas as pd


@dataclass
class TraceSched:
    label: str
    path: Path
    records: BlockRecords
    per_sm: pd.DataFrame | Columns  # Columns where analyze_records was asked for no DataFrame
    line: str
    mean_running: float
    mean_scheduling: float
    mean_slot_reuse: float

    def _column(self, name: str) -> np.ndarray:
        return np.asarray(self.per_sm[name], dtype=float)

    @property
    def blocks_per_sm(self) -> float:
        """Blocks per SM, mean over the SMs that ran one (the divisor of 'Running' per block)."""
        return _mean(self._column("blocks")) if len(self.per_sm) else 0.0

    @property
    def dispatches_per_sm(self) -> float:
        """Blocks per SM that waited for a freed slot: all but the SM's peak number of resident blocks."""
        if not len(self.per_sm):
            return 0.0
        return _mean(np.clip(self._column("blocks") - self._column("peak_resident"), 0, None))

    @property
    def running_per_block(self) -> float | None:
        """The artifact's 'Running' (cycles per SM) per block: the mean block duration."""
        return self.mean_running / self.blocks_per_sm if self.blocks_per_sm else None

    @property
    def scheduling_per_dispatch(self) -> float | None:
        """The artifact's 'Scheduling' (cycles per SM) per block dispatched into a freed slot."""
        return self.mean_scheduling / self.dispatches_per_sm if self.dispatches_per_sm else None


def _mean(values: np.ndarray) -> float:
    """The mean over the values that are not NaN (NaN when none is), as pandas' ``Series.mean`` takes it."""
    ok = values[~np.isnan(values)]
    return float(ok.mean()) if ok.size else float("nan")


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
    return _fifo_table(FifoPerSM(sms, blocks, running, sched))

def artifact_metric_numpy(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """:func:`artifact_metric` in numpy (the path without numba): :func:`.fast.fifo_per_sm` as a table."""
    return _fifo_table(fifo_per_sm(lstart, elapse, smid))

def _fifo_table(f: FifoPerSM) -> pd.DataFrame:
    import pandas as pd

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
    return _reuse_table(SlotReuse(sms, peak, total))

def slot_reuse_metric_numpy(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """:func:`slot_reuse_metric` in numpy (the path without numba): :func:`.fast.slot_reuse_per_sm` as a table."""
    return _reuse_table(slot_reuse_per_sm(lstart, elapse, smid))

def _reuse_table(r: SlotReuse) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({"smid": r.smid, "peak_resident": r.peak_resident, "slot_reuse_cycles": r.slot_reuse_cycles})

def artifact_line(grid_size: int, per_sm: pd.DataFrame | Columns) -> tuple[str, float, float]:
    """The artifact's line and the two means it truncates, from :func:`artifact_metric`'s table."""
    return line_of(grid_size, np.asarray(per_sm["running_cycles"]), np.asarray(per_sm["scheduling_cycles"]))


def per_sm_table(label: str, fifo: FifoPerSM, reuse: SlotReuse) -> Columns:
    """The per-SM table: the FIFO metric's SMs with their slot-reuse numbers and both ratios (NaN where an
    SM ran for 0 cycles, or, for the slot-reuse columns, where the estimator has no such SM)."""
    if np.array_equal(fifo.smid, reuse.smid):
        # Both list the same SMs in ascending order: the columns line up as they are.
        peak, total = reuse.peak_resident, reuse.slot_reuse_cycles
    else:  # a left join on the SM id
        pos = np.minimum(np.searchsorted(reuse.smid, fifo.smid), max(reuse.smid.size - 1, 0))
        found = reuse.smid[pos] == fifo.smid if reuse.smid.size else np.zeros(fifo.smid.size, bool)
        peak = np.where(found, reuse.peak_resident[pos] if reuse.smid.size else 0, np.nan)
        total = np.where(found, reuse.slot_reuse_cycles[pos] if reuse.smid.size else 0, np.nan)
    running = fifo.running_cycles.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(running > 0, fifo.scheduling_cycles / running, np.nan)
        reuse_ratio = np.where(running > 0, total / running, np.nan)
    return Columns({"trace": [label] * fifo.smid.size, "smid": fifo.smid, "blocks": fifo.blocks,
                    "running_cycles": fifo.running_cycles, "scheduling_cycles": fifo.scheduling_cycles,
                    "peak_resident": peak, "slot_reuse_cycles": total, "ratio": ratio,
                    "slot_reuse_ratio": reuse_ratio})


def _fifo_of(table: pd.DataFrame) -> FifoPerSM:
    return FifoPerSM(*(table[c].to_numpy() for c in ("smid", "blocks", "running_cycles", "scheduling_cycles")))


def _reuse_of(table: pd.DataFrame) -> SlotReuse:
    return SlotReuse(*(table[c].to_numpy() for c in ("smid", "peak_resident", "slot_reuse_cycles")))


def analyze_records(label: str, path: Path, rec: BlockRecords, fifo: FifoPerSM | None = None,
                    compiled: bool | None = None, slot_reuse: SlotReuse | None = None,
                    frame: bool = True) -> TraceSched:
    """Both estimators per SM and the artifact's line. ``fifo`` and ``slot_reuse``: the estimators already
    computed (the command line computes them before anything else is imported); ``compiled``: whether the
    numba kernels may be used (default: the :mod:`neutrino_ae.jit` rule by size; a one-shot command passes
    whether numba is loaded already, as importing it costs more than numpy spends at a million blocks);
    ``frame``: the per-SM table as a DataFrame (else as :class:`Columns`, no pandas import)."""
    if compiled is None:
        compiled = accel.use_numba(np.size(rec.lstart))
    if fifo is None:
        fifo = _fifo_of((artifact_metric if compiled else artifact_metric_numpy)(rec.lstart, rec.elapse, rec.smid))
    if slot_reuse is None:
        slot_reuse = _reuse_of((slot_reuse_metric if compiled else slot_reuse_metric_numpy)(
            rec.lstart, rec.elapse, rec.smid))
    table = per_sm_table(label, fifo, slot_reuse)
    line, mean_run, mean_sched = artifact_line(rec.grid_size, table)
    mean_reuse = _mean(np.asarray(table["slot_reuse_cycles"], dtype=float)) if len(table) else 0.0
    return TraceSched(label, path, rec, table.to_frame() if frame else table, line, mean_run, mean_sched, mean_reuse)
