"""The vectorised line machinery under the ``event.log`` reader (:mod:`.eventlog`): the log's lines
indexed over one padded buffer (:class:`LogLines`), a kind's candidate lines picked by their tag,
and the numbers of lines of a known canonical shape read in one numpy pass (:func:`parse_numbers`);
:func:`scan_regex` is the exact line-by-line path the fast one falls back to. Which lines there are
is :mod:`.tags`; what each kind's fields are, :mod:`.kinds`.
"""

from __future__ import annotations

import itertools
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


class TooBig(ValueError):
    """A number beyond int64: the reader refuses the log, naming the file."""


def ints(values: list | np.ndarray) -> np.ndarray:
    """Decimal byte strings → int64 in one numpy cast."""
    if not len(values):
        return np.zeros(0, np.int64)
    wide = np.asarray(values, dtype=np.bytes_).astype(np.uint64)
    if int(wide.max()) > np.iinfo(np.int64).max:
        raise TooBig(f"integer {int(wide.max())} does not fit in int64")
    return wide.astype(np.int64)


def floats(values: list | np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.bytes_).astype(np.float64) if len(values) else np.zeros(0)


def decode(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


# The log sits in a buffer of its own: FRONT before it gives right-aligned windows room to look back
# from the first line (it is one line of spaces, which no regex matches); the zero tail lets a window
# or a candidate matrix row read past the last line without running off the end.
FRONT = b" " * 31 + b"\n"
_MAX_W = 1024  # a candidate line longer than this sends its kind to the regex path
TAIL = _MAX_W + 64
_CHUNK = 1 << 24  # newline scan in chunks: a whole-log boolean temporary would cost as much as the log


def padded_buffer(data: bytes | bytearray | memoryview) -> bytearray:
    """``data`` between FRONT and TAIL spare bytes: the buffer :class:`LogLines` reads."""
    buf = bytearray(len(FRONT) + len(data) + TAIL)
    buf[: len(FRONT)] = FRONT
    buf[len(FRONT) : len(FRONT) + len(data)] = data
    return buf


DIGITS = b"0123456789"
WS = b" \t\n\r\x0b\x0c"  # what ``\s`` matches in a bytes regex


def _table(keep: bytes) -> bytes:
    """A translate table that keeps ``keep`` and turns every other byte into a space."""
    return bytes(c if c in keep else 32 for c in range(256))


_ONLY_DIGITS = _table(DIGITS)
_ONLY_DECIMALS = _table(DIGITS + b".")
_DIGIT_TO_0 = bytes(48 if c in DIGITS else c for c in range(256))
# Keyword characters, deleted before np.fromstring: it skips runs of separators slowly, and a line
# that passed its skeleton check has them only in keywords, away from the numbers.
_NOT_NUMBER = bytes(c for c in range(256) if c not in DIGITS + b" \n")
_NOT_DECIMAL = bytes(c for c in range(256) if c not in DIGITS + b". \n")
HEX_CHARS = b"0123456789abcdefABCDEF"
_INT64_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Shapes:
    """A kind's canonical skeletons, and how a line's skeleton tells which one it can be: by its
    length and, among the shapes of that length, by its byte at ``at[length]`` (the first place where
    they differ; 0 where the length has one shape). The whole skeleton is compared afterwards."""

    skel: tuple[bytes, ...]
    at: np.ndarray  # skeleton length -> offset of the telling byte
    code: np.ndarray  # (skeleton length, telling byte) -> shape index; -1: none


def skeleton_shapes(examples: list[bytes], delete: bytes) -> Shapes:
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
    return Shapes(skel, at, code)


def _void_view(arr: np.ndarray, width: int) -> np.ndarray:
    """Every ``width``-byte run of the uint8 array ``arr`` as one void item (item i starts at byte i)."""
    return np.ndarray((arr.size - width + 1,), dtype=f"V{width}", buffer=arr, strides=(1,))


class LogLines:
    """The log's lines (offsets of the newline before each, start, length) over a padded buffer."""

    def __init__(self, buf: bytearray, end: int) -> None:
        self.text = memoryview(buf)[:end]  # what the regexes read
        self.arr = np.frombuffer(buf, dtype=np.uint8)
        first = len(FRONT) - 1
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
        if text.translate(None, DIGITS + b" ") or not text:
            return None
        vals = _fromstring(text, np.int64, end.size)
        return None if vals is None or vals.max() == _INT64_MAX else vals


def parse_numbers(text: bytes, length: np.ndarray, shapes: Shapes, counts: tuple[int, ...],
                   decimals: tuple[int, ...] | None = None) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """Numbers of the lines in ``text`` (``LogLines.joined``; ``length``: the line lengths) when every
    line is one of ``shapes`` once its number characters are removed (digits; also "." when
    ``decimals`` gives the decimal tokens per shape); None otherwise.

    Returns (shape index per line, the ``counts[shape]`` numbers of every line in line order, scaled):
    int64 values; with ``decimals`` either float64 values, or (``scaled``) int64 values of which the
    decimal tokens are 10**6 times the number."""
    n = length.size
    if n == 0:
        return np.zeros(0, np.intp), np.zeros(0, np.int64), False
    delete = DIGITS if decimals is None else DIGITS + b"."
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


def split_rows(vals: np.ndarray, code: np.ndarray, counts: tuple[int, ...], which: int) -> np.ndarray:
    """The values of the lines of shape ``which``, one row each."""
    per = np.asarray(counts)[code]
    return vals[np.repeat(code == which, per)].reshape(-1, counts[which])


def scan_regex(pattern: re.Pattern[bytes], buf: bytes | memoryview) -> tuple[np.ndarray, list]:
    """(byte offsets, group tuples) of the lines that fully match ``pattern`` (slow exact path)."""
    pos, groups = [], []
    for m in pattern.finditer(buf):
        pos.append(m.start())
        groups.append(m.groups(b""))
    return np.asarray(pos, dtype=np.int64), groups


BLOCK_LINES = 1 << 15


def in_blocks(log: LogLines, lines: np.ndarray, fast: Callable) -> tuple | None:
    """``fast(log, block)`` over blocks of ``lines``, results concatenated; None if any block is.
    Blocks keep every temporary a few MB: cache-sized, and reused by the allocator instead of
    page-faulted in afresh for each kind."""
    parts = []
    for lo in range(0, max(lines.size, 1), BLOCK_LINES):
        r = fast(log, lines[lo : lo + BLOCK_LINES])
        if r is None:
            return None
        parts.append(r)
    if len(parts) == 1:
        return parts[0]
    return tuple(list(itertools.chain.from_iterable(col)) if isinstance(col[0], list) else np.concatenate(col)
                 for col in zip(*parts, strict=True))
