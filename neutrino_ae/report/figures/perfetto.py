"""block_sched / warp_sched traces as a timeline for Perfetto (ui.perfetto.dev; current Chromium no
longer opens ``chrome://tracing``).

The file is Chrome's Trace Event Format, JSON object form: ``{"traceEvents": [...],
"displayTimeUnit": "ms", "otherData": {...}}``.

* **Tracks**: one process per SM (``pid`` = smid + 1, named ``SM <smid>``), one thread per resident
  slot of that SM (``tid`` = slot + 1, named ``slot <k>``): a block (or warp) takes the lowest slot
  free when it starts (:func:`neutrino_ae.sched.slots.lowest_free_slots`), so slices on a thread
  never overlap, as the format requires. ``pid`` 0 holds one slice per kernel launch.
* **Slices** (``ph: "X"``): one per block (``cat: "block"``, the first warp's record: the block's
  start and duration, as Sec. 4.5 reads it) or per warp (``cat: "warp"``), with ``args`` naming
  the block, warp and cycles; between two consecutive occupants of a slot, the **scheduling gap**
  is its own slice (``cat: "gap"``).
* **Time**: 1 µs on the axis = 1 SM clock cycle: ``ts`` and ``dur`` are whole cycles, JSON integers,
  so a slice that starts where the previous one ends has ``ts`` equal to that one's ``ts + dur`` in
  every importer (the format's unit is the microsecond; cycles / 1000 as a decimal fraction is not
  exact as a double, and put 6-9 % of the sample's slices one ulp over the next one, issue 37). Clocks
  are aligned per SM on its first start (``align="sm"``, SM clocks are not synchronised), or kept
  as raw differences (``"global"``). Launches of a trace directory follow each other, in launch order.
* **Bounded size**: at most ``max_slices`` block/warp slices are written. Beyond that, SMs are kept
  whole in smid order while they fit, and every other SM becomes one ``cat: "summary"`` slice over
  its busy span with ``args.blocks``/``args.warps`` counting what it stands for; the rule and the
  counts are in ``otherData.sampling``. Every block is still counted once.

The file is written atomically and streamed SM by SM (bounded memory beyond the trace's records).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from neutrino_ae.atomic import atomic_open
from neutrino_ae.errors import InputError, TraceFormatError
from neutrino_ae.formats.bintrace import BinTrace, open_trace
from neutrino_ae.formats.level import Level
from neutrino_ae.formats.memory import ensure_fits
from neutrino_ae.formats.records import BLOCK_SCHED
from neutrino_ae.formats.tracedir import TraceDir, no_result_message
from neutrino_ae.sched import intervals as accel
from neutrino_ae.sched.slots import lowest_free_slots

LEVELS = ("auto", "block", "warp")
ALIGNS = ("sm", "global")
DEFAULT_MAX_SLICES = 200_000  # ~40 MB of JSON: opens in ui.perfetto.dev
LAUNCH_GAP_CYCLES = 1000  # between two launches of one trace directory on the time axis
FORMAT_VERSION = 2  # 2: ts/dur in whole cycles (1 us on the axis = 1 cycle); 1: cycles / 1000, not exact
TIME_UNIT = ("1 us on the time axis = 1 SM clock cycle (ts, dur: whole cycles; a slice shown as 1.5 ms "
             "lasted 1,500 cycles)")
#: What the export holds per block or warp record before it samples (measured: about 110 B per block on
#: 4.2 M blocks, beyond the mapped trace), with room to spare.
BYTES_PER_RECORD = 160


@dataclass
class Launch:
    """One result file's records: one row per block (level block) or per warp (level warp)."""

    path: Path
    start: np.ndarray  # int64 cycles, aligned
    elapse: np.ndarray  # int64 cycles
    smid: np.ndarray  # int64
    block: np.ndarray  # int64 linear block index
    warp: np.ndarray  # int64 warp within the block (0 at level block)
    grid_size: int
    block_size: int


@dataclass
class Export:
    """What :func:`export_perfetto` wrote."""

    path: Path
    level: str
    blocks: int  # blocks in the trace(s), each counted once in the file
    slices: int  # block/warp slices written
    summarized_sms: int  # SMs written as one summary slice
    events: int  # every event, metadata included


