"""``event.log``: the hooked driver's text log. Parser (:func:`parse_event_log`) and writer.

Lines the analyses read (anything else, e.g. ``[info]``, ``[mod]``, ``[jit]``, is skipped)::

    [pid] 1860576
    [cmd] 26 python block_sched/raw.py          number = bytes of /proc/<pid>/cmdline (NUL-terminated args)
    [benchmark] ENABLED L2 Flush Size <bytes>
    [mem] cuMemAlloc_v2 0 dptr 7fdf78000000 bytesize 33554432      op, return code, pointer (hex), bytes
    [exec] <launch-ns> param 7fdf78000000 7fdf7a000000 ...          starts a launch
    [exec] grid 32768 1 1 block 128 1 1 shared 0
    [exec] grid <gridSize> warp <warps> probe <bytes> total <bytes>  ("block <blockSize>" for thread level)
    [exec] probe-mem <bytes> (bytes)
    [exec] save <path>.bin size <bytes>
    [exec] prologue <ms> kernel <ms> epilogue <ms> ratio <r>
    [benchmark] prologue <ms> kernel <ms> epilogue <ms> original <ms> impact <r> <rc>
    [exec] failed ...                                               the probed launch failed
    [analyze] subproc <python> <hook.py> <trace.bin>

Grouping rule: a launch starts at a ``param`` line, or at a ``grid .. block .. shared`` line when the
current launch already has one (or none is open). Every other launch line belongs to the latest
launch before it; lines before the first launch are ignored. If a launch holds the same kind of
line twice, the first one wins.

Robustness: bytes are decoded as UTF-8 with replacement; lines with unknown tags or malformed
numbers are skipped; a final line without its newline is treated as truncated and dropped (its text
is kept in :attr:`EventLog.truncated_tail`, so the loss is visible).

Writer conventions (our choice where the log does not say): ``probe`` in the grid/warp line is the
bytes saved per unit summed over saving probes and ``total = gridSize * units * probe``;
``ratio = (prologue + kernel + epilogue) / kernel``; ``impact = kernel / original``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from neutrino_ae.atomic import write_text
from neutrino_ae.errors import InputError

LAUNCH_COLUMNS = [
    "launch", "time_ns", "params", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared",
    "probe_level", "probe_units", "probe_bytes", "total_bytes", "probe_mem", "save_path", "save_size",
    "prologue_ms", "kernel_ms", "epilogue_ms", "ratio", "original_ms", "impact", "rc", "failed",
]
MEM_COLUMNS = ["op", "rc", "dptr", "bytesize"]


def _fmt_ms(x: float) -> str:
    return f"{float(x):.6f}"


class EventLogWriter:
    """Build an ``event.log`` line by line, in the format the parser reads."""

    def __init__(self) -> None:
        self._lines: list[str] = []

    def line(self, raw: str) -> EventLogWriter:
        if "\n" in raw:
            raise ValueError("EventLogWriter.line takes one line without newline")
        self._lines.append(raw)
        return self

    def pid(self, n: int) -> EventLogWriter:
        return self.line(f"[pid] {int(n)}")

    def cmd(self, argv: Sequence[str]) -> EventLogWriter:
        # Neutrino prints the byte length of /proc/self/cmdline (each arg NUL-terminated).
        n = sum(len(a.encode()) + 1 for a in argv)
        return self.line(f"[cmd] {n} {' '.join(argv)}")

    def l2_flush(self, nbytes: int) -> EventLogWriter:
        return self.line(f"[benchmark] ENABLED L2 Flush Size {int(nbytes)}")

    def mem_alloc(self, dptr: int, bytesize: int, rc: int = 0) -> EventLogWriter:
        return self.line(f"[mem] cuMemAlloc_v2 {int(rc)} dptr {int(dptr):x} bytesize {int(bytesize)}")

    def launch(
        self,
        time_ns: int,
        params: Sequence[int],
        grid: Sequence[int],
        block: Sequence[int],
        shared: int = 0,
        probe_bytes: int | None = None,
        probe_mem: int | None = None,
        save: tuple[str, int] | None = None,
        timing: tuple[float, float, float] | None = None,
        benchmark: tuple[float, float, float, float] | None = None,
        failed: bool = False,
        probe_level: str = "warp",
    ) -> EventLogWriter:
        """Lines of one probed launch. ``probe_bytes`` = bytes per unit (``probe_level`` unit)."""
        gx, gy, gz = (int(v) for v in grid)
        bx, by, bz = (int(v) for v in block)
        self.line(f"[exec] {int(time_ns)} param" + "".join(f" {int(p):x}" for p in params))
        self.line(f"[exec] grid {gx} {gy} {gz} block {bx} {by} {bz} shared {int(shared)}")
        if probe_bytes is not None:
            grid_size, block_size = gx * gy * gz, bx * by * bz
            if probe_level == "warp":
                units, word = math.ceil(block_size / 32), "warp"
            elif probe_level == "thread":
                units, word = block_size, "block"
            else:
                raise ValueError(f"probe_level must be 'warp' or 'thread', got {probe_level!r}")
            total = grid_size * units * int(probe_bytes)
            self.line(f"[exec] grid {grid_size} {word} {units} probe {int(probe_bytes)} total {total}")
        if probe_mem is not None:
            self.line(f"[exec] probe-mem {int(probe_mem)} (bytes)")
        if failed:
            self.line("[exec] failed to launch probed kernel")
            return self
        if save is not None:
            self.line(f"[exec] save {save[0]} size {int(save[1])}")
        if timing is not None:
            pro, ker, epi = (float(v) for v in timing)
            ratio = (pro + ker + epi) / ker if ker else float("nan")
            self.line(f"[exec] prologue {_fmt_ms(pro)} kernel {_fmt_ms(ker)} epilogue {_fmt_ms(epi)} "
                      f"ratio {ratio:.6f}")
        if benchmark is not None:
            pro, ker, epi, orig = (float(v) for v in benchmark)
            impact = ker / orig if orig else float("nan")
            self.line(f"[benchmark] prologue {_fmt_ms(pro)} kernel {_fmt_ms(ker)} epilogue {_fmt_ms(epi)} "
                      f"original {_fmt_ms(orig)} impact {impact:.6f} 0")
        return self

    def text(self) -> str:
        return "".join(line + "\n" for line in self._lines)

    def write(self, path: str | os.PathLike[str]) -> Path:
        return write_text(path, self.text())


# --------------------------------------------------------------------------------------------------
# Parsing, vectorised. The log is handled as bytes (ASCII tags and numbers; undecodable bytes only
# matter inside free text, which is decoded with replacement). Each launch-line kind has a unique
# prefix. numpy finds the byte offset of every line carrying that prefix (the "candidates"), and
# one ``findall`` (C speed, no match objects) extracts the fields of the lines that fully match.
# Every match starts at a candidate, so equal counts mean they are the same lines in the same order;
# only when some candidate is malformed do we pay for ``finditer`` to learn which ones matched.

_INT = rb"(\d{1,19})"  # 20+ digits cannot be a 64-bit value: such lines are skipped as malformed
_NUM = rb"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf))"
_EOL = rb"[ \t\r]*(?=\n)"

_P_PARAM = b"[exec] "  # followed by a digit
_P_GRID = b"[exec] grid "
_P_PROBE_MEM = b"[exec] probe-mem "
_P_SAVE = b"[exec] save "
_P_TIMING = b"[exec] prologue "
_P_FAILED = b"[exec] failed"
_P_BENCH = b"[benchmark] prologue "

_RE_PARAM = re.compile(rb"\n\[exec\] " + _INT + rb" param((?: +[0-9a-fA-F]{1,16})*)" + _EOL)
_RE_GRID = re.compile(
    rb"\n\[exec\] grid (?:" + rb" ".join([_INT] * 3) + rb" block " + rb" ".join([_INT] * 3) + rb" shared " + _INT
    + rb"|" + _INT + rb" +(warp|block) +" + _INT + rb" +probe +" + _INT + rb" +total +" + _INT + rb")" + _EOL
)
_RE_PROBE_MEM = re.compile(rb"\n\[exec\] probe-mem " + _INT + rb"(?: \(bytes\))?" + _EOL)
_RE_SAVE = re.compile(rb"\n\[exec\] save (\S(?:[^\n]*\S)?) size " + _INT + _EOL)
_RE_TIMING = re.compile(rb"\n\[exec\] prologue " + _NUM + rb" kernel " + _NUM + rb" epilogue " + _NUM
                        + rb" ratio " + _NUM + _EOL)
_RE_BENCH = re.compile(rb"\n\[benchmark\] prologue " + _NUM + rb" kernel " + _NUM + rb" epilogue " + _NUM
                       + rb" original " + _NUM + rb" impact " + _NUM + rb"(?: (-?\d{1,9}))?" + _EOL)
_RE_MEM = re.compile(rb"\n\[mem\] (\S+) (-?\d{1,9}) dptr (?:0x)?([0-9a-fA-F]{1,16})(?: bytesize " + _INT
                     + rb")?" + _EOL)
_RE_PID = re.compile(rb"\n\[pid\] " + _INT + _EOL)
_RE_CMD = re.compile(rb"\n\[cmd\] \d+ ?([^\n]*)(?=\n)")
_RE_L2 = re.compile(rb"\n\[benchmark\] ENABLED L2 Flush Size " + _INT + _EOL)
_RE_ANALYZE = re.compile(rb"\n\[analyze\] ([^\n]*)(?=\n)")


@dataclass
class EventLog:
    path: Path | None
    pid: int | None
    cmd: str | None
    l2_flush_bytes: int | None
    launches: pd.DataFrame
    mem: pd.DataFrame
    analyze: list[str] = field(default_factory=list)
    truncated_tail: str | None = None  # unterminated last line that was dropped

    def __len__(self) -> int:
        return len(self.launches)


class _TooBig(ValueError):
    pass


def _ints(values: list | np.ndarray) -> np.ndarray:
    """Decimal byte strings → int64 in one numpy cast."""
    if not len(values):
        return np.zeros(0, np.int64)
    wide = np.asarray(values, dtype=np.bytes_).astype(np.uint64)
    if int(wide.max()) > np.iinfo(np.int64).max:
        raise _TooBig(f"integer {int(wide.max())} does not fit in int64")
    return wide.astype(np.int64)


def _floats(values: list | np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.bytes_).astype(np.float64) if len(values) else np.zeros(0)


def _decode(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


_HEX_LUT = np.full(256, 255, dtype=np.uint8)
_HEX_LUT[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10)
_HEX_LUT[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16)
_HEX_LUT[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16)
_INT64_MAX = np.iinfo(np.int64).max
_SEP_LUT = np.zeros(256, dtype=bool)
_SEP_LUT[[10, 32]] = True
_PAD = 64


class _Lines:
    """Line and token offsets of the whole buffer, for vectorised field extraction.

    Separators are spaces and newlines; token ``t`` is the bytes between separator ``t`` and ``t+1``
    (empty when two separators touch, which the fast path treats as "unexpected shape"). A line is
    named by the index ``L`` of the newline before it (the buffer starts with one); its tokens are
    ``first[L] .. first[L+1]-1``.
    """

    def __init__(self, buf: bytes) -> None:
        # ``buf`` ends with _PAD zero bytes so fixed-width reads never run off the end. Big temporaries
        # are kept few: first-touch page faults dominate on some sandboxes.
        self.padded = np.frombuffer(buf, dtype=np.uint8)
        self.size = self.padded.size - _PAD
        arr = self.padded[: self.size]
        self._win = {w: np.lib.stride_tricks.sliding_window_view(self.padded, w) for w in (16, 19, 32)}
        seps = np.flatnonzero(_SEP_LUT[arr])
        is_nl = arr[seps] == 10
        self.seps = np.r_[seps, self.size]
        self.first = np.r_[np.flatnonzero(is_nl), seps.size]  # token id of each line's first token
        self.nl = seps[is_nl]
        self._cache: dict[bytes, np.ndarray] = {b"": np.arange(self.nl.size)}

    def with_prefix(self, prefix: bytes) -> np.ndarray:
        """Indices of the lines starting with ``prefix``."""
        if prefix in self._cache:
            return self._cache[prefix]
        # Narrow the parent prefix's lines by one byte: most of the work is shared between kinds.
        parent = self.with_prefix(prefix[:-1])
        out = parent[self.padded[self.nl[parent] + len(prefix)] == prefix[-1]]
        self._cache[prefix] = out
        return out

    def param_lines(self) -> np.ndarray:
        cand = self.with_prefix(_P_PARAM)
        d = self.padded[self.nl[cand] + len(_P_PARAM) + 1]
        return cand[(d >= ord("0")) & (d <= ord("9"))]

    def offsets(self, lines: np.ndarray) -> np.ndarray:
        return self.nl[lines]

    def tokens(self, lines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(token id of each line's first token, number of tokens on the line)."""
        first = self.first[lines]
        return first, self.first[lines + 1] - first

    def span(self, tok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.seps[tok] + 1, self.seps[tok + 1]

    def keyword(self, tok: np.ndarray, word: bytes) -> np.ndarray:
        s, e = self.span(tok)
        ok = (e - s) == len(word)
        for j, ch in enumerate(word):
            ok &= self.padded[s + j] == ch
        return ok

    def _window(self, tok: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Token bytes left-aligned in an (n, width) matrix zero-filled past each token's end."""
        s, e = self.span(tok)
        length = e - s
        ok = (length > 0) & (length <= cap)
        width = cap
        inside = np.arange(width)[None, :] < length[:, None]
        m = self._win[width][s]
        m = np.where(inside, m, 0).astype(np.uint8)
        return m, inside, ok, width

    def decimal(self, tok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(int64 values, ok) of decimal tokens; ok is False for non-digits or values beyond int64."""
        m, inside, ok, width = self._window(tok, 19)
        ok &= np.all(((m >= 48) & (m <= 57)) | ~inside, axis=1)
        m[~ok] = 0
        m[~ok, 0] = 48
        wide = np.ascontiguousarray(m).view(f"S{width}").ravel().astype(np.uint64)
        ok &= wide <= _INT64_MAX
        return np.where(ok, wide, 0).astype(np.int64), ok

    def floats(self, tok: np.ndarray) -> np.ndarray | None:
        """float64 values, or None when any token is not a number (the caller falls back)."""
        m, _, ok, width = self._window(tok, 32)
        if not ok.all():
            return None
        try:
            return np.ascontiguousarray(m).view(f"S{width}").ravel().astype(np.float64)
        except ValueError:
            return None

    def hex(self, tok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(uint64 values, ok) of hexadecimal tokens of 1..16 digits."""
        s, e = self.span(tok)
        length = e - s
        ok = (length > 0) & (length <= 16)
        cols = np.arange(16) - 16
        live = cols[None, :] >= -length[:, None]  # right-aligned: positions before the token are 0
        d = _HEX_LUT[self._win[16][np.maximum(e - 16, 0)]]
        bad = live & (d == 255)
        ok &= ~bad.any(axis=1)
        d[~live | bad] = 0
        # Two nibbles per byte, then the 8 bytes read as one big-endian uint64.
        packed = np.ascontiguousarray((d[:, 0::2] << 4) | d[:, 1::2])
        return packed.view(">u8").ravel().astype(np.uint64), ok


def _scan(pattern: re.Pattern[bytes], buf: bytes) -> tuple[np.ndarray, list]:
    """(byte offsets, group tuples) of the lines that fully match ``pattern`` (slow exact path)."""
    pos, groups = [], []
    for m in pattern.finditer(buf):
        pos.append(m.start())
        groups.append(m.groups(b""))
    return np.asarray(pos, dtype=np.int64), groups


# Each _fast_* returns the kind's fields for every candidate line, or None when some line does not
# have the exact expected shape; the caller then uses the regex for that kind. Keeping the two
# paths equivalent is tested (tests/test_formats_eventlog.py).


def _fast_params(lines: _Lines, cand: np.ndarray):
    first, count = lines.tokens(cand)
    if cand.size and (count.min() < 3 or not lines.keyword(first + 2, b"param").all()):
        return None
    ns, ok = lines.decimal(first + 1)
    if not ok.all():
        return None
    n_ptr = count - 3
    ptr_tok = np.repeat(first + 3, n_ptr) + (np.arange(n_ptr.sum()) - np.repeat(np.cumsum(n_ptr) - n_ptr, n_ptr))
    vals, ok = lines.hex(ptr_tok)
    if not ok.all():
        return None
    values = vals.tolist()
    bounds = np.r_[0, np.cumsum(n_ptr)].tolist()
    params = [tuple(values[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return lines.offsets(cand), ns, params


def _slow_params(buf: bytes):
    pos, groups = _scan(_RE_PARAM, buf)
    ns = _ints([g[0] for g in groups])
    params = [tuple(int(x, 16) for x in g[1].split()) for g in groups]
    return pos, ns, params


def _fast_grid(lines: _Lines, cand: np.ndarray):
    first, count = lines.tokens(cand)
    dims = (count == 11) & lines.keyword(first + 5, b"block") & lines.keyword(first + 9, b"shared")
    is_warp = lines.keyword(first + 3, b"warp")
    probe = ((count == 9) & (is_warp | lines.keyword(first + 3, b"block")) & lines.keyword(first + 5, b"probe")
             & lines.keyword(first + 7, b"total"))
    if not np.all(dims | probe):
        return None
    dtok = first[dims][:, None] + np.array([2, 3, 4, 6, 7, 8, 10])
    dvals, ok1 = lines.decimal(dtok.ravel())
    ptok = first[probe][:, None] + np.array([2, 4, 6, 8])
    pvals, ok2 = lines.decimal(ptok.ravel())
    if not (ok1.all() and ok2.all()):
        return None
    level = np.where(is_warp[probe], "warp", "thread")
    return (lines.offsets(cand[dims]), dvals.reshape(-1, 7), lines.offsets(cand[probe]), level,
            pvals.reshape(-1, 4)[:, 1:])


def _slow_grid(buf: bytes):
    pos, groups = _scan(_RE_GRID, buf)
    tab = np.asarray(groups, dtype=np.bytes_).reshape(-1, 12)
    dims = tab[:, 0] != b""
    level = np.where(tab[~dims, 8] == b"warp", "warp", "thread")
    return pos[dims], _ints(tab[dims, :7]).reshape(-1, 7), pos[~dims], level, _ints(tab[~dims, 9:]).reshape(-1, 3)


def _fast_fixed(lines: _Lines, cand: np.ndarray, counts: tuple[int, ...], keywords: dict[int, bytes],
                fields: list[int], kind: str):
    """Lines of a fixed token shape: returns (offsets, values (n, len(fields)), n_tokens) or None."""
    first, count = lines.tokens(cand)
    if not np.isin(count, counts).all():
        return None
    for j, word in keywords.items():
        if not lines.keyword(first + j, word).all():
            return None
    tok = (first[:, None] + np.asarray(fields)).ravel()
    if kind == "int":
        vals, ok = lines.decimal(tok)
        if not ok.all():
            return None
    else:
        vals = lines.floats(tok)
        if vals is None:
            return None
    return lines.offsets(cand), vals.reshape(-1, len(fields)), count


def _fast_save(lines: _Lines, buf: bytes, cand: np.ndarray):
    first, count = lines.tokens(cand)
    last = first + count - 1
    if cand.size and (count.min() < 5 or not lines.keyword(last - 1, b"size").all()):
        return None
    size, ok = lines.decimal(last)
    if not ok.all():
        return None
    s, e = lines.span(first + 2)[0].tolist(), lines.span(last - 2)[1].tolist()
    paths = [_decode(buf[a:b]) for a, b in zip(s, e, strict=True)]
    return lines.offsets(cand), paths, size


def _slow_save(buf: bytes):
    pos, groups = _scan(_RE_SAVE, buf)
    return pos, [_decode(g[0]) for g in groups], _ints([g[1] for g in groups])


def _first_per_launch(starts: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For lines at ``pos``: (launch index, index into the lines) of the first such line per launch."""
    owner = np.searchsorted(starts, pos, side="right") - 1
    keep = owner >= 0
    owner, idx = owner[keep], np.flatnonzero(keep)
    uniq, first = np.unique(owner, return_index=True)
    return uniq, idx[first]


def _column(n: int, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = np.full(n, np.nan, dtype=np.float64)
    out[rows] = values
    return out


def _int_column(n: int, rows: np.ndarray, values: np.ndarray) -> pd.arrays.IntegerArray:
    # Nullable integers: nanosecond times and byte counts lose precision as float64.
    data = np.zeros(n, dtype=np.int64)
    mask = np.ones(n, dtype=bool)
    data[rows] = values
    mask[rows] = False
    return pd.arrays.IntegerArray(data, mask)


def _object_column(n: int, rows: np.ndarray, values: list | np.ndarray) -> pd.Series:
    out = np.full(n, None, dtype=object)
    if len(rows):
        out[rows] = values
    # Explicit object dtype: string inference would turn the missing entries into NaN.
    return pd.Series(out, dtype=object)


def parse_bytes(data: bytes, path: Path | None = None, *, vectorised: bool = True) -> EventLog:
    """Parse event.log content (see module docstring). ``vectorised=False`` forces the regex path
    everywhere (slower, same result; used to cross-check the fast path)."""
    truncated = None
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        truncated, data = _decode(data[cut:]), data[:cut]
    buf = b"\n" + data + b"\0" * _PAD
    lines = _Lines(buf)
    fast = vectorised

    r = _fast_params(lines, lines.param_lines()) if fast else None
    p_pos, p_ns, p_params = r if r is not None else _slow_params(buf)
    r = _fast_grid(lines, lines.with_prefix(_P_GRID)) if fast else None
    gd_pos, gd_vals, pr_pos, pr_level, pr_vals = r if r is not None else _slow_grid(buf)

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
    params: list[tuple[int, ...]] = [()] * n
    for row, i in zip(rows.tolist(), which.tolist(), strict=True):
        params[row] = p_params[i]
    cols["params"] = params

    rows, which = _first_per_launch(starts, gd_pos)
    for k, name in enumerate(("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared")):
        cols[name] = _int_column(n, rows, gd_vals[which, k])
    rows, which = _first_per_launch(starts, pr_pos)
    cols["probe_level"] = _object_column(n, rows, pr_level[which].tolist())
    for k, name in enumerate(("probe_units", "probe_bytes", "total_bytes")):
        cols[name] = _int_column(n, rows, pr_vals[which, k])

    cand = lines.with_prefix(_P_PROBE_MEM)
    r = _fast_fixed(lines, cand, (3, 4), {}, [2], "int") if fast else None
    if r is not None and np.any(r[2] == 4) and not lines.keyword(lines.tokens(cand[r[2] == 4])[0] + 3,
                                                                   b"(bytes)").all():
        r = None
    if r is not None:
        pm_pos, pm_vals = r[0], r[1][:, 0]
    else:
        pm_pos, pm_groups = _scan(_RE_PROBE_MEM, buf)
        pm_vals = _ints([g[0] for g in pm_groups])
    rows, which = _first_per_launch(starts, pm_pos)
    cols["probe_mem"] = _int_column(n, rows, pm_vals[which])

    r = _fast_save(lines, buf, lines.with_prefix(_P_SAVE)) if fast else None
    s_pos, s_paths, s_size = r if r is not None else _slow_save(buf)
    rows, which = _first_per_launch(starts, s_pos)
    cols["save_path"] = _object_column(n, rows, [s_paths[i] for i in which.tolist()])
    cols["save_size"] = _int_column(n, rows, s_size[which])

    r = (_fast_fixed(lines, lines.with_prefix(_P_TIMING), (9,),
                     {3: b"kernel", 5: b"epilogue", 7: b"ratio"}, [2, 4, 6, 8], "float") if fast else None)
    if r is not None:
        t_pos, t_vals = r[0], r[1]
    else:
        t_pos, t_groups = _scan(_RE_TIMING, buf)
        t_vals = _floats(t_groups).reshape(-1, 4)
    r = (_fast_fixed(lines, lines.with_prefix(_P_BENCH), (11, 12),
                     {3: b"kernel", 5: b"epilogue", 7: b"original", 9: b"impact"}, [2, 4, 6, 8, 10], "float")
         if fast else None)
    if r is not None:
        b_pos, b_vals = r[0], r[1]
        has = r[2] == 12
        rc_tok = lines.tokens(lines.with_prefix(_P_BENCH)[has])[0] + 11
        rc_vals, ok = lines.decimal(rc_tok)
        if not ok.all():  # negative or odd return codes: let the regex read them
            r = None
    if r is None:
        b_pos, b_groups = _scan(_RE_BENCH, buf)
        b_tab = np.asarray(b_groups, dtype=np.bytes_).reshape(-1, 6)
        b_vals = _floats(b_tab[:, :5]).reshape(-1, 5)
        has = b_tab[:, 5] != b""
        rc_vals = b_tab[has, 5].astype(np.int64)
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
    frows, _ = _first_per_launch(starts, lines.offsets(lines.with_prefix(_P_FAILED)))
    failed[frows] = True
    cols["failed"] = failed

    launches = pd.DataFrame({c: cols[c] for c in LAUNCH_COLUMNS})

    m_tab = np.asarray(_RE_MEM.findall(buf), dtype=np.bytes_).reshape(-1, 4)
    has_size = m_tab[:, 3] != b""
    mem = pd.DataFrame({
        "op": pd.Series([_decode(b) for b in m_tab[:, 0]], dtype=object),
        "rc": m_tab[:, 1].astype(np.int64),
        "dptr": np.array([int(x, 16) for x in m_tab[:, 2]], dtype=np.uint64),
        "bytesize": _int_column(len(m_tab), np.flatnonzero(has_size), _ints(m_tab[has_size, 3])),
    })

    pid = _RE_PID.search(buf)
    cmd = _RE_CMD.search(buf)
    l2 = _RE_L2.search(buf)
    return EventLog(
        path=path,
        pid=int(pid.group(1)) if pid else None,
        cmd=_decode(cmd.group(1)).rstrip() if cmd else None,
        l2_flush_bytes=int(l2.group(1)) if l2 else None,
        launches=launches,
        mem=mem,
        analyze=[_decode(a).rstrip() for a in _RE_ANALYZE.findall(buf)],
        truncated_tail=truncated,
    )


def parse_text(text: str, path: Path | None = None) -> EventLog:
    """Parse event.log text already in memory."""
    return parse_bytes(text.encode("utf-8", errors="surrogateescape"), path)


def parse_event_log(path: str | os.PathLike[str]) -> EventLog:
    """Parse an ``event.log`` file. Missing file → :class:`InputError`; garbage lines are skipped."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError(p, "no such event.log file") from None
    except IsADirectoryError:
        raise InputError(p, "is a directory, expected an event.log file") from None
    try:
        return parse_bytes(raw, p)
    except _TooBig as e:
        raise InputError(p, f"malformed event.log: {e}") from None
