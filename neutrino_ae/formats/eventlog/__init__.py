"""``event.log``: the hooked driver's text log, read into an :class:`EventLog` (:func:`parse_event_log`).

Lines the analyses read (anything else, e.g. ``[info]``, ``[mod]``, ``[jit]``, is skipped; today's
Neutrino, branch main, tags the JIT lines ``[probe]`` and init ``[init] success``, also skipped)::

    [pid] 1860576                               ([init] pid 1860576 on branch main)
    [cmd] 26 python block_sched/raw.py          number = bytes of /proc/<pid>/cmdline (NUL-terminated args;
                                                ([init] cmd .. on main) the rest of the hook's buffer follows)
    [benchmark] ENABLED L2 Flush Size <bytes>
    [mem] cuMemAlloc_v2 0 dptr 7fdf78000000 bytesize 33554432      op, return code, pointer (hex), bytes
    [exec] <launch-ns> param 7fdf78000000 7fdf7a000000 ...          starts a launch
    [exec] grid 32768 1 1 block 128 1 1 shared 0
    [exec] grid <gridSize> warp  <warps> probe <bytes> total <bytes>  ("block <blockSize>" for thread level)
    [exec] probe-mem <bytes> (bytes)
    [exec] succeed 0                                                 (skipped: the probed launch worked)
    [exec] save <path>.bin size <bytes>
    [exec] prologue <ms> kernel <ms> epilogue <ms> ratio <r>
    [benchmark] prologue <ms> kernel <ms> epilogue <ms> original <ms> impact <r> <rc>
    [exec] failed <CUresult>                                         the probed launch failed
    [analyze] subproc <python> <hook.py> <trace.bin>             ([callback] subproc .. on branch main)

The hook driver (open-neutrino/neutrino, ``neutrino/src/cuda.c``) prints these with ``fprintf``: the
param line as ``"[exec] %lld param "`` then ``"%llx "`` per argument, so it ends with a space (``param \n``
with no arguments); the warp-level probe line as ``"grid %zu warp  %zu ..."``, two spaces after ``warp``;
``%f`` (six decimals) for times. The writer prints exactly that; the parser also reads the same lines
with single spaces and no trailing space (what earlier versions of the writer printed).

Grouping rule: a launch starts at a ``param`` line, or at a ``grid .. block .. shared`` line when the
current launch already has one (or none is open). Every other launch line belongs to the latest
launch before it; lines before the first launch are ignored. If a launch holds the same kind of
line twice, the first one wins.

Robustness: bytes are decoded as UTF-8 with replacement; lines with unknown tags or malformed
numbers are skipped; a final line without its newline is treated as truncated and dropped (its text
is kept in :attr:`EventLog.truncated_tail`, so the loss is visible).

Read with numpy alone: the launches and memory tables are pandas DataFrames built on first use, and
:meth:`EventLog.probe_mem` gives the column a per-figure script's first line needs without them.

The lines are written by :class:`.write.EventLogWriter`; the tags and grammar of each kind are
:mod:`.tags`, the vectorised machinery :mod:`.scan` and :mod:`.kinds`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from neutrino_ae.errors import InputError
from neutrino_ae.formats.eventlog.kinds import (
    fast_bench,
    fast_grid,
    fast_params,
    fast_probe_mem,
    fast_save,
    fast_timing,
    param_lines,
    slow_bench,
    slow_grid,
    slow_params,
    slow_probe_mem,
    slow_save,
    slow_timing,
)
from neutrino_ae.formats.eventlog.scan import FRONT, TAIL, LogLines, TooBig, decode, in_blocks, ints, padded_buffer
from neutrino_ae.formats.eventlog.tags import (
    P_ANALYZE,
    P_BENCH,
    P_CALLBACK,
    P_CMD,
    P_FAILED,
    P_GRID,
    P_INIT,
    P_L2,
    P_MEM,
    P_PID,
    P_PROBE_MEM,
    P_SAVE,
    P_TIMING,
    RE_ANALYZE,
    RE_CMD,
    RE_L2,
    RE_MEM,
    RE_PID,
)
from neutrino_ae.formats.inputs import check_input

if TYPE_CHECKING:
    import pandas as pd

#: An event.log is a few lines per launch; 4 GiB is millions of launches. Beyond, it is not one.
MAX_EVENT_LOG_BYTES = 4 << 30

LAUNCH_COLUMNS = [
    "launch", "time_ns", "params", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared",
    "probe_level", "probe_units", "probe_bytes", "total_bytes", "probe_mem", "save_path", "save_size",
    "prologue_ms", "kernel_ms", "epilogue_ms", "ratio", "original_ms", "impact", "rc", "failed",
]
MEM_COLUMNS = ["op", "rc", "dptr", "bytesize"]


@dataclass
class IntColumn:
    """A nullable integer column in numpy: ``data`` where ``mask`` is False, missing where True (pandas'
    ``IntegerArray`` layout: nanosecond times and byte counts lose precision as float64)."""

    data: np.ndarray
    mask: np.ndarray


def _pandas_column(col: object) -> object:
    import pandas as pd

    if isinstance(col, IntColumn):
        return pd.arrays.IntegerArray(col.data, col.mask)
    if isinstance(col, np.ndarray) and col.dtype == object:
        # Explicit object dtype: string inference would turn the missing entries into NaN.
        return pd.Series(col, dtype=object)
    return col


@dataclass
class EventLog:
    path: Path | None
    pid: int | None
    cmd: str | None
    l2_flush_bytes: int | None
    launch_columns: dict[str, object]  # LAUNCH_COLUMNS: numpy arrays and IntColumns, one entry per launch
    mem_columns: dict[str, object]  # MEM_COLUMNS, one entry per [mem] line
    analyze: list[str] = field(default_factory=list)
    truncated_tail: str | None = None  # unterminated last line that was dropped

    @cached_property
    def launches(self) -> pd.DataFrame:
        """One row per launch (``LAUNCH_COLUMNS``; nullable integers)."""
        import pandas as pd

        # The params column stays an object array: pandas would otherwise inspect every tuple.
        return pd.DataFrame({c: (v if c == "params" else _pandas_column(v)) for c, v in self.launch_columns.items()})

    @cached_property
    def mem(self) -> pd.DataFrame:
        """One row per ``[mem]`` line (``MEM_COLUMNS``)."""
        import pandas as pd

        return pd.DataFrame({c: _pandas_column(v) for c, v in self.mem_columns.items()})

    def __len__(self) -> int:
        return len(self.launch_columns["launch"])

    @property
    def cut_launch(self) -> int | None:
        """The launch the file was cut in: when the log ends without a newline (a run killed while
        writing), its last launch may lack lines that were never written -- None otherwise."""
        if self.truncated_tail is None or not len(self):
            return None
        return int(self.launch_columns["launch"][-1])

    def column(self, name: str, complete: bool = True) -> np.ndarray:
        """One launch column in numpy: integers as float64 with NaN where a launch has none (as
        ``launches[name].to_numpy(dtype=float, na_value=np.nan)``), other columns as they are;
        ``complete``: without :attr:`cut_launch` (as :meth:`complete_launches`)."""
        col = self.launch_columns[name]
        values = np.where(col.mask, np.nan, col.data.astype(np.float64)) if isinstance(col, IntColumn) else col
        return values[self._complete()] if complete else values

    def probe_mem(self, complete: bool = True) -> np.ndarray:
        """Each launch's ``[exec] probe-mem`` bytes as float64, NaN where a launch has none (:meth:`column`)."""
        return self.column("probe_mem", complete)

    def _complete(self) -> np.ndarray | slice:
        """Which launches :meth:`complete_launches` keeps: all but :attr:`cut_launch`."""
        cut = self.cut_launch
        return slice(None) if cut is None else self.launch_columns["launch"] != cut

    def complete_launches(self) -> pd.DataFrame:
        """``launches`` without :attr:`cut_launch`: what an analysis may trust; report the cut one."""
        keep = self._complete()
        return self.launches if isinstance(keep, slice) else self.launches[keep]