def _results(path: Path) -> tuple[list[tuple[Path, BinTrace]], str | None]:
    """The result traces of a trace dir (launch order) or one ``.bin``; and the probe's name."""
    if not path.exists():
        raise InputError(path, "no such file or directory")
    if path.is_dir():
        td = TraceDir(path)
        files = td.results()
        if not files:
            raise InputError(path, no_result_message(path))
        probe = td.probe()
        name = probe.saving[0] if probe is not None and probe.saving else None
        return [(f, td.open_result(f)) for f in files], name
    if path.suffix != ".bin":
        raise InputError(path, "not a trace directory or a result .bin file")
    parent = path.parent.parent if path.parent.name == "result" else None
    if parent is not None and (parent / "probe.toml").is_file():
        td = TraceDir(parent)
        probe = td.probe()
        return [(path, td.open_result(path))], (probe.saving[0] if probe and probe.saving else None)
    return [(path, open_trace(path))], None


def _read(path: Path, trace: BinTrace, level: str, align: str) -> Launch:
    sec = trace.section(0)
    if sec.level != Level.WARP or sec.size != 16:
        raise TraceFormatError(path, f"section 0 saves {sec.size} B per {sec.level.name.lower()}; a block_sched/"
                                     "warp_sched trace saves 16 B per warp (wrong probe?)")
    rec = trace.records(0, BLOCK_SCHED)
    blocks, units, _ = rec.shape
    if blocks * units == 0 or rec.shape[2] == 0:
        raise TraceFormatError(path, "holds no block_sched/warp_sched record")
    records = blocks if level == "block" else blocks * units
    ensure_fits(path, f"the export of {records:,} {level} records", records * BYTES_PER_RECORD)
    first = np.asarray(rec[:, :1, 0] if level == "block" else rec[:, :, 0]).reshape(-1)
    lstart = first["lstart"].astype(np.uint64)
    elapse = first["elapse"].astype(np.int64)
    smid = first["smid"].astype(np.int64)
    per_block = 1 if level == "block" else units
    block = np.repeat(np.arange(blocks, dtype=np.int64), per_block)
    warp = np.tile(np.arange(per_block, dtype=np.int64), blocks)
    keep = (lstart != 0) | (elapse != 0)  # the hook's zero fill: a warp that never ran saves nothing
    lstart, elapse, smid, block, warp = lstart[keep], elapse[keep], smid[keep], block[keep], warp[keep]
    if lstart.size == 0:
        raise TraceFormatError(path, "every record is empty (zero-filled)")
    if align == "sm":
        sms, gidx = accel.dense_ids(smid)
        origin = np.full(sms.size, np.iinfo(np.uint64).max, dtype=np.uint64)
        np.minimum.at(origin, gidx, lstart)
        start = (lstart - origin[gidx]).astype(np.int64)
    else:
        start = (lstart - lstart.min()).astype(np.int64)
    return Launch(path, start, elapse, smid, block, warp, trace.header.grid_size, trace.header.block_size)


def _ticks(cycles: np.ndarray) -> np.ndarray:
    """Cycles as the text of ``ts``/``dur``: whole numbers (1 cycle = 1 unit of the axis), exact."""
    return np.asarray(cycles, dtype=np.int64).astype(str)


def _slice_lines(name: np.ndarray, cat: str, ts: np.ndarray, dur: np.ndarray, pid: int, tid: np.ndarray,
                 args: np.ndarray) -> np.ndarray:
    """One JSON object per slice, as text, built column-wise (no Python step per slice)."""
    head = np.char.add(np.char.add('{"name":"', name), f'","cat":"{cat}","ph":"X","ts":')
    body = np.char.add(np.char.add(np.char.add(head, _ticks(ts)), ',"dur":'), _ticks(dur))
    body = np.char.add(np.char.add(body, f',"pid":{pid},"tid":'), tid.astype(str))
    return np.char.add(np.char.add(np.char.add(body, ',"args":{'), args), "}}")


def _meta(name: str, pid: int, tid: int | None, args: dict[str, Any]) -> str:
    event: dict[str, Any] = {"name": name, "ph": "M", "pid": pid, "args": args}
    if tid is not None:
        event["tid"] = tid
    return json.dumps(event, separators=(",", ":"))


