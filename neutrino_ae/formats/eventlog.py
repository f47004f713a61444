"""``event.log``: the hooked driver's text log. Parser (:func:`parse_event_log`) and writer.

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

Writer conventions (our choice where the log does not say): ``probe`` in the grid/warp line is the
bytes saved per unit summed over saving probes and ``total = gridSize * units * probe`` (Neutrino prints
one such line per probe); ``ratio = (prologue + kernel + epilogue) / kernel``; ``impact = kernel /
original``; a failed launch prints ``[exec] failed 701`` (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, what a
probed kernel's extra registers can cause) and no save or timing lines.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from neutrino_ae.atomic import write_text
from neutrino_ae.errors import InputError
from neutrino_ae.formats.inputs import check_input

#: An event.log is a few lines per launch; 4 GiB is millions of launches. Beyond, it is not one.
MAX_EVENT_LOG_BYTES = 4 << 30

LAUNCH_COLUMNS = [
    "launch", "time_ns", "params", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared",
    "probe_level", "probe_units", "probe_bytes", "total_bytes", "probe_mem", "save_path", "save_size",
    "prologue_ms", "kernel_ms", "epilogue_ms", "ratio", "original_ms", "impact", "rc", "failed",
]
MEM_COLUMNS = ["op", "rc", "dptr", "bytesize"]


def _fmt_ms(x: float) -> str:
    return f"{float(x):.6f}"


_FAILED_RC = 701  # CUresult printed for a failed launch: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES


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
        # As Neutrino prints it: "%lld param " then "%llx " per argument, so the line ends with a space.
        self.line(f"[exec] {int(time_ns)} param " + "".join(f"{int(p):x} " for p in params))
        self.line(f"[exec] grid {gx} {gy} {gz} block {bx} {by} {bz} shared {int(shared)}")
        if probe_bytes is not None:
            grid_size, block_size = gx * gy * gz, bx * by * bz
            if probe_level == "warp":
                units, word = math.ceil(block_size / 32), "warp "  # Neutrino's "warp  %zu": two spaces
            elif probe_level == "thread":
                units, word = block_size, "block"
            else:
                raise ValueError(f"probe_level must be 'warp' or 'thread', got {probe_level!r}")
            total = grid_size * units * int(probe_bytes)
            self.line(f"[exec] grid {grid_size} {word} {units} probe {int(probe_bytes)} total {total}")
            # The hook driver always follows the probe lines with the launch's probe memory.
            probe_mem = total if probe_mem is None else probe_mem
        if probe_mem is not None:
            self.line(f"[exec] probe-mem {int(probe_mem)} (bytes)")
        if failed:
            self.line(f"[exec] failed {_FAILED_RC}")
            return self
        self.line("[exec] succeed 0")
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
# Parsing. The regexes below specify every line kind; ``vectorised=False`` runs them over the whole
# log and is the reference. The default path reaches the same result without running them:
#  * one newline scan gives every line; a kind's candidate lines are those starting with its tag
#    (compared on each line's first 16 bytes, read once as two uint64 words);
#  * a kind's candidates, in blocks of lines, are copied into one text (one memcpy per line). Deleting
#    the number characters with ``bytes.translate`` leaves each line's "skeleton". When every skeleton
#    is a canonical one (the kind's keywords spaced as Neutrino or our earlier writer print them, nothing
#    else) the lines match the regex, and all their numbers are read by one ``np.fromstring`` over the
#    text with the keywords deleted; decimals printed with six digits are read as integers and divided
#    by 1e6 (exactly rounded);
#  * free-form kinds (pointer lists, save paths) use token positions from the spaces instead (a param
#    line's one final space, which Neutrino prints, set aside);
#  * any line of unexpected shape sends its whole kind to the regex (exact, slower).
# A line's position is the offset of the newline before it, which is where a regex match starts, so
# both paths group lines into launches identically. Rare kinds (mem, pid, cmd, ...) run their regex
# over just their candidate lines.

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
# "[pid] N" / "[cmd] len argv" (artifact branch); "[init] pid N" / "[init] cmd len argv" (main).
_RE_PID = re.compile(rb"\n\[(?:pid\]|init\] pid) " + _INT + _EOL)
_RE_CMD = re.compile(rb"\n\[(?:cmd\]|init\] cmd) \d+ ?([^\n]*)(?=\n)")
_RE_L2 = re.compile(rb"\n\[benchmark\] ENABLED L2 Flush Size " + _INT + _EOL)
# The analyze hook's subprocess: "[analyze] subproc .." (artifact branch), "[callback] subproc .." (main).
_RE_ANALYZE = re.compile(rb"\n\[(?:analyze|callback)\] ([^\n]*)(?=\n)")


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

    @property
    def cut_launch(self) -> int | None:
        """The launch the file was cut in: when the log ends without a newline (a run killed while
        writing), its last launch may lack lines that were never written -- None otherwise."""
        if self.truncated_tail is None or not len(self.launches):
            return None
        return int(self.launches["launch"].iloc[-1])

    def complete_launches(self) -> pd.DataFrame:
        """``launches`` without :attr:`cut_launch`: what an analysis may trust; report the cut one."""
        cut = self.cut_launch
        return self.launches if cut is None else self.launches[self.launches["launch"] != cut]


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


# The log sits in a buffer of its own: _FRONT before it gives right-aligned windows room to look back
# from the first line (it is one line of spaces, which no regex matches); the zero tail lets a window
# or a candidate matrix row read past the last line without running off the end.
_FRONT = b" " * 31 + b"\n"
_MAX_W = 1024  # a candidate line longer than this sends its kind to the regex path
_TAIL = _MAX_W + 64
_CHUNK = 1 << 24  # newline scan in chunks: a whole-log boolean temporary would cost as much as the log

_DIGITS = b"0123456789"
_WS = b" \t\n\r\x0b\x0c"  # what ``\s`` matches in a bytes regex


def _table(keep: bytes) -> bytes:
    """A translate table that keeps ``keep`` and turns every other byte into a space."""
    return bytes(c if c in keep else 32 for c in range(256))


_ONLY_DIGITS = _table(_DIGITS)
_ONLY_DECIMALS = _table(_DIGITS + b".")
_DIGIT_TO_0 = bytes(48 if c in _DIGITS else c for c in range(256))
# Keyword characters, deleted before np.fromstring: it skips runs of separators slowly, and a line
# that passed its skeleton check has them only in keywords, away from the numbers.
_NOT_NUMBER = bytes(c for c in range(256) if c not in _DIGITS + b" \n")
_NOT_DECIMAL = bytes(c for c in range(256) if c not in _DIGITS + b". \n")
_HEX_CHARS = b"0123456789abcdefABCDEF"
_INT64_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True)
class _Shapes:
    """A kind's canonical skeletons, and how a line's skeleton tells which one it can be: by its
    length and, among the shapes of that length, by its byte at ``at[length]`` (the first place where
    they differ; 0 where the length has one shape). The whole skeleton is compared afterwards."""

    skel: tuple[bytes, ...]
    at: np.ndarray  # skeleton length -> offset of the telling byte
    code: np.ndarray  # (skeleton length, telling byte) -> shape index; -1: none


def _shapes(examples: list[bytes], delete: bytes) -> _Shapes:
    skel = tuple(e.translate(None, delete) for e in examples)
    size = max(len(s) for s in skel) + 1
    at = np.zeros(size, np.intp)
    code = np.full((size, 256), -1, np.intp)
    for n in sorted({len(s) for s in skel}):
        group = [i for i, s in enumerate(skel) if len(s) == n]
        p = next((j for j in range(n) if len({skel[i][j] for i in group}) > 1), 0)
        if len({skel[i][p] for i in group}) != len(group):
            raise ValueError(f"skeletons of length {n} are not told apart by one byte")
        at[n] = p
        for i in group:
            code[n, skel[i][p]] = i
    return _Shapes(skel, at, code)


# Canonical skeletons per kind, and the number of values each shape carries alongside. Grid lines:
# the launch's dims, then the probe line at warp level (Neutrino's "warp  %zu", and with one space),
# and at thread level.
_GRID_SHAPES = _shapes([b"[exec] grid 1 1 1 block 1 1 1 shared 1", b"[exec] grid 1 warp  1 probe 1 total 1",
                        b"[exec] grid 1 warp 1 probe 1 total 1", b"[exec] grid 1 block 1 probe 1 total 1"], _DIGITS)
_GRID_COUNTS = (7, 4, 4, 4)
_GRID_LEVELS = np.array([None, "warp", "warp", "thread"], dtype=object)
_PROBE_MEM_SHAPES = _shapes([b"[exec] probe-mem 1 (bytes)", b"[exec] probe-mem 1"], _DIGITS)
_TIMING_SHAPES = _shapes([b"[exec] prologue 1 kernel 1 epilogue 1 ratio 1"], _DIGITS + b".")
_BENCH_SHAPES = _shapes([b"[benchmark] prologue 1 kernel 1 epilogue 1 original 1 impact 1 1",
                         b"[benchmark] prologue 1 kernel 1 epilogue 1 original 1 impact 1"], _DIGITS + b".")


def _void_view(arr: np.ndarray, width: int) -> np.ndarray:
    """Every ``width``-byte run of the uint8 array ``arr`` as one void item (item i starts at byte i)."""
    return np.ndarray((arr.size - width + 1,), dtype=f"V{width}", buffer=arr, strides=(1,))


class _Log:
    """The log's lines (offsets of the newline before each, start, length) over a padded buffer."""

    def __init__(self, buf: bytearray, end: int) -> None:
        self.text = memoryview(buf)[:end]  # what the regexes read
        self.arr = np.frombuffer(buf, dtype=np.uint8)
        first = len(_FRONT) - 1
        parts = [np.flatnonzero(self.arr[a : min(a + _CHUNK, end)] == 10) + a for a in range(first, end, _CHUNK)]
        self.nl = np.concatenate(parts).astype(np.int64)
        self.start = self.nl[:-1] + 1
        self.length = np.diff(self.nl) - 1
        self._views: dict[int, np.ndarray] = {}
        # Each line's first 16 bytes as two words, read in one sequential pass: gathering them later
        # for a kind's scattered lines would wait on memory.
        self._head = self.window(self.start, 16).view("<u8")

    def window(self, pos: np.ndarray, width: int) -> np.ndarray:
        """Copy of the ``width`` bytes from each of ``pos``, as an (n, width) uint8 matrix."""
        # Gathering width-byte void items copies each row with one memcpy, several times faster than
        # indexing a sliding_window_view byte by byte.
        return _void_view(self.arr, width)[pos].view(np.uint8).reshape(-1, width)

    def joined(self, lines: np.ndarray) -> bytes:
        """The ``lines``, each with its newline, concatenated in order."""
        return self.spans(self.start[lines], self.length[lines])

    def spans(self, starts: np.ndarray, length: np.ndarray) -> bytes:
        """The byte spans (``starts``, ``length``), each followed by a newline, concatenated in order."""
        size = length + 1
        ends = np.cumsum(size)
        total = int(ends[-1]) if size.size else 0
        width = int(size.max()) if size.size else 0
        if width <= _MAX_W:
            # Every span copied with the widest span's width, in order: each copy's overhang is
            # overwritten by the next span (numpy assigns fancy indices in order; the tests compare
            # every parse with the regex path). One memcpy per span, read in log order.
            out = np.empty(total + width, np.uint8)
            _void_view(out, width)[ends - size] = _void_view(self.arr, width)[starts]
        else:
            # A very long span: one group per span size instead, each copied exactly.
            out = np.empty(total, np.uint8)
            for w in np.flatnonzero(np.bincount(size)).tolist():
                group = np.flatnonzero(size == w)
                _void_view(out, w)[ends[group] - w] = _void_view(self.arr, w)[starts[group]]
        out = out[:total]
        if size.size:
            out[ends - 1] = 10
        return out.tobytes()

    def with_prefix(self, prefix: bytes) -> np.ndarray:
        """Indices of the lines that start with ``prefix``, judged on its first 16 bytes only: a
        superset, which is all the callers need (their checks or regexes read the whole line). A
        shorter line cannot match: its newline sits where the prefix still has a character."""
        lines = None
        for j in range(0, min(len(prefix), 16), 8):
            part = prefix[j : j + 8]
            mask = np.uint64((1 << 8 * len(part)) - 1)
            want = np.uint64(int.from_bytes(part, "little"))
            word = self._head[:, j // 8] if lines is None else self._head[lines, j // 8]
            hit = (word & mask) == want if len(part) < 8 else word == want
            lines = np.flatnonzero(hit) if lines is None else lines[hit]
        return lines

    def matrix(self, lines: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(lines x width) bytes of ``lines``, each row the line, its newline, then zero bytes,
        and the line lengths; None when a line is too long for this (its kind then takes the regex path)."""
        length = self.length[lines]
        width = int(length.max()) + 1 if lines.size else 1
        if width > _MAX_W:
            return None
        m = self.window(self.start[lines], width)
        np.putmask(m, np.arange(width) > length[:, None], 0)
        return m, length

    def subset(self, prefix: bytes) -> bytes:
        """Text holding just the lines with ``prefix`` (each after a newline); a line-anchored regex
        finds the same matches in it as in the whole log."""
        return b"\n" + self.joined(self.with_prefix(prefix))

    def decimal(self, end: np.ndarray, length: np.ndarray) -> np.ndarray | None:
        """int64 values of the decimal tokens of 1..19 digits ending (exclusive) at byte ``end``;
        None when a token is empty, longer, not all digits or beyond int64."""
        if end.size == 0:
            return np.zeros(0, np.int64)
        if length.min() < 1 or length.max() > 19:
            return None
        # Each token zero-filled to 19 digits and followed by one space: no separator runs to skip.
        win = np.empty((end.size, 20), np.uint8)
        win[:, :19] = self.window(end - 19, 19)
        np.putmask(win[:, :19], np.arange(19) < 19 - length[:, None], 48)
        win[:, 19] = 32
        text = win.tobytes()
        if text.translate(None, _DIGITS + b" ") or not text:
            return None
        vals = _fromstring(text, np.int64, end.size)
        return None if vals is None or vals.max() == _INT64_MAX else vals


def _parse_numbers(text: bytes, length: np.ndarray, shapes: _Shapes, counts: tuple[int, ...],
                   decimals: tuple[int, ...] | None = None) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """Numbers of the lines in ``text`` (``_Log.joined``; ``length``: the line lengths) when every
    line is one of ``shapes`` once its number characters are removed (digits; also "." when
    ``decimals`` gives the decimal tokens per shape); None otherwise.

    Returns (shape index per line, the ``counts[shape]`` numbers of every line in line order, scaled):
    int64 values; with ``decimals`` either float64 values, or (``scaled``) int64 values of which the
    decimal tokens are 10**6 times the number."""
    n = length.size
    if n == 0:
        return np.zeros(0, np.intp), np.zeros(0, np.int64), False
    delete = _DIGITS if decimals is None else _DIGITS + b"."
    skel = text.translate(None, delete)  # each line's skeleton followed by its newline
    # Most logs have every line of a kind in one shape: try that before telling lines apart.
    single = [i for i, s in enumerate(shapes.skel) if len(skel) == (len(s) + 1) * n and skel == (s + b"\n") * n]
    if single:
        # Lines begin with '[', which a skeleton holds only at its start, so equal concatenations
        # mean every line's skeleton is this shape.
        code = np.full(n, single[0], np.intp)
        expected = skel
        skel_len = np.full(n, len(shapes.skel[single[0]]))
    else:
        sk = np.frombuffer(skel, np.uint8)
        ends = np.flatnonzero(sk == 10)
        skel_len = np.diff(np.r_[-1, ends]) - 1
        if skel_len.max() >= shapes.at.size:
            return None
        code = shapes.code[skel_len, sk[ends - skel_len + shapes.at[skel_len]]]
        if code.min() < 0:
            return None
        expected = b"".join(np.array([s + b"\n" for s in shapes.skel], dtype=object)[code].tolist())
    if skel != expected:
        return None
    want = int(np.asarray(counts)[code].sum())
    if decimals is None:
        nums = text.translate(_ONLY_DIGITS, _NOT_NUMBER)
        # The regex reads at most 19 digits; only a line with 20 digits in all can hold such a token.
        if (length - skel_len).max() >= 20 and b"0" * 20 in nums.translate(_DIGIT_TO_0):
            return None
        vals = _fromstring(nums, np.int64, want)
        if vals is None or vals.max() == _INT64_MAX:
            return None  # saturated (19 digits beyond int64): the regex path reports it
        return code, vals, False
    vals = _fixed_point(text, int(np.asarray(decimals)[code].sum()), want)
    if vals is not None:
        return code, vals, True
    vals = _fromstring(text.translate(_ONLY_DECIMALS, _NOT_DECIMAL), np.float64, want)
    return None if vals is None else (code, vals, False)


def _fromstring(nums: bytes, dtype: type, want: int) -> np.ndarray | None:
    """The ``want`` space-separated numbers of ``nums``, or None when there are others."""
    if not nums.strip():
        # np.fromstring reads a blank string as one 0.
        return np.zeros(0, dtype) if want == 0 else None
    with warnings.catch_warnings():
        # A token strtod cannot read to its end ("1.2.3", ".") stops the parse: a short result.
        warnings.simplefilter("error", DeprecationWarning)
        try:
            vals = np.fromstring(nums, dtype=dtype, sep=" ")
        except (ValueError, DeprecationWarning):
            return None
    return vals if vals.size == want else None


def _fixed_point(text: bytes, n_decimal: int, want: int) -> np.ndarray | None:
    """When every decimal token has exactly six decimals ("%f", what Neutrino and the writer print):
    all ``want`` values as int64, the decimal ones times 10**6; else None. ``value / 1e6`` is then the
    correctly rounded double, as strtod gives: both operands are exact doubles (value < 2**53) and IEEE
    division rounds correctly. Reading integers is several times faster than reading floats."""
    # One "." per decimal token, each followed by exactly six digits and a separator (then no
    # token can hold two).
    arr = np.frombuffer(text, np.uint8)
    dots = np.flatnonzero(arr == 46)
    if dots.size != n_decimal:
        return None
    if dots.size:
        if dots[-1] + 7 >= arr.size or not np.isin(arr[dots + 7], (32, 10)).all():
            return None
        for j in range(1, 7):
            d = arr[dots + j]
            if not ((d >= 48) & (d <= 57)).all():
                return None
    vals = _fromstring(text.translate(_ONLY_DIGITS, _NOT_NUMBER), np.int64, want)
    if vals is None or vals.max() >= 1 << 53:
        return None
    return vals


def _split_rows(vals: np.ndarray, code: np.ndarray, counts: tuple[int, ...], which: int) -> np.ndarray:
    """The values of the lines of shape ``which``, one row each."""
    per = np.asarray(counts)[code]
    return vals[np.repeat(code == which, per)].reshape(-1, counts[which])


def _scan(pattern: re.Pattern[bytes], buf: bytes | memoryview) -> tuple[np.ndarray, list]:
    """(byte offsets, group tuples) of the lines that fully match ``pattern`` (slow exact path)."""
    pos, groups = [], []
    for m in pattern.finditer(buf):
        pos.append(m.start())
        groups.append(m.groups(b""))
    return np.asarray(pos, dtype=np.int64), groups


# Each _fast_* returns its kind's fields, or None when some candidate line does not have the exact
# canonical shape; the caller then uses the _slow_* regex version. The two are checked equal in
# tests/test_formats_eventlog.py.


def _hex_values(log: _Log, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """uint64 values of the hex tokens (1..16 digits, already checked) at ``start``: right-aligned in
    16 digits, zero-filled on the left, then one bytes.fromhex for all."""
    digits = np.full((length.size, 16), ord("0"), np.uint8)
    for k in np.flatnonzero(np.bincount(length)).tolist():
        group = np.flatnonzero(length == k)
        digits[group, 16 - k :] = log.window(start[group], k)
    return np.frombuffer(bytes.fromhex(digits.tobytes().decode("ascii")), ">u8").astype(np.uint64)


def _param_lines(log: _Log) -> np.ndarray:
    cand = log.with_prefix(_P_PARAM)
    d = log.arr[log.start[cand] + len(_P_PARAM)]
    return cand[(d >= ord("0")) & (d <= ord("9"))]


def _fast_params(log: _Log, cand: np.ndarray):
    r = log.matrix(cand)
    if r is None:
        return None
    m, length = r
    n = cand.size
    if n == 0:
        return log.nl[cand], np.zeros(0, np.int64), []
    # Tokens from the spaces: "[exec]" SP time SP "param" (SP pointer)* [SP], single spaces only; the
    # optional final space is Neutrino's (it prints "%llx " per pointer), and is set aside first.
    width = m.shape[1]
    text = m.tobytes()
    row = np.arange(n)
    trail = m[row, length - 1] == 32
    length = length - trail
    at = np.flatnonzero(np.frombuffer(text, np.uint8) == 32)
    rows = at // width
    cols = at - rows * width
    if trail.any():
        keep = cols < length[rows]
        rows, cols = rows[keep], cols[keep]
    n_sp = np.bincount(rows, minlength=n)
    if n_sp.min() < 2:
        return None
    first = np.cumsum(n_sp) - n_sp  # index of each line's first space (the one after "[exec]")
    same = np.r_[rows[1:] == rows[:-1], False]
    tok_end = np.where(same, np.r_[cols[1:], 0], length[rows])
    tok_len = tok_end - cols - 1
    if tok_len.min() < 1:
        return None
    kw = first + 1
    if not np.all(tok_len[kw] == 5):
        return None
    for j, ch in enumerate(b"param"):
        if not np.all(m[row, cols[kw] + 1 + j] == ch):
            return None
    is_ptr = np.ones(rows.size, dtype=bool)
    is_ptr[first] = False
    is_ptr[kw] = False
    ptr_len = tok_len[is_ptr]
    if ptr_len.size and ptr_len.max() > 16:
        return None
    # Every byte of a line except "[exec]" (3 hex letters), spaces and "param" (2) must be a hex digit:
    # a line can hold at most that many, so equal totals mean every line does.
    n_hex = len(text) - len(text.translate(None, _HEX_CHARS))
    if n_hex != 5 * n + int(tok_len[first].sum()) + int(ptr_len.sum()):
        return None
    starts = log.start[cand]
    ns = log.decimal(starts + tok_end[first], tok_len[first])
    if ns is None:
        return None
    if ptr_len.size and ptr_len.min() == ptr_len.max() and ptr_len[0] % 2 == 0:
        # One even width (the usual: 12-digit pointers): bytes.fromhex reads each line's pointer list
        # as it is, as it skips the whitespace between byte pairs.
        k = int(ptr_len[0]) // 2
        has = n_sp > 2
        sec = cols[kw[has]] + 7  # after "param "
        raw = bytes.fromhex(log.spans(starts[has] + sec, length[has] - sec).decode("ascii"))
        wide = np.zeros((ptr_len.size, 8), np.uint8)
        wide[:, 8 - k :] = np.frombuffer(raw, np.uint8).reshape(-1, k)
        values = wide.view(">u8").ravel().astype(np.uint64)
    else:
        values = _hex_values(log, starts[rows[is_ptr]] + cols[is_ptr] + 1, ptr_len)
    n_ptr = n_sp - 2
    ptr_first = np.cumsum(n_ptr) - n_ptr
    params: list[tuple[int, ...]] = [()] * n
    # Tuples built by zip in C (k references to one iterator take k items per tuple), one group of
    # lines per pointer count.
    for k in np.flatnonzero(np.bincount(n_ptr)).tolist():
        if k == 0:
            continue
        if k == n_ptr[0] and n_ptr.min() == n_ptr.max():
            params = list(zip(*[iter(values.tolist())] * k, strict=True))
            break
        group = np.flatnonzero(n_ptr == k)
        flat = iter(values[(ptr_first[group][:, None] + np.arange(k)).ravel()].tolist())
        for r, t in zip(group.tolist(), zip(*[flat] * k, strict=True), strict=True):
            params[r] = t
    return log.nl[cand], ns, params


_BLOCK_LINES = 1 << 15


def _in_blocks(log: _Log, lines: np.ndarray, fast: Callable) -> tuple | None:
    """``fast(log, block)`` over blocks of ``lines``, results concatenated; None if any block is.
    Blocks keep every temporary a few MB: cache-sized, and reused by the allocator instead of
    page-faulted in afresh for each kind."""
    parts = []
    for lo in range(0, max(lines.size, 1), _BLOCK_LINES):
        r = fast(log, lines[lo : lo + _BLOCK_LINES])
        if r is None:
            return None
        parts.append(r)
    if len(parts) == 1:
        return parts[0]
    return tuple(list(itertools.chain.from_iterable(col)) if isinstance(col[0], list) else np.concatenate(col)
                 for col in zip(*parts, strict=True))


def _slow_params(buf: bytes | memoryview):
    pos, groups = _scan(_RE_PARAM, buf)
    ns = _ints([g[0] for g in groups])
    params = [tuple(int(x, 16) for x in g[1].split()) for g in groups]
    return pos, ns, params


def _fast_grid(log: _Log, lines: np.ndarray):
    r = _parse_numbers(log.joined(lines), log.length[lines], _GRID_SHAPES, _GRID_COUNTS)
    if r is None:
        return None
    code, vals, _ = r
    pos = log.nl[lines]
    dims = code == 0
    # Every probe shape carries 4 values: the values not of dims lines are the probe rows in line order.
    of_dims = np.repeat(dims, np.asarray(_GRID_COUNTS)[code])
    return (pos[dims], vals[of_dims].reshape(-1, 7), pos[~dims], _GRID_LEVELS[code[~dims]],
            vals[~of_dims].reshape(-1, 4)[:, 1:])


def _slow_grid(buf: bytes | memoryview):
    pos, groups = _scan(_RE_GRID, buf)
    tab = np.asarray(groups, dtype=np.bytes_).reshape(-1, 12)
    dims = tab[:, 0] != b""
    level = np.where(tab[~dims, 8] == b"warp", "warp", "thread")
    return pos[dims], _ints(tab[dims, :7]).reshape(-1, 7), pos[~dims], level, _ints(tab[~dims, 9:]).reshape(-1, 3)


def _fast_probe_mem(log: _Log, lines: np.ndarray):
    r = _parse_numbers(log.joined(lines), log.length[lines], _PROBE_MEM_SHAPES, (1, 1))
    return None if r is None else (log.nl[lines], r[1])


def _slow_probe_mem(buf: bytes | memoryview):
    pos, groups = _scan(_RE_PROBE_MEM, buf)
    return pos, _ints([g[0] for g in groups])


def _fast_save(log: _Log, lines: np.ndarray):
    n = lines.size
    if n == 0:
        return log.nl[lines], [], np.zeros(0, np.int64)
    starts = log.start[lines]
    end = starts + log.length[lines]
    # "save " path " size " digits, the path free text: the size is the token after the last space,
    # found in the line's last 21 bytes (a space before the line's start fails the path checks).
    is_sp = log.window(end - 21, 21) == 32
    if not is_sp.any(axis=1).all():
        return None
    last = end - 1 - np.argmax(is_sp[:, ::-1], axis=1)
    path_end = last - 5
    if np.any(path_end <= starts + len(_P_SAVE)):
        return None
    if not np.all(log.window(path_end, 5) == np.frombuffer(b" size", np.uint8)):
        return None
    ws = np.zeros(256, dtype=bool)
    ws[np.frombuffer(_WS, np.uint8)] = True
    if ws[log.arr[starts + len(_P_SAVE)]].any() or ws[log.arr[path_end - 1]].any():
        return None  # the regex wants the path to start and end with a non-space
    size = log.decimal(end, end - last - 1)
    if size is None:
        return None
    # All paths in one decode: each ends with a newline (which no path holds) and decoding stops
    # any invalid sequence at an ASCII byte, so this equals decoding each path alone.
    paths = _decode(log.spans(starts + len(_P_SAVE), path_end - starts - len(_P_SAVE))).split("\n")[:-1]
    return log.nl[lines], paths, size


def _slow_save(buf: bytes | memoryview):
    pos, groups = _scan(_RE_SAVE, buf)
    return pos, [_decode(g[0]) for g in groups], _ints([g[1] for g in groups])


def _fast_timing(log: _Log, lines: np.ndarray):
    r = _parse_numbers(log.joined(lines), log.length[lines], _TIMING_SHAPES, (4,), (4,))
    if r is None:
        return None
    vals = r[1].reshape(-1, 4)
    return log.nl[lines], vals / 1e6 if r[2] else vals


def _slow_timing(buf: bytes | memoryview):
    pos, groups = _scan(_RE_TIMING, buf)
    return pos, _floats(groups).reshape(-1, 4)


def _fast_bench(log: _Log, lines: np.ndarray):
    r = _parse_numbers(log.joined(lines), log.length[lines], _BENCH_SHAPES, (6, 5), (5, 5))
    if r is None:
        return None
    code, vals, scaled = r
    has = code == 0
    # The rc must be an integer of at most 9 digits: the token after the line's last space.
    end = log.start[lines[has]] + log.length[lines[has]]
    win = log.window(end - 10, 10)
    is_sp = win == 32
    if not is_sp.any(axis=1).all():
        return None
    last = 9 - np.argmax(is_sp[:, ::-1], axis=1)
    if np.any((win == ord(".")) & (np.arange(10) > last[:, None])):
        return None
    with_rc = _split_rows(vals, code, (6, 5), 0)
    floats = np.empty((lines.size, 5))
    floats[has] = with_rc[:, :5]
    floats[~has] = _split_rows(vals, code, (6, 5), 1)
    return log.nl[lines], floats / 1e6 if scaled else floats, has, with_rc[:, 5].astype(np.int64)


def _slow_bench(buf: bytes | memoryview):
    pos, groups = _scan(_RE_BENCH, buf)
    tab = np.asarray(groups, dtype=np.bytes_).reshape(-1, 6)
    has = tab[:, 5] != b""
    return pos, _floats(tab[:, :5]).reshape(-1, 5), has, tab[has, 5].astype(np.int64)


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


def _buffer(data: bytes | bytearray | memoryview) -> bytearray:
    buf = bytearray(len(_FRONT) + len(data) + _TAIL)
    buf[: len(_FRONT)] = _FRONT
    buf[len(_FRONT) : len(_FRONT) + len(data)] = data
    return buf


def parse_bytes(data: bytes, path: Path | None = None, *, vectorised: bool = True) -> EventLog:
    """Parse event.log content (see module docstring). ``vectorised=False`` forces the regex path
    everywhere (slower, same result; used to cross-check the fast path)."""
    return _parse(_buffer(data), len(data), path, vectorised)


def _parse(buf: bytearray, size: int, path: Path | None, vectorised: bool = True) -> EventLog:
    """Parse the ``size`` log bytes held in ``buf`` after _FRONT (followed by _TAIL spare bytes)."""
    end = len(_FRONT) + size
    truncated = None
    if size and buf[end - 1] != 10:
        cut = buf.rfind(b"\n", len(_FRONT) - 1, end) + 1
        truncated, end = _decode(bytes(buf[cut:end])), cut
    log = _Log(buf, end)
    text = log.text
    fast = vectorised

    r = _in_blocks(log, _param_lines(log), _fast_params) if fast else None
    p_pos, p_ns, p_params = r if r is not None else _slow_params(text)
    r = _in_blocks(log, log.with_prefix(_P_GRID), _fast_grid) if fast else None
    gd_pos, gd_vals, pr_pos, pr_level, pr_vals = r if r is not None else _slow_grid(text)

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

    r = _in_blocks(log, log.with_prefix(_P_PROBE_MEM), _fast_probe_mem) if fast else None
    pm_pos, pm_vals = r if r is not None else _slow_probe_mem(text)
    rows, which = _first_per_launch(starts, pm_pos)
    cols["probe_mem"] = _int_column(n, rows, pm_vals[which])

    r = _in_blocks(log, log.with_prefix(_P_SAVE), _fast_save) if fast else None
    s_pos, s_paths, s_size = r if r is not None else _slow_save(text)
    rows, which = _first_per_launch(starts, s_pos)
    same = rows.size == n and which.size == len(s_paths) and np.array_equal(which, np.arange(n))
    cols["save_path"] = _object_column(n, rows, s_paths if same else [s_paths[i] for i in which.tolist()])
    cols["save_size"] = _int_column(n, rows, s_size[which])

    r = _in_blocks(log, log.with_prefix(_P_TIMING), _fast_timing) if fast else None
    t_pos, t_vals = r if r is not None else _slow_timing(text)
    r = _in_blocks(log, log.with_prefix(_P_BENCH), _fast_bench) if fast else None
    b_pos, b_vals, has, rc_vals = r if r is not None else _slow_bench(text)
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
    frows, _ = _first_per_launch(starts, log.nl[log.with_prefix(_P_FAILED)])
    failed[frows] = True
    cols["failed"] = failed

    launches = pd.DataFrame({c: cols[c] for c in LAUNCH_COLUMNS})

    # The rare kinds: their regexes run over just the lines with their tag.
    def lines_of(prefix: bytes) -> bytes | memoryview:
        return log.subset(prefix) if fast else text

    m_tab = np.asarray(_RE_MEM.findall(lines_of(b"[mem] ")), dtype=np.bytes_).reshape(-1, 4)
    has_size = m_tab[:, 3] != b""
    mem = pd.DataFrame({
        "op": pd.Series([_decode(b) for b in m_tab[:, 0]], dtype=object),
        "rc": m_tab[:, 1].astype(np.int64),
        "dptr": np.array([int(x, 16) for x in m_tab[:, 2]], dtype=np.uint64),
        "bytesize": _int_column(len(m_tab), np.flatnonzero(has_size), _ints(m_tab[has_size, 3])),
    })

    init = log.subset(b"[init] ") if fast else text
    pid = _RE_PID.search(lines_of(b"[pid] ")) or _RE_PID.search(init)
    cmd = _RE_CMD.search(lines_of(b"[cmd] ")) or _RE_CMD.search(init)
    l2 = _RE_L2.search(lines_of(b"[benchmark] ENABLED L2 Flush Size "))
    hook_lines = log.subset(b"[analyze] ") + log.subset(b"[callback] ") if fast else text
    analyze = [_decode(a).rstrip() for a in _RE_ANALYZE.findall(hook_lines)]
    return EventLog(
        path=path,
        pid=int(pid.group(1)) if pid else None,
        cmd=_decode(cmd.group(1)).rstrip() if cmd else None,
        l2_flush_bytes=int(l2.group(1)) if l2 else None,
        launches=launches,
        mem=mem,
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
            buf = bytearray(len(_FRONT) + size + _TAIL)
            buf[: len(_FRONT)] = _FRONT
            view = memoryview(buf)[len(_FRONT) : len(_FRONT) + size]
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
    except _TooBig as e:
        raise InputError(p, f"malformed event.log: {e}") from None
