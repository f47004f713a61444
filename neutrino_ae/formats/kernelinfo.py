"""``kernel/<idx>_<sha1>/kernel.info`` and the register counts in ``process.log``.

``kernel.info`` (written by the probe engine, read back by the hooked driver)::

    <kernel name>
    <number of original params>
    <n = number of saving probes>
    n x "<type>,<bytes>"        type 0 = thread-level, 1 = warp-level; bytes saved per unit
                                (the hook driver parses "%d,%d"; "<type> <bytes>" is read too)
    [<analyze hook file name>]  optional

``process.log`` is the probe engine's human log. The assembler (``ptxas -v``) prints one resource
line per compiled build, ``ptxas info    : Used 40 registers, 392 bytes cmem[0]``. The engine
assembles the *pruned* (original) kernel first and the *probed* kernel second, so:

* first "Used N registers" line = pruned build, second = probed build; extra = probed - pruned.
* More than two lines happen when the PTX holds device functions (ptxas reports each
  ``.func`` too) or when a kernel was assembled again. We then keep only the lines that follow a
  ``Compiling entry function '<name>'`` line (entry kernels, not ``.func`` helpers), filtered by
  ``kernel_name`` when given; if that still is not exactly two, the first and the *last* entry line
  are used (first build = pruned, final build = probed) and ``RegisterUsage.ambiguous`` is True so
  callers can flag the row rather than silently trusting it.
* No line at all (e.g. probing crashed before assembling) is a :class:`TraceFormatError`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from neutrino_ae.atomic import write_text
from neutrino_ae.errors import InputError, TraceFormatError
from neutrino_ae.formats.bintrace import Level

# kernel.info encodes the level as 0/1; bintrace.Level is valued by threads per unit.
_TYPE_TO_LEVEL = {0: Level.THREAD, 1: Level.WARP}
_LEVEL_TO_TYPE = {Level.THREAD: 0, Level.WARP: 1}
MAX_PROBES = 256  # same sanity limit as a trace header's numProbes


@dataclass(frozen=True)
class KernelInfo:
    name: str
    num_params: int
    probes: list[tuple[Level, int]]  # (level, bytes per unit) of each saving probe, in order
    analyze_hook: str | None = None

    @property
    def levels(self) -> list[Level]:
        return [lv for lv, _ in self.probes]


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        raise InputError(path, f"no such {what} file") from None
    except IsADirectoryError:
        raise InputError(path, f"is a directory, expected a {what} file") from None


def read_kernel_info(path: str | os.PathLike[str]) -> KernelInfo:
    """Parse ``kernel.info``; any deviation from the layout above is a :class:`TraceFormatError`."""
    p = Path(path)
    lines = _read_text(p, "kernel.info").splitlines()
    # Trailing blank lines are harmless; blank lines inside the fixed part are not.
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) < 3:
        raise TraceFormatError(p, f"truncated kernel.info: {len(lines)} line(s), need name, params, probes")
    name = lines[0].strip()
    if not name or " " in name:
        raise TraceFormatError(p, f"line 1: expected a kernel name, got {lines[0][:80]!r}")
    num_params = _int_field(p, 2, lines[1], "number of params")
    n = _int_field(p, 3, lines[2], "number of saving probes")
    if n > MAX_PROBES:
        raise TraceFormatError(p, f"line 3: {n} saving probes is beyond the sane limit {MAX_PROBES}")
    if len(lines) < 3 + n:
        raise TraceFormatError(p, f"truncated kernel.info: declares {n} probes but has {len(lines) - 3} probe line(s)")
    probes: list[tuple[Level, int]] = []
    for k in range(n):
        text = lines[3 + k]
        # The hook driver reads these lines with sscanf("%d,%d"); a space is accepted as well.
        m = re.fullmatch(r"\s*(\d+)\s*(?:,|\s)\s*(\d+)\s*", text)
        if not m or int(m.group(1)) not in _TYPE_TO_LEVEL:
            raise TraceFormatError(p, f"line {4 + k}: expected '<type 0|1>,<bytes>', got {text[:80]!r}")
        probes.append((_TYPE_TO_LEVEL[int(m.group(1))], int(m.group(2))))
    rest = [ln.strip() for ln in lines[3 + n:]]
    if len(rest) > 1 or (rest and (not rest[0] or " " in rest[0])):
        raise TraceFormatError(p, f"line {4 + n}: expected at most one analyze-hook file name, got {rest[:2]!r}")
    return KernelInfo(name, num_params, probes, rest[0] if rest else None)


def _int_field(path: Path, lineno: int, text: str, what: str) -> int:
    s = text.strip()
    if not s.isdigit():
        raise TraceFormatError(path, f"line {lineno}: expected the {what} (an integer), got {text[:80]!r}")
    return int(s)


def format_kernel_info(info: KernelInfo) -> str:
    lines = [info.name, str(info.num_params), str(len(info.probes))]
    for level, nbytes in info.probes:
        lv = Level.parse(level)
        if lv not in _LEVEL_TO_TYPE:
            raise ValueError(f"kernel.info can only store thread or warp levels, got {lv.name}")
        lines.append(f"{_LEVEL_TO_TYPE[lv]},{int(nbytes)}")
    if info.analyze_hook:
        lines.append(info.analyze_hook)
    return "\n".join(lines) + "\n"


def write_kernel_info(path: str | os.PathLike[str], info: KernelInfo) -> Path:
    return write_text(path, format_kernel_info(info))


# --------------------------------------------------------------------------------------------------
# process.log


def format_ptxas_line(registers: int, cmem_bytes: int) -> str:
    """The assembler's resource line as ptxas -v prints it (no trailing newline)."""
    return f"ptxas info    : Used {int(registers)} registers, {int(cmem_bytes)} bytes cmem[0]"