class _Stream:
    """The traceEvents array, written event by event (batches of lines) into an open file."""

    def __init__(self, f: IO[str]) -> None:
        self.f, self.count = f, 0

    def write(self, lines: list[str] | np.ndarray) -> None:
        if len(lines) == 0:
            return
        self.f.write(("," if self.count else "") + "\n" + ",\n".join(lines))
        self.count += len(lines)


def _sm_events(out: _Stream, level: str, sm: int, start: np.ndarray, elapse: np.ndarray, block: np.ndarray,
               warp: np.ndarray, slot: np.ndarray) -> int:
    """Every slice of one SM, and its gaps; returns the slices written (gaps not counted)."""
    pid, tid = sm + 1, slot + 1
    end = start + elapse
    if level == "block":
        names = np.char.add("block ", block.astype(str))
        args = np.char.add(np.char.add('"block":', block.astype(str)), np.char.add(',"cycles":', elapse.astype(str)))
    else:
        names = np.char.add(np.char.add(np.char.add("block ", block.astype(str)), " warp "), warp.astype(str))
        args = np.char.add(np.char.add(np.char.add('"block":', block.astype(str)), np.char.add(',"warp":', warp.astype(
            str))), np.char.add(',"cycles":', elapse.astype(str)))
    out.write(_slice_lines(names, level, start, elapse, pid, tid, args))
    # Gaps: per slot, from one occupant's end to the next one's start.
    order = np.lexsort((start, slot))
    s, e, t = start[order], end[order], slot[order]
    same = t[1:] == t[:-1]
    gap_start, gap_end = e[:-1][same], s[1:][same]
    pos = gap_end > gap_start
    if pos.any():
        g0, g1, gt = gap_start[pos], gap_end[pos], t[1:][same][pos]
        gargs = np.char.add('"cycles":', (g1 - g0).astype(str))
        names = np.full(g0.size, "scheduling gap")
        out.write(_slice_lines(names, "gap", g0, g1 - g0, pid, gt + 1, gargs))
    return int(start.size)


def _summary(out: _Stream, level: str, sm: int, start: np.ndarray, elapse: np.ndarray, block: np.ndarray) -> None:
    end = start + elapse
    first, last = int(start.min()), int(end.max())
    args = {"blocks": int(np.unique(block).size), "busy_cycles": int(elapse.sum()), f"{level}s": int(start.size),
            "why": "SM summarised to keep the file bounded (otherData.sampling)"}
    out.write([json.dumps({"name": f"SM {sm}: {args['blocks']} blocks (summary)", "cat": "summary", "ph": "X",
                           "ts": first, "dur": last - first, "pid": sm + 1, "tid": 0,
                           "args": args}, separators=(",", ":"))])


def _level(level: str, probe: str | None) -> str:
    if level != "auto":
        return level
    return "warp" if probe == "warp_sched" else "block"


#: Where the events start: everything before it, ``otherData`` included, is the file's first line.
_EVENTS_OPEN = '"traceEvents":['


