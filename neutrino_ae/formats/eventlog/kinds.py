"""Each ``event.log`` line kind's fields, two ways: ``fast_<kind>(log, lines)`` reads a block of the
kind's candidate lines vectorised, or returns None when some line does not have the exact canonical
shape; ``slow_<kind>(text)`` runs the kind's regex (:mod:`.tags`) over the text, the exact
reference. The reader (:mod:`.eventlog`) takes the slow one when the fast one declines; the two are
checked equal in tests/formats/test_formats_eventlog.py.

The regexes specify every line kind; ``vectorised=False`` runs them over the whole log and is the
reference. The default path reaches the same result without running them:

 * one newline scan gives every line; a kind's candidate lines are those starting with its tag
   (compared on each line's first 16 bytes, read once as two uint64 words);
 * a kind's candidates, in blocks of lines, are copied into one text (one memcpy per line). Deleting
   the number characters with ``bytes.translate`` leaves each line's "skeleton". When every skeleton
   is a canonical one (the kind's keywords spaced as Neutrino or our earlier writer print them, nothing
   else) the lines match the regex, and all their numbers are read by one ``np.fromstring`` over the
   text with the keywords deleted; decimals printed with six digits are read as integers and divided
   by 1e6 (exactly rounded);
 * free-form kinds (pointer lists, save paths) use token positions from the spaces instead (a param
   line's one final space, which Neutrino prints, set aside);
 * any line of unexpected shape sends its whole kind to the regex (exact, slower).

A line's position is the offset of the newline before it, which is where a regex match starts, so
both paths group lines into launches identically. Rare kinds (mem, pid, cmd, ...) run their regex
over just their candidate lines (in the reader).
"""

from __future__ import annotations

import numpy as np

from neutrino_ae.formats.eventlog.scan import (
    HEX_CHARS,
    WS,
    LogLines,
    decode,
    floats,
    ints,
    parse_numbers,
    scan_regex,
    split_rows,
)
from neutrino_ae.formats.eventlog.tags import (
    BENCH_SHAPES,
    GRID_COUNTS,
    GRID_LEVELS,
    GRID_SHAPES,
    P_PARAM,
    P_SAVE,
    PROBE_MEM_SHAPES,
    RE_BENCH,
    RE_GRID,
    RE_PARAM,
    RE_PROBE_MEM,
    RE_SAVE,
    RE_TIMING,
    TIMING_SHAPES,
)


def _hex_values(log: LogLines, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """uint64 values of the hex tokens (1..16 digits, already checked) at ``start``: right-aligned in
    16 digits, zero-filled on the left, then one bytes.fromhex for all."""
    digits = np.full((length.size, 16), ord("0"), np.uint8)
    for k in np.flatnonzero(np.bincount(length)).tolist():
        group = np.flatnonzero(length == k)
        digits[group, 16 - k :] = log.window(start[group], k)
    return np.frombuffer(bytes.fromhex(digits.tobytes().decode("ascii")), ">u8").astype(np.uint64)


def param_lines(log: LogLines) -> np.ndarray:
    cand = log.with_prefix(P_PARAM)
    d = log.arr[log.start[cand] + len(P_PARAM)]
    return cand[(d >= ord("0")) & (d <= ord("9"))]


def fast_params(log: LogLines, cand: np.ndarray):
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
    n_hex = len(text) - len(text.translate(None, HEX_CHARS))
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



def slow_params(buf: bytes | memoryview):
    pos, groups = scan_regex(RE_PARAM, buf)
    ns = ints([g[0] for g in groups])
    params = [tuple(int(x, 16) for x in g[1].split()) for g in groups]
    return pos, ns, params


def fast_grid(log: LogLines, lines: np.ndarray):
    r = parse_numbers(log.joined(lines), log.length[lines], GRID_SHAPES, GRID_COUNTS)
    if r is None:
        return None
    code, vals, _ = r
    pos = log.nl[lines]
    dims = code == 0
    # Every probe shape carries 4 values: the values not of dims lines are the probe rows in line order.
    of_dims = np.repeat(dims, np.asarray(GRID_COUNTS)[code])
    return (pos[dims], vals[of_dims].reshape(-1, 7), pos[~dims], GRID_LEVELS[code[~dims]],
            vals[~of_dims].reshape(-1, 4)[:, 1:])


def slow_grid(buf: bytes | memoryview):
    pos, groups = scan_regex(RE_GRID, buf)
    tab = np.asarray(groups, dtype=np.bytes_).reshape(-1, 12)
    dims = tab[:, 0] != b""
    level = np.where(tab[~dims, 8] == b"warp", "warp", "thread")
    return pos[dims], ints(tab[dims, :7]).reshape(-1, 7), pos[~dims], level, ints(tab[~dims, 9:]).reshape(-1, 3)


def fast_probe_mem(log: LogLines, lines: np.ndarray):
    r = parse_numbers(log.joined(lines), log.length[lines], PROBE_MEM_SHAPES, (1, 1))
    return None if r is None else (log.nl[lines], r[1])


def slow_probe_mem(buf: bytes | memoryview):
    pos, groups = scan_regex(RE_PROBE_MEM, buf)
    return pos, ints([g[0] for g in groups])


def fast_save(log: LogLines, lines: np.ndarray):
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
    if np.any(path_end <= starts + len(P_SAVE)):
        return None
    if not np.all(log.window(path_end, 5) == np.frombuffer(b" size", np.uint8)):
        return None
    ws = np.zeros(256, dtype=bool)
    ws[np.frombuffer(WS, np.uint8)] = True
    if ws[log.arr[starts + len(P_SAVE)]].any() or ws[log.arr[path_end - 1]].any():
        return None  # the regex wants the path to start and end with a non-space
    size = log.decimal(end, end - last - 1)
    if size is None:
        return None
    # All paths in one decode: each ends with a newline (which no path holds) and decoding stops
    # any invalid sequence at an ASCII byte, so this equals decoding each path alone.
    paths = decode(log.spans(starts + len(P_SAVE), path_end - starts - len(P_SAVE))).split("\n")[:-1]
    return log.nl[lines], paths, size


def slow_save(buf: bytes | memoryview):
    pos, groups = scan_regex(RE_SAVE, buf)
    return pos, [decode(g[0]) for g in groups], ints([g[1] for g in groups])


def fast_timing(log: LogLines, lines: np.ndarray):
    r = parse_numbers(log.joined(lines), log.length[lines], TIMING_SHAPES, (4,), (4,))
    if r is None:
        return None
    vals = r[1].reshape(-1, 4)
    return log.nl[lines], vals / 1e6 if r[2] else vals


def slow_timing(buf: bytes | memoryview):
    pos, groups = scan_regex(RE_TIMING, buf)
    return pos, floats(groups).reshape(-1, 4)


def fast_bench(log: LogLines, lines: np.ndarray):
    r = parse_numbers(log.joined(lines), log.length[lines], BENCH_SHAPES, (6, 5), (5, 5))
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
    with_rc = split_rows(vals, code, (6, 5), 0)
    floats = np.empty((lines.size, 5))
    floats[has] = with_rc[:, :5]
    floats[~has] = split_rows(vals, code, (6, 5), 1)
    return log.nl[lines], floats / 1e6 if scaled else floats, has, with_rc[:, 5].astype(np.int64)


def slow_bench(buf: bytes | memoryview):
    pos, groups = scan_regex(RE_BENCH, buf)
    tab = np.asarray(groups, dtype=np.bytes_).reshape(-1, 6)
    has = tab[:, 5] != b""
    return pos, floats(tab[:, :5]).reshape(-1, 5), has, tab[has, 5].astype(np.int64)