def _first_per_launch(starts: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For lines at ``pos``: (launch index, index into the lines) of the first such line per launch."""
    if pos.size == starts.size and pos.size and np.all(starts <= pos) and np.all(pos[:-1] < starts[1:]):
        # The usual log: one such line in every launch.
        every = np.arange(pos.size)
        return every, every
    owner = np.searchsorted(starts, pos, side="right") - 1
    keep = owner >= 0
    owner, idx = owner[keep], np.flatnonzero(keep)
    if owner.size and np.all(owner[1:] >= owner[:-1]):  # lines in log order: no sort needed
        first = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
        return owner[first], idx[first]
    uniq, first = np.unique(owner, return_index=True)
    return uniq, idx[first]


def _column(n: int, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = np.full(n, np.nan, dtype=np.float64)
    out[rows] = values
    return out


def _int_column(n: int, rows: np.ndarray, values: np.ndarray) -> IntColumn:
    # Nullable integers: nanosecond times and byte counts lose precision as float64.
    data = np.zeros(n, dtype=np.int64)
    mask = np.ones(n, dtype=bool)
    data[rows] = values
    mask[rows] = False
    return IntColumn(data, mask)


def _object_column(n: int, rows: np.ndarray, values: list | np.ndarray) -> np.ndarray:
    out = np.full(n, None, dtype=object)
    if len(rows):
        out[rows] = values
    return out


def parse_bytes(data: bytes, path: Path | None = None, *, vectorised: bool = True) -> EventLog:
    """Parse event.log content (see module docstring). ``vectorised=False`` forces the regex path
    everywhere (slower, same result; used to cross-check the fast path)."""
    return _parse(padded_buffer(data), len(data), path, vectorised)


def _parse(buf: bytearray, size: int, path: Path | None, vectorised: bool = True) -> EventLog:
    """Parse the ``size`` log bytes held in ``buf`` after FRONT (followed by TAIL spare bytes)."""
    end = len(FRONT) + size
    truncated = None
    if size and buf[end - 1] != 10:
        cut = buf.rfind(b"\n", len(FRONT) - 1, end) + 1
        truncated, end = decode(bytes(buf[cut:end])), cut
    log = LogLines(buf, end)
    text = log.text
    fast = vectorised

    r = in_blocks(log, param_lines(log), fast_params) if fast else None
    p_pos, p_ns, p_params = r if r is not None else slow_params(text)
    r = in_blocks(log, log.with_prefix(P_GRID), fast_grid) if fast else None
    gd_pos, gd_vals, pr_pos, pr_level, pr_vals = r if r is not None else slow_grid(text)

    # A grid/block line opens a launch unless the line of those two kinds just before it is a param line.
    allpos = np.r_[p_pos, gd_pos]
    kinds = np.r_[np.zeros(p_pos.size, np.int8), np.ones(gd_pos.size, np.int8)]
    order = np.argsort(allpos, kind="stable")
    kinds_sorted, pos_sorted = kinds[order], allpos[order]
    prev_is_param = np.r_[False, kinds_sorted[:-1] == 0]
    starts = pos_sorted[(kinds_sorted == 0) | ~prev_is_param]
    n = starts.size

    cols: dict[str, object] = {"launch": np.arange(n, dtype=np.int64)}
    rows, which = _first_per_launch(starts, p_pos)
    cols["time_ns"] = _int_column(n, rows, p_ns[which])
    if rows.size == n and np.array_equal(which, np.arange(n)):
        params: list[tuple[int, ...]] = p_params  # the usual log: one param line per launch
    else:
        params = [()] * n
        for row, i in zip(rows.tolist(), which.tolist(), strict=True):
            params[row] = p_params[i]
    # An object array, not a list: pandas would otherwise inspect every tuple.
    cols["params"] = np.fromiter(params, dtype=object, count=n)

    rows, which = _first_per_launch(starts, gd_pos)
    for k, name in enumerate(("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared")):
        cols[name] = _int_column(n, rows, gd_vals[which, k])
    rows, which = _first_per_launch(starts, pr_pos)
    cols["probe_level"] = _object_column(n, rows, pr_level[which])
    for k, name in enumerate(("probe_units", "probe_bytes", "total_bytes")):
        cols[name] = _int_column(n, rows, pr_vals[which, k])

    r = in_blocks(log, log.with_prefix(P_PROBE_MEM), fast_probe_mem) if fast else None
    pm_pos, pm_vals = r if r is not None else slow_probe_mem(text)
    rows, which = _first_per_launch(starts, pm_pos)
    cols["probe_mem"] = _int_column(n, rows, pm_vals[which])

    r = in_blocks(log, log.with_prefix(P_SAVE), fast_save) if fast else None
    s_pos, s_paths, s_size = r if r is not None else slow_save(text)
    rows, which = _first_per_launch(starts, s_pos)
    same = rows.size == n and which.size == len(s_paths) and np.array_equal(which, np.arange(n))
    cols["save_path"] = _object_column(n, rows, s_paths if same else [s_paths[i] for i in which.tolist()])
    cols["save_size"] = _int_column(n, rows, s_size[which])

    r = in_blocks(log, log.with_prefix(P_TIMING), fast_timing) if fast else None
    t_pos, t_vals = r if r is not None else slow_timing(text)
    r = in_blocks(log, log.with_prefix(P_BENCH), fast_bench) if fast else None
    b_pos, b_vals, has, rc_vals = r if r is not None else slow_bench(text)
    rows, which = _first_per_launch(starts, t_pos)
    brows, bwhich = _first_per_launch(starts, b_pos)
    # Normal mode gives prologue/kernel/epilogue on the [exec] line; benchmark mode on its own line.
    # When both exist the [exec] timing is kept and the benchmark line adds original/impact/rc.
    for k, name in enumerate(("prologue_ms", "kernel_ms", "epilogue_ms")):
        col = _column(n, brows, b_vals[bwhich, k])
        col[rows] = t_vals[which, k]
        cols[name] = col
    cols["ratio"] = _column(n, rows, t_vals[which, 3])
    cols["original_ms"] = _column(n, brows, b_vals[bwhich, 3])
    cols["impact"] = _column(n, brows, b_vals[bwhich, 4])
    rc_full = np.zeros(b_pos.size, np.int64)
    rc_full[has] = rc_vals
    keep = has[bwhich]
    cols["rc"] = _int_column(n, brows[keep], rc_full[bwhich][keep])

    failed = np.zeros(n, dtype=bool)
    frows, _ = _first_per_launch(starts, log.nl[log.with_prefix(P_FAILED)])
    failed[frows] = True
    cols["failed"] = failed

    launches = {c: cols[c] for c in LAUNCH_COLUMNS}

    # The rare kinds: their regexes run over just the lines with their tag.
    def lines_of(prefix: bytes) -> bytes | memoryview:
        return log.subset(prefix) if fast else text

    m_tab = np.asarray(RE_MEM.findall(lines_of(P_MEM)), dtype=np.bytes_).reshape(-1, 4)
    has_size = m_tab[:, 3] != b""
    mem = {
        "op": np.fromiter((decode(b) for b in m_tab[:, 0]), dtype=object, count=len(m_tab)),
        "rc": m_tab[:, 1].astype(np.int64),
        "dptr": np.array([int(x, 16) for x in m_tab[:, 2]], dtype=np.uint64),
        "bytesize": _int_column(len(m_tab), np.flatnonzero(has_size), ints(m_tab[has_size, 3])),
    }

    init = log.subset(P_INIT) if fast else text
    pid = RE_PID.search(lines_of(P_PID)) or RE_PID.search(init)
    cmd = RE_CMD.search(lines_of(P_CMD)) or RE_CMD.search(init)
    l2 = RE_L2.search(lines_of(P_L2))
    hook_lines = log.subset(P_ANALYZE) + log.subset(P_CALLBACK) if fast else text
    analyze = [decode(a).rstrip() for a in RE_ANALYZE.findall(hook_lines)]
    return EventLog(
        path=path,
        pid=int(pid.group(1)) if pid else None,
        cmd=decode(cmd.group(1)).rstrip() if cmd else None,
        l2_flush_bytes=int(l2.group(1)) if l2 else None,
        launch_columns=launches,
        mem_columns=mem,
        analyze=analyze,
        truncated_tail=truncated,
    )


def parse_text(text: str, path: Path | None = None) -> EventLog:
    """Parse event.log text already in memory."""
    return parse_bytes(text.encode("utf-8", errors="surrogateescape"), path)


def parse_event_log(path: str | os.PathLike[str]) -> EventLog:
    """Parse an ``event.log`` file. Missing file → :class:`InputError`; garbage lines are skipped."""
    # Read whole into memory: bounded, so a huge sparse file in its place is refused, not read.
    p = check_input(path, "event.log", MAX_EVENT_LOG_BYTES)
    try:
        with open(p, "rb") as fh:
            # Read straight into the parse buffer: no second copy of a log that can be 100s of MB.
            size = os.fstat(fh.fileno()).st_size
            buf = bytearray(len(FRONT) + size + TAIL)
            buf[: len(FRONT)] = FRONT
            view = memoryview(buf)[len(FRONT) : len(FRONT) + size]
            got = 0
            while got < size:
                k = fh.readinto(view[got:])
                if not k:
                    break
                got += k
            view.release()
    except FileNotFoundError:
        raise InputError(p, "no such event.log file") from None
    except IsADirectoryError:
        raise InputError(p, "is a directory, expected an event.log file") from None
    try:
        return _parse(buf, got, p)
    except TooBig as e:
        raise InputError(p, f"malformed event.log: {e}") from None