def read_other_data(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """An export's ``otherData``, read from its first line (where :func:`export_perfetto` puts it)
    without loading its events; None when the file is missing or not such an export."""
    try:
        with Path(path).open(encoding="utf-8") as f:
            head = f.readline()
        other = json.loads(head.removesuffix(_EVENTS_OPEN + "\n").rstrip(",") + "}")["otherData"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return other if isinstance(other, dict) else None


def export_perfetto(trace: str | os.PathLike[str], out: str | os.PathLike[str], *, level: str = "auto",
                    align: str = "sm", max_slices: int = DEFAULT_MAX_SLICES,
                    provenance: dict[str, Any] | None = None) -> Export:
    """Write the Trace Event JSON of ``trace`` (a block_sched/warp_sched trace directory, every result
    in launch order, or one ``result/*.bin``) to ``out``; see the module docstring for the layout.

    ``level``: ``block``, ``warp``, or ``auto`` (warp for a ``warp_sched`` probe, else block).
    ``provenance``: put in ``otherData`` as is (e.g. the bundle kind, ``synthetic``)."""
    if level not in LEVELS:
        raise InputError(None, f"level must be one of {', '.join(LEVELS)}, not {level!r}")
    if align not in ALIGNS:
        raise InputError(None, f"clock alignment must be one of {', '.join(ALIGNS)}, not {align!r}")
    if max_slices < 1:
        raise InputError(None, f"the slice budget must be at least 1, not {max_slices}")
    src = Path(trace)
    results, probe = _results(src)
    level = _level(level, probe)
    launches, offset = [], 0
    for path, bt in results:
        launch = _read(path, bt, level, align)
        launch.start = launch.start + offset
        offset = int((launch.start + launch.elapse).max()) + LAUNCH_GAP_CYCLES
        launches.append(launch)
    start = np.concatenate([la.start for la in launches])
    elapse = np.concatenate([la.elapse for la in launches])
    smid = np.concatenate([la.smid for la in launches])
    block = np.concatenate([la.block + i * (1 << 40) for i, la in enumerate(launches)])  # distinct per launch
    warp = np.concatenate([la.warp for la in launches])
    slot = lowest_free_slots(smid, start, start + elapse)
    sms, counts = np.unique(smid, return_counts=True)
    whole = sms[np.cumsum(counts) <= max_slices]  # SMs kept whole, in smid order, while they fit
    total_blocks = sum(int(np.unique(la.block).size) for la in launches)
    order = np.argsort(smid, kind="stable")
    bounds = np.searchsorted(smid[order], np.append(sms, sms.max() + 1 if sms.size else 0))
    sampling = {
        "rule": (f"at most {max_slices} {level} slices: SMs are kept whole in smid order while their slices fit; "
                 "each other SM is one 'summary' slice over its busy span whose args count its blocks"),
        "max_slices": max_slices, "sms": int(sms.size), "sms_whole": int(whole.size),
        "sms_summarised": int(sms.size - whole.size),
    }
    other = {"generator": "neutrino-ae export perfetto", "format_version": FORMAT_VERSION, "source": str(src),
             "results": [str(la.path) for la in launches], "probe": probe, "level": level, "clock_align": align,
             "time_unit": TIME_UNIT,
             "blocks": total_blocks, "grid_sizes": [la.grid_size for la in launches],
             "block_size": launches[0].block_size, "sampling": sampling, **(provenance or {})}
    written = 0
    with atomic_open(out, "w", encoding="utf-8") as f:
        f.write('{"displayTimeUnit":"ms","otherData":' + json.dumps(other) + "," + _EVENTS_OPEN)
        stream = _Stream(f)
        meta = [_meta("process_name", 0, None, {"name": "kernel launches"}),
                _meta("process_sort_index", 0, None, {"sort_index": -1}),
                _meta("thread_name", 0, 0, {"name": "launches"})]
        lo = 0
        for i, la in enumerate(launches):
            end = int((la.start + la.elapse).max())
            lo = int(la.start.min())
            meta.append(json.dumps({"name": la.path.name, "cat": "launch", "ph": "X", "ts": lo,
                                    "dur": end - lo, "pid": 0, "tid": 0,
                                    "args": {"launch": i, "grid_size": la.grid_size, "block_size": la.block_size,
                                             "file": str(la.path)}}, separators=(",", ":")))
        stream.write(meta)
        keep_whole = set(whole.tolist())
        for k, sm in enumerate(sms.tolist()):
            idx = order[bounds[k]:bounds[k + 1]]
            sm_meta = [_meta("process_name", sm + 1, None, {"name": f"SM {sm}"}),
                       _meta("process_sort_index", sm + 1, None, {"sort_index": sm})]
            if sm in keep_whole:
                lanes = np.unique(slot[idx]).tolist()
                sm_meta += [_meta("thread_name", sm + 1, lane + 1, {"name": f"slot {lane}"}) for lane in lanes]
                stream.write(sm_meta)
                written += _sm_events(stream, level, sm, start[idx], elapse[idx], block[idx], warp[idx], slot[idx])
            else:
                sm_meta.append(_meta("thread_name", sm + 1, 0, {"name": "summary"}))
                stream.write(sm_meta)
                _summary(stream, level, sm, start[idx], elapse[idx], block[idx])
        f.write("\n]}\n")
    return Export(Path(out), level, total_blocks, written, int(sms.size - whole.size), stream.count)
