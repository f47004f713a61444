"""``kernel/<idx>_<sha1>/kernel.info`` and the register counts in ``process.log``.

``kernel.info`` (written by the probe engine, read back by the hooked driver)::

    <kernel name>
    <number of original params>
    <n = number of saving probes>
    n x "<type>,<bytes>"        type 0 = thread-level, 1 = warp-level; bytes saved per unit, or
                                -1 for a count-sized probe (``thread:16:count``: the hook driver
                                sizes it at launch from the count kernel) -- the hook driver
                                parses "%d,%d"; "<type> <bytes>" is read too
    [<analyze hook path>]       optional (artifact branch: absolute path of tools/<hook>.py)

``process.log`` is the probe engine's human log. Before each build it prints the assembler command
(``ptxas -arch=sm_80 -m64 --verbose <dir>/probed.ptx -o <dir>/probed.bin``) and then ptxas's
output, which holds one resource line per entry kernel,
``ptxas info    : Used 18 registers, used 0 barriers, 388 bytes cmem[0]``. The engine assembles
the *probed* kernel first, the *pruned* one second and, for a dynamic (count) probe such as dmat,
the *countd* kernel third; builds are told apart by the file names on the command lines
(:func:`read_register_usage`). Extra registers = probed - pruned, signed: ptxas allocates each
build on its own, and for register-heavy kernels the real engine's dmat-probed build gets FEWER
registers than the pruned one (tests/data/genuine/probe-engine/*/dmat-ilp_sum: 114 or 118 vs 128;
*/dmat-stencil_1d: 16 or 18 vs 31). Such a difference is reported as ptxas gives it and marked
:data:`FEWER_REGISTERS`, never refused.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from neutrino_ae.atomic import write_text
from neutrino_ae.errors import TraceFormatError
from neutrino_ae.formats.inputs import MiB, read_text_input
from neutrino_ae.formats.level import Level

# kernel.info encodes the level as 0/1; Level is valued by threads per unit.
_TYPE_TO_LEVEL = {0: Level.THREAD, 1: Level.WARP}
_LEVEL_TO_TYPE = {Level.THREAD: 0, Level.WARP: 1}
MAX_PROBES = 256  # same sanity limit as a trace header's numProbes
#: ``bytes`` of a count-sized probe in kernel.info: known only at launch (``[count] size: N``).
COUNT_SIZED = -1


@dataclass(frozen=True)
class KernelInfo:
    name: str
    num_params: int
    probes: list[tuple[Level, int]]  # (level, bytes per unit or COUNT_SIZED) of each saving probe, in order
    analyze_hook: str | None = None

    @property
    def levels(self) -> list[Level]:
        return [lv for lv, _ in self.probes]


def _read_text(path: Path, what: str) -> str:
    # process.log holds the generated trace-reading code too: a few hundred KB at most.
    return read_text_input(path, what, 64 * MiB)


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
        m = re.fullmatch(r"\s*(\d+)\s*(?:,|\s)\s*(\d+|-1)\s*", text)
        if not m or int(m.group(1)) not in _TYPE_TO_LEVEL:
            raise TraceFormatError(p, f"line {4 + k}: expected '<type 0|1>,<bytes or -1>', got {text[:80]!r}")
        if int(m.group(2)) == COUNT_SIZED and int(m.group(1)) != 0:
            raise TraceFormatError(p, f"line {4 + k}: a count-sized (-1) probe must be thread-level (type 0)")
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

#: The builds the probe engine assembles, in the order it assembles them (``probe/cuda.py``:
#: ``assemble(workdir, "probed")``, then ``"pruned"``, then ``"countd"`` for dynamic probes).
BUILD_ORDER = ("probed", "pruned", "countd")
MAX_REGISTERS = 255  # per thread, every NVIDIA architecture since sm_35
#: How a negative probed - pruned difference is marked wherever it is shown (Table 2).
FEWER_REGISTERS = "probed build allocated fewer registers"


def format_ptxas_command(workdir: str, build: str, arch: str = "sm_80") -> str:
    """The assembler command line the probe engine prints before each build's ptxas output."""
    return f"ptxas -arch={arch} -m64 --verbose {workdir}/{build}.ptx -o {workdir}/{build}.bin"


def format_ptxas_line(registers: int, cmem_bytes: int, barriers: int | None = 0) -> str:
    """The assembler's resource line as ``ptxas --verbose`` prints it (CUDA 12.x/13.x print the
    barrier count, older releases do not: ``barriers=None``). No trailing newline."""
    mid = "" if barriers is None else f"used {int(barriers)} barriers, "
    return f"ptxas info    : Used {int(registers)} registers, {mid}{int(cmem_bytes)} bytes cmem[0]"


