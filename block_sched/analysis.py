"""The block_sched section's computations: records and tables in, tables and numbers out (no I/O, no plots)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from neutrino_ae.sched import intervals as accel

from .fast import BlockRecords, FifoPerSM, dense_sm, fifo_per_sm, line_of


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

def _group_by_sm(smid: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Order by (smid, key); return order, distinct smids, first position and count of each SM."""
    order = np.lexsort((key, smid))
    sms, first, counts = np.unique(smid[order], return_index=True, return_counts=True)
    return order, sms, first, counts

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
    """:func:`slot_reuse_metric` in numpy (the path without numba)."""
    lstart = np.asarray(lstart, dtype=np.int64)
    end = lstart + np.asarray(elapse, dtype=np.int64)
    smid = np.asarray(smid, dtype=np.int64)
    n = lstart.size
    if n == 0:
        return pd.DataFrame({"smid": [], "peak_resident": [], "slot_reuse_cycles": []})
    sms, sm_idx = dense_sm(smid)
    lo = min(int(lstart.min()), int(end.min()))
    span_bits = max(1, (max(int(lstart.max()), int(end.max())) - lo + 1).bit_length())
    if span_bits + max(1, int(sms.size).bit_length()) > 62:
        return _slot_reuse_lexsort(lstart, end, smid)
    counts = np.bincount(sm_idx, minlength=sms.size)
    first = np.r_[0, np.cumsum(counts)[:-1]]
    # One sort of a packed (SM, time) int64 key instead of lexsorts (10x faster at 1M blocks). Starts
    # and ends share the packing, so the two sorted key arrays compare directly.
    high = sm_idx.astype(np.int64) << span_bits
    skey = np.sort(high | (lstart - lo))
    ekey = np.sort(high | (end - lo))
    mask = np.int64((1 << span_bits) - 1)
    starts = (skey & mask) + lo
    ends = (ekey & mask) + lo
    # Residency right after an SM's i-th start (ends at a tie leave first) is (starts so far) minus
    # (the SM's ends <= that start); in global positions the SM's offset cancels out.
    resident = np.arange(1, n + 1) - np.searchsorted(ekey, skey, side="right")
    peak = np.maximum.reduceat(resident, first)
    sm_of = np.repeat(np.arange(sms.size), counts)
    pos = np.arange(n) - first[sm_of]
    c = peak[sm_of]
    use = np.flatnonzero(pos >= c)
    gaps = np.zeros(n, np.int64)
    gaps[use] = starts[use] - ends[use - c[use]]
    total = np.add.reduceat(gaps, first)
    return pd.DataFrame({"smid": sms, "peak_resident": peak, "slot_reuse_cycles": total})

def _slot_reuse_lexsort(lstart: np.ndarray, end: np.ndarray, smid: np.ndarray) -> pd.DataFrame:
    """:func:`slot_reuse_metric` with lexsorts, for clock spans too wide to pack with the SM index."""
    n = lstart.size
    s_order, sms, first, counts = _group_by_sm(smid, lstart)
    e_order = np.lexsort((end, smid))  # same SM grouping, ends in time order
    starts = lstart[s_order]
    ends = end[e_order]
    # Peak residency per SM: sweep +1/-1 events sorted by (sm, time, ends before starts at a tie).
    ev_sm = np.r_[smid, smid]
    ev_t = np.r_[lstart, end]
    ev_d = np.r_[np.ones(n, np.int64), -np.ones(n, np.int64)]
    ev = np.lexsort((ev_d, ev_t, ev_sm))
    running = np.cumsum(ev_d[ev])  # per-SM counts: every SM's events sum to zero, so no reset is needed
    ev_first = np.searchsorted(ev_sm[ev], sms)
    peak = np.maximum.reduceat(running, ev_first)
    sm_idx = np.repeat(np.arange(sms.size), counts)
    pos = np.arange(n) - first[sm_idx]
    c = peak[sm_idx]
    use = pos >= c
    gaps = np.zeros(n, np.int64)
    gaps[use] = starts[use] - ends[first[sm_idx[use]] + pos[use] - c[use]]
    total = np.add.reduceat(gaps, first)
    return pd.DataFrame({"smid": sms, "peak_resident": peak, "slot_reuse_cycles": total})

def artifact_line(grid_size: int, per_sm: pd.DataFrame) -> tuple[str, float, float]:
    """The artifact's line and the two means it truncates, from :func:`artifact_metric`'s table."""
    return line_of(grid_size, per_sm["running_cycles"].to_numpy(), per_sm["scheduling_cycles"].to_numpy())

def analyze_records(label: str, path: Path, rec: BlockRecords, fifo: FifoPerSM | None = None,
                    compiled: bool | None = None) -> TraceSched:
    """Both estimators per SM and the artifact's line. ``fifo``: the FIFO metric already computed (the
    command line's first line); ``compiled``: whether the numba kernels may be used (default: the
    :mod:`neutrino_ae.jit` rule by size; a one-shot command passes whether numba is loaded already,
    as importing it costs more than numpy spends at a million blocks)."""
    if compiled is None:
        compiled = accel.use_numba(np.size(rec.lstart))
    if fifo is not None:
        per_sm = _fifo_table(fifo)
    else:
        per_sm = (artifact_metric if compiled else artifact_metric_numpy)(rec.lstart, rec.elapse, rec.smid)
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


def _gt(truth: dict | None, key: str) -> float | None:
    return None if not truth or key not in truth else float(truth[key])
