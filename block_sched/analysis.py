"""The block_sched section's computations: records and tables in, tables and numbers out (no I/O, no plots)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from neutrino_ae.report.results.columns import Columns
from neutrino_ae.sched import intervals as accel

from .estimates import _gt  # noqa: F401  (re-exported for callers)
from .fast import BlockRecords, FifoPerSM, SlotReuse, fifo_per_sm, line_of, share_of_running, slot_reuse_per_sm

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
    return _fifo_table(_fifo(lstart, elapse, smid, compiled=True))


def _fifo(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray, compiled: bool) -> FifoPerSM:
    """The FIFO metric per SM: the compiled pass where ``compiled`` and numba is worth it at this size."""
    if not (compiled and accel.use_numba(np.size(lstart))):
        return fifo_per_sm(lstart, elapse, smid)
    lstart, elapse = accel.i64(lstart), accel.i64(elapse)
    sms, gidx = accel.dense_ids(smid)
    return FifoPerSM(sms, *accel.artifact_fifo_kernel(lstart, elapse, gidx, sms.size))

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
    return _reuse_table(_slot_reuse(lstart, elapse, smid, compiled=True))


def _slot_reuse(lstart: np.ndarray, elapse: np.ndarray, smid: np.ndarray, compiled: bool) -> SlotReuse:
    """The slot-reuse estimator per SM: the compiled merge where ``compiled`` and numba is worth it here."""
    if not (compiled and accel.use_numba(np.size(lstart))) or np.size(lstart) == 0:
        return slot_reuse_per_sm(lstart, elapse, smid)
    lstart = accel.i64(lstart)
    end = lstart + accel.i64(elapse)
    sms, gidx = accel.dense_ids(smid)
    (starts, ends), first, counts = accel.group_sorted(gidx, sms.size, lstart, end)
    return SlotReuse(sms, *accel.peak_and_reuse_kernel(starts, ends, first, counts))

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
    peak, total = reuse.on(fifo.smid)
    return Columns({"trace": [label] * fifo.smid.size, "smid": fifo.smid, "blocks": fifo.blocks,
                    "running_cycles": fifo.running_cycles, "scheduling_cycles": fifo.scheduling_cycles,
                    "peak_resident": peak, "slot_reuse_cycles": total,
                    "ratio": share_of_running(fifo.scheduling_cycles, fifo.running_cycles),
                    "slot_reuse_ratio": share_of_running(total, fifo.running_cycles)})


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
        fifo = _fifo(rec.lstart, rec.elapse, rec.smid, compiled)
    if slot_reuse is None:
        slot_reuse = _slot_reuse(rec.lstart, rec.elapse, rec.smid, compiled)
    table = per_sm_table(label, fifo, slot_reuse)
    line, mean_run, mean_sched = artifact_line(rec.grid_size, table)
    mean_reuse = _mean(np.asarray(table["slot_reuse_cycles"], dtype=float)) if len(table) else 0.0
    return TraceSched(label, path, rec, table.to_frame() if frame else table, line, mean_run, mean_sched, mean_reuse)
