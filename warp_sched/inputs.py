"""Fig. 13's inputs: where they are in a bundle and how they are read.

Input records are the ``block_sched`` layout saved by *every* warp (``records.WARP_SCHED``:
lstart, elapse, smid). Accepted inputs: a ``result/*.bin`` trace, a trace directory (its newest
result), or a table ``.npz``/``.csv`` with columns ``lstart, elapse, smid`` and optionally
``block, warp`` (one row per warp). Pickles (the original ``tmp.pkl``) are refused: unpickling a
downloaded file executes arbitrary code.

Clocks: lstart is the SM's own clock64, and SM clocks are not synchronised (each counter has its
own offset), so by default every SM's clock is aligned on its first warp start: the first wave is
dispatched to all SMs at kernel launch, so this puts all SMs on one time axis up to the first-wave
dispatch skew. ``--clock-align global`` keeps raw differences instead (for tables whose clocks are
already on one axis, e.g. %globaltimer).
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from neutrino_ae.bundle.context import Bundle
from neutrino_ae.errors import PICKLE_REFUSAL, InputError, TraceFormatError, refuse_pickle
from neutrino_ae.formats.bintrace import BinTrace, open_trace
from neutrino_ae.formats.level import Level
from neutrino_ae.formats.memory import ensure_fits
from neutrino_ae.formats.records import WARP_SCHED
from neutrino_ae.formats.tracedir import TraceDir, find_trace_dirs
from neutrino_ae.report.command.paths import missing_reason
from neutrino_ae.sched import intervals as accel

from .analysis import DEFAULT_TAIL_THRESHOLD, WarpRecords, align_clocks

if TYPE_CHECKING:
    from neutrino_ae.report.section.driver import Source

# The section's name (its bundle folder, its ground-truth key, its summary rows) and the paper's figure.
SECTION = "warp_sched"
PAPER_REF = "Fig. 13"
TABLE_COLUMNS = ("lstart", "elapse", "smid")
PICKLE_INSTEAD = (
    "Use the raw trace (result/*.bin or its trace directory), or convert the table once, in a trusted "
    "environment, to .npz/.csv with columns lstart, elapse, smid[, block, warp] (one row per warp), e.g. "
    "np.savez(out, lstart=..., elapse=..., smid=...) or DataFrame.to_csv(out, index=False)"
)
PICKLE_MESSAGE = f"{PICKLE_REFUSAL}. {PICKLE_INSTEAD}"
#: What the analysis holds per warp record beyond the mapped trace (the records' columns, the aligned
#: clocks, block and warp indices: about 80 B), with room to spare.
BYTES_PER_WARP = 160


def records_from_trace(trace: BinTrace, section: int = 0, align: str = "sm") -> WarpRecords:
    sec = trace.section(section)
    if sec.level != Level.WARP or sec.size != 16:
        raise TraceFormatError(trace.path, f"section {section} saves {sec.size} B per {sec.level.name.lower()}; a "
                                           "block_sched/warp_sched trace saves 16 B per warp (wrong probe?)")
    rec = trace.records(section, WARP_SCHED)
    blocks, units, rpu = rec.shape
    if blocks * units * rpu == 0:
        raise TraceFormatError(trace.path, f"section {section} holds no warp record")
    ensure_fits(trace.path, f"the warp_sched analysis of {blocks * units:,} warps", blocks * units * BYTES_PER_WARP)
    words = accel.record_words(rec)
    if words is not None:
        lstart, elapse, smid = accel.split_records_kernel(words[:, :, 0:2].reshape(-1, 2))
    else:
        flat = np.asarray(rec[:, :, 0]).reshape(-1)
        lstart, elapse, smid = flat["lstart"], flat["elapse"].astype(np.int64), flat["smid"].astype(np.int64)
    return WarpRecords(
        trace.path, align_clocks(lstart, smid, align), elapse, smid,
        np.repeat(np.arange(blocks, dtype=np.int64), units), np.tile(np.arange(units, dtype=np.int64), blocks),
        trace.header.grid_size, trace.header.block_size,
    )


def _table_column(path: Path, cols: dict[str, np.ndarray], name: str, n: int | None) -> np.ndarray:
    arr = np.asarray(cols[name])
    if arr.ndim != 1:
        raise InputError(path, f"column {name!r} must be one-dimensional, got shape {arr.shape}")
    if n is not None and arr.size != n:
        raise InputError(path, f"column {name!r} has {arr.size} rows, expected {n}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise InputError(path, f"column {name!r} must hold integers (found non-integer or missing values)")
    elif arr.dtype.kind not in "iu":
        raise InputError(path, f"column {name!r} must be numeric, got dtype {arr.dtype}")
    if arr.size and arr.min() < 0 and name != "block" and name != "warp":
        raise InputError(path, f"column {name!r} has negative values")
    return arr


def records_from_table(path: str | os.PathLike[str], align: str = "sm") -> WarpRecords:
    """Read a ``.npz`` (no pickled objects allowed) or ``.csv`` table of warp records."""
    p = Path(path)
    refuse_pickle(p, PICKLE_INSTEAD)
    if not p.is_file():
        raise InputError(p, missing_reason(p, "no such file"))
    if p.suffix.lower() == ".npz":
        try:
            with np.load(p, allow_pickle=False) as z:
                cols = {k: z[k] for k in z.files}
        except ValueError as exc:
            raise InputError(p, f"unreadable .npz ({exc}); object arrays are not accepted") from None
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise TraceFormatError(p, f"not a valid .npz archive ({exc})") from None
    elif p.suffix.lower() == ".csv":
        import pandas as pd  # the CSV reader: only for a .csv table

        try:
            df = pd.read_csv(p)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
            raise TraceFormatError(p, f"unreadable CSV ({exc.__class__.__name__}: {exc})") from None
        cols = {str(c).strip(): df[c].to_numpy() for c in df.columns}
    else:
        raise InputError(p, "expected a .bin trace, a trace directory, or a .npz/.csv table")
    missing = [c for c in TABLE_COLUMNS if c not in cols]
    if missing:
        raise InputError(p, f"missing column(s) {', '.join(missing)}; need lstart, elapse, smid[, block, warp]")
    lstart = _table_column(p, cols, "lstart", None)
    n = lstart.size
    if n == 0:
        raise InputError(p, "table has no rows")
    elapse = _table_column(p, cols, "elapse", n)
    smid = _table_column(p, cols, "smid", n)
    block = _table_column(p, cols, "block", n).astype(np.int64) if "block" in cols else np.full(n, -1, np.int64)
    warp = _table_column(p, cols, "warp", n).astype(np.int64) if "warp" in cols else np.full(n, -1, np.int64)
    return WarpRecords(p, align_clocks(lstart, smid, align), elapse.astype(np.int64), smid.astype(np.int64),
                       block, warp)


def load_warp_records(path: str | os.PathLike[str], section: int = 0, align: str = "sm") -> WarpRecords:
    """``.bin`` | trace directory (its newest ``result/*.bin``) | ``.npz``/``.csv`` table; ``.pkl`` refused."""
    p = Path(path)
    refuse_pickle(p, PICKLE_INSTEAD)
    if p.is_dir():
        td = TraceDir(p)
        return records_from_trace(td.open_result(td.newest_result()), section, align)
    if p.suffix.lower() in (".npz", ".csv"):
        return records_from_table(p, align)
    if not p.exists():
        raise InputError(p, missing_reason(p, "no such file or directory"))
    return records_from_trace(open_trace(p), section, align)


def read_from(path: str | os.PathLike[str], rec: WarpRecords, bundle: Bundle) -> dict[str, str | None]:
    """What a figure's results say it read: the trace directory (None for a table or a loose ``.bin``) and
    the file, bundle-relative where possible."""
    p = Path(path)
    tdir = p if p.is_dir() else p.parent.parent if p.suffix == ".bin" and p.parent.name == "result" else None
    return {"trace_dir": bundle.relative(tdir) if tdir is not None else None, "read": bundle.relative(rec.path)}


#: The section's inputs and their folders in a bundle's ``warp_sched/``.
INPUT_FOLDERS = {"exclusive": "exclusive_sched", "shared": "shared_sched", "tail": "tail"}


def find_inputs(root: str | os.PathLike[str]) -> tuple[dict[str, Path], dict[str, str]]:
    """In a bundle's ``warp_sched/`` folder: the ``exclusive``, ``shared`` and ``tail`` inputs.

    Exclusive and shared traces are required. The tail input (Fig. 13c/d) is optional: when it is
    missing, or only the paper bundle's ``tmp.pkl`` is there (refused, never unpickled), the second
    dict says why, and the caller still draws Fig. 13a/b.
    """
    base = Path(root)
    if not base.is_dir():
        raise InputError(base, missing_reason(base, "no such folder (expected the bundle's warp_sched layout)"))
    if (base / "warp_sched").is_dir():
        base = base / "warp_sched"
    found: dict[str, Path] = {}
    skipped: dict[str, str] = {}
    for key, name in INPUT_FOLDERS.items():
        d = base / name
        if not d.is_dir():
            if key != "tail":
                raise InputError(base, f"has no {name}/ folder (expected the bundle's warp_sched layout)")
            pickles = sorted(base.glob("*.pkl"))
            skipped["fig13cd"] = (f"{pickles[0]}: {PICKLE_MESSAGE}" if pickles
                                  else f"{d}: missing, no tail-effect trace for Fig. 13c/d")
            continue
        dirs = find_trace_dirs(d)  # d itself (the paper's layout), or the collections in it, oldest first
        if not dirs:
            raise InputError(d, "holds no trace directory (no result/ folder found)")
        found[key] = dirs[-1]
    return found, skipped


def tail_truth(path: str | os.PathLike[str], read: Path, bundle: Bundle) -> dict | None:
    """The generator's truth for the run this input belongs to (``tail``/``exclusive``/``shared``): only for
    the very file it generated (its ``trace``), not for another collection put beside it."""
    truth = bundle.ground_truth(SECTION)
    if not isinstance(truth, dict):
        return None
    parts = Path(path).resolve().parts
    for key, folder in INPUT_FOLDERS.items():
        cand = truth.get(key)
        if folder in parts and isinstance(cand, dict):
            return cand if cand.get("trace") in (None, bundle.relative(read)) else None
    return None


def chosen_line(key: str, chosen: Path, bundle: Bundle) -> str:
    """``tail trace dir: warp_sched/tail/<name> (newest of 2 in warp_sched/tail, ...)``: which folder was read."""
    folder = chosen.parent
    among = len(find_trace_dirs(folder)) if folder.name == INPUT_FOLDERS[key] else 1
    why = (f" (newest of {among} in {bundle.relative(folder)}, by the time in its name: "
           "neutrino_ae/formats/tracedir.py)" if among > 1 else "")
    return f"{key} trace dir: {bundle.relative(chosen)}{why}"


@dataclass
class Frames:
    """What ``load`` read: the inputs by key (``exclusive``, ``shared``, ``tail``; a per-figure script's
    one input under its figure's key: ``fig13a``, ``fig13b``, or ``tail``), their records, why Fig. 13c/d
    is skipped, and the options (``figure``: the script's figure, ``""`` for the section)."""

    bundle: Bundle
    figure: str
    paths: dict[str, Path]
    recs: dict[str, WarpRecords]
    skipped: dict[str, str]
    sms: list[int] | None = None
    threshold: float = DEFAULT_TAIL_THRESHOLD
    align: str = "sm"


def load(source: Source) -> Frames:
    """The section's inputs (a bundle's ``warp_sched/`` folder), or a per-figure script's trace; the
    options are the scripts' (``figure``, ``sm``, ``tail_threshold``, ``clock_align``)."""
    opts, path = source.options, source.paths[0]
    figure = opts.get("figure", "")
    threshold = opts.get("tail_threshold", DEFAULT_TAIL_THRESHOLD)
    align = opts.get("clock_align") or "sm"
    if figure in ("fig13a", "fig13b"):
        return Frames(source.bundle, figure, {figure: path}, {figure: load_warp_records(path)}, {}, opts.get("sm"))
    if figure == "fig13cd":
        return Frames(source.bundle, figure, {"tail": path}, {"tail": load_warp_records(path, 0, align)}, {},
                      threshold=threshold, align=align)
    inputs, skipped = find_inputs(path)
    recs = {k: load_warp_records(inputs[k], 0, align if k == "tail" else "sm") for k in inputs}
    return Frames(source.bundle, "", inputs, recs, skipped, threshold=threshold, align=align)