@dataclass(frozen=True)
class RegisterUsage:
    pruned: int
    probed: int
    countd: int | None = None  # the count kernel of a dynamic probe (dmat), when it was built
    by_name: bool = True  # False: builds told apart by the engine's order, the log names none

    @property
    def extra(self) -> int:
        """probed - pruned, signed as ptxas's counts give it (negative: see :attr:`allocated_fewer`)."""
        return self.probed - self.pruned

    @property
    def allocated_fewer(self) -> bool:
        """ptxas gave the probed build fewer registers than the pruned one (it allocates each on its own)."""
        return self.probed < self.pruned

    @property
    def note(self) -> str | None:
        """:data:`FEWER_REGISTERS` when :attr:`allocated_fewer`, else None."""
        return FEWER_REGISTERS if self.allocated_fewer else None


_COMMAND_RE = re.compile(r"^ptxas\b[^\n]*?\s(\S[^\n]*?)\.ptx\s+-o\s[^\n]*$", re.MULTILINE)
_USED_RE = re.compile(r"^ptxas\b[^\n]*?\bUsed (\d+) registers", re.MULTILINE)
_ENTRY_RE = re.compile(r"^ptxas\b[^\n]*?Compiling entry function '([^']*)'", re.MULTILINE)
_FUNC_PROPS_RE = re.compile(r"^ptxas\b[^\n]*?Function properties for (\S+)", re.MULTILINE)


def read_register_usage(process_log: str | os.PathLike[str], kernel_name: str | None = None) -> RegisterUsage:
    """Registers of the pruned, probed (and count) builds from a ``process.log``.

    The probe engine prints each ``ptxas`` command line before that build's output, so a build
    is named by the ``.ptx`` file on its command line (``probed``, ``pruned``, ``countd``), not by
    its position. Within a build, a "Used N registers" line belongs to the entry function named by
    the latest "Compiling entry function" line (``.func`` helpers have "Function properties" lines
    of their own and are skipped); with ``kernel_name`` only that entry counts. A log without
    command lines (older engines) falls back to the engine's assembly order, :data:`BUILD_ORDER`.
    A probed build with fewer registers than the pruned one is a genuine result (``extra`` < 0,
    :attr:`RegisterUsage.allocated_fewer`); a log without a register line for the probed or pruned
    build, or a count beyond the hardware's 255, is a :class:`TraceFormatError`.
    """
    p = Path(process_log)
    text = _read_text(p, "process.log")
    if not _USED_RE.search(text):
        raise TraceFormatError(p, "no 'ptxas info : Used N registers' line (probing or assembling failed?)")
    commands = list(_COMMAND_RE.finditer(text))
    by_name = bool(commands)
    builds: dict[str, int] = {}
    if by_name:
        for k, m in enumerate(commands):
            end = commands[k + 1].start() if k + 1 < len(commands) else len(text)
            regs = _entry_registers(text[m.end():end], kernel_name)
            name = Path(m.group(1)).name
            if regs and name in BUILD_ORDER:
                builds[name] = regs[-1]  # an assembly repeated later wins, like the .bin it overwrote
    else:
        regs = _entry_registers(text, kernel_name)
        if len(regs) not in (2, 3):
            raise TraceFormatError(p, f"{len(regs)} entry-kernel register lines and no ptxas command lines: "
                                      "cannot tell the probed and pruned builds apart")
        builds = dict(zip(BUILD_ORDER, regs, strict=False))
    missing = [b for b in ("probed", "pruned") if b not in builds]
    if missing:
        who = f" for kernel {kernel_name!r}" if kernel_name else ""
        raise TraceFormatError(p, f"no register line{who} in the {' and '.join(missing)} build(s)")
    usage = RegisterUsage(builds["pruned"], builds["probed"], builds.get("countd"), by_name)
    high = max(r for r in (usage.pruned, usage.probed, usage.countd) if r is not None)
    if high > MAX_REGISTERS:
        raise TraceFormatError(p, f"a build uses {high} registers per thread, beyond the hardware limit "
                                  f"{MAX_REGISTERS}")
    return usage


def _entry_registers(text: str, kernel_name: str | None) -> list[int]:
    """Register counts of entry functions in ``text`` (one build's ptxas output), in order. Output
    that names no entry at all (ptxas run without --verbose context) gives every count."""
    if not _ENTRY_RE.search(text):
        return [int(m.group(1)) for m in _USED_RE.finditer(text)]
    marks = sorted([(m.start(), "entry", m.group(1)) for m in _ENTRY_RE.finditer(text)]
                   + [(m.start(), "props", m.group(1)) for m in _FUNC_PROPS_RE.finditer(text)])
    out = []
    for m in _USED_RE.finditer(text):
        entry = None
        for pos, kind, name in marks:
            if pos > m.start():
                break
            if kind == "entry":
                entry = name
            elif name != entry:  # properties of a .func helper, not of the entry being compiled
                entry = None
        if entry is not None and (kernel_name is None or entry == kernel_name):
            out.append(int(m.group(1)))
    return out