@dataclass(frozen=True)
class RegisterUsage:
    pruned: int
    probed: int
    ambiguous: bool = False  # more than two candidate lines; see module docstring

    @property
    def extra(self) -> int:
        return self.probed - self.pruned


_USED_RE = re.compile(r"^ptxas\b.*?\bUsed (\d+) registers", re.MULTILINE)
_ENTRY_RE = re.compile(r"^ptxas\b.*?Compiling entry function '([^']*)'", re.MULTILINE)
_FUNC_RE = re.compile(r"^ptxas\b.*?(?:Compiling|Function properties for) ", re.MULTILINE)


def read_register_usage(process_log: str | os.PathLike[str], kernel_name: str | None = None) -> RegisterUsage:
    """Registers of the pruned and probed builds from a ``process.log`` (rule: module docstring)."""
    p = Path(process_log)
    text = _read_text(p, "process.log")
    used = [(m.start(), int(m.group(1))) for m in _USED_RE.finditer(text)]
    if not used:
        raise TraceFormatError(p, "no 'ptxas info : Used N registers' line (probing or assembling failed?)")
    if len(used) == 1:
        raise TraceFormatError(p, "only one ptxas register line; need two (pruned and probed builds)")
    if len(used) == 2:
        return RegisterUsage(used[0][1], used[1][1])
    entries = _entry_lines(text, used, kernel_name)
    if len(entries) == 2:
        return RegisterUsage(entries[0], entries[1])
    pick = entries if len(entries) >= 2 else [u for _, u in used]
    return RegisterUsage(pick[0], pick[-1], ambiguous=True)


def _entry_lines(text: str, used: Sequence[tuple[int, int]], kernel_name: str | None) -> list[int]:
    """Register counts whose nearest preceding ptxas context line names an entry function."""
    contexts = [(m.start(), m) for m in _FUNC_RE.finditer(text)]
    entries = {m.start(): m.group(1) for m in _ENTRY_RE.finditer(text)}
    out = []
    for pos, regs in used:
        prior = [c for c, _ in contexts if c < pos]
        if not prior or prior[-1] not in entries:
            continue
        if kernel_name is None or entries[prior[-1]] == kernel_name:
            out.append(regs)
    return out
