"""A Neutrino trace directory (one per profiled process) and how to find them.

Layout (as the hook driver writes it, see docs/DESIGN.md)::

    <tracedir>/probe.toml  event.log  [tensor.trace]
    <tracedir>/kernel/<idx>_<sha1>/{kernel.info, process.log, ...}
    <tracedir>/result/<seconds-since-start>.bin

Ordering rules (never ``os.listdir`` order):

* ``result/*.bin`` by the numeric stem (``0.486795 < 2.7 < 10.1``). Files whose stem is not a
  number are not Neutrino results and are **ignored** (e.g. ``notes.bin``), so one stray file does not
  make a whole trace unreadable; :meth:`TraceDir.ignored_results` lists them so nothing is hidden.
* ``kernel/<idx>_<sha1>`` by the integer ``idx``; folders not of that shape are ignored.
* trace directories by the time in their name (:func:`name_time_key`), the one rule every section
  uses to pick "the newest collection" (:func:`find_trace_dirs`, :func:`newest_trace_dir`). The hook
  driver names a folder ``%b%d_%H%M%S_<pid>`` (``Apr24_231539_1860576``); the artifact's older builds
  wrote ``%b_%d_%H_%M_%S_<pid>`` (``Jan_23_06_27_37_268336``). Names are compared as
  (month, day, hour, minute, second, pid), never as strings (``Aug05_...`` is newer than ``Jan05_...``).
  Names carry no year: within one year the order is right, but a collection spanning New Year
  (``Dec31_235959_1`` then ``Jan01_000003_2``) cannot be ordered by name and comes out with December
  newest. A name that does not parse (a folder renamed or copied by hand, ``custom``, ``trace``) sorts
  **after** every parsed name -- it cannot be compared with them (no year; a copy's mtime is the copy's) and
  a folder someone named is taken as the one meant -- and such names among themselves by modification
  time, then name. Modification time is used for nothing else. Callers print the folder they chose.
* folders of processes that launched nothing are not collections (:func:`launched_nothing`): while it
  probes a kernel, the probe engine runs ``nvidia-smi`` with the hook's ``LD_PRELOAD`` inherited, and
  on a real GPU each call leaves a folder (event.log: pid, command, "init success", nothing else) a
  second *newer* than the workload's. :func:`find_trace_dirs` leaves them out whenever a folder that
  did load or launch GPU code is beside them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from neutrino_ae.errors import InputError, TraceFormatError
from neutrino_ae.formats.bintrace import BinTrace, open_trace
from neutrino_ae.formats.kernelinfo import KernelInfo, RegisterUsage, read_kernel_info, read_register_usage
from neutrino_ae.formats.probe import ProbeSpec, read_probe_toml

if TYPE_CHECKING:  # the event log and tensor.trace readers import pandas: only when they are read
    import pandas as pd

    from neutrino_ae.formats.eventlog import EventLog

_NUMERIC_STEM = re.compile(r"\d+(?:\.\d+)?")
_KERNEL_DIR = re.compile(r"(\d+)_([0-9a-fA-F]+)")
_MONTHS = {m: i for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1)}
_NAME_NEW = re.compile(r"([A-Za-z]{3})(\d{2})_(\d{2})(\d{2})(\d{2})_(\d+)")
_NAME_OLD = re.compile(r"([A-Za-z]{3})_(\d{2})_(\d{2})_(\d{2})_(\d{2})_(\d+)")


@dataclass(frozen=True)
class KernelDir:
    path: Path
    index: int
    info: KernelInfo | None  # None when the probe engine wrote no kernel.info (probing failed)
    registers: RegisterUsage | None  # None when process.log is missing or has no ptxas lines
    register_problem: str | None = None  # why ``registers`` is None, if process.log exists


def name_time_key(name: str) -> tuple[int, int, int, int, int, int] | None:
    """(month, day, hour, minute, second, pid) from a trace folder name, or None if it has no time.

    Both of Neutrino's forms: ``Apr24_231539_1860576`` (``%b%d_%H%M%S_<pid>``) and the artifact's
    ``Jan_23_06_27_37_268336`` (``%b_%d_%H_%M_%S_<pid>``); month names in any case. No year: see the
    module docstring for what that means at New Year.
    """
    m = _NAME_NEW.fullmatch(name) or _NAME_OLD.fullmatch(name)
    if not m or m.group(1).lower() not in _MONTHS:
        return None
    mon, day, hh, mm, ss, pid = _MONTHS[m.group(1).lower()], *(int(g) for g in m.groups()[1:])
    if not (1 <= day <= 31 and hh < 24 and mm < 60 and ss < 61):
        return None
    return mon, day, hh, mm, ss, pid


class TraceDir:
    """One trace directory. Files are read lazily; the event log and probe are cached."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        p = Path(path)
        if not p.exists():
            raise InputError(p, "no such trace directory")
        if not p.is_dir():
            raise InputError(p, "is not a directory, expected a Neutrino trace directory")
        if not is_trace_dir(p):
            raise InputError(p, "not a Neutrino trace directory (no event.log, probe.toml, result/ or kernel/)")
        self.path = p

    def __repr__(self) -> str:
        return f"TraceDir({str(self.path)!r})"

    @property
    def name(self) -> str:
        return self.path.name

    def _result_files(self) -> tuple[list[tuple[float, Path]], list[Path]]:
        rdir = self.path / "result"
        if not rdir.is_dir():
            return [], []
        good, bad = [], []
        for f in rdir.iterdir():
            if f.suffix != ".bin" or not f.is_file():
                continue
            if _NUMERIC_STEM.fullmatch(f.stem):
                good.append((float(f.stem), f))
            else:
                bad.append(f)
        good.sort(key=lambda t: (t[0], t[1].name))
        return good, sorted(bad)

    def results(self) -> list[Path]:
        """``result/*.bin`` in launch-time order (numeric file name)."""
        return [f for _, f in self._result_files()[0]]

    def newest_result(self) -> Path:
        """The last ``result/*.bin`` in launch order (the one a section reads from a trace directory)."""
        files = self.results()
        if not files:
            raise InputError(self.path, no_result_message(self.path))
        return files[-1]

    def ignored_results(self) -> list[Path]:
        """``result/*.bin`` files skipped because their name is not a time."""
        return self._result_files()[1]

    def open_result(self, index_or_path: int | str | os.PathLike[str] = -1) -> BinTrace:
        """Open a result by position in :meth:`results` (default: the last) or by path, with the
        section levels from ``probe.toml`` when present."""
        if isinstance(index_or_path, int):
            files = self.results()
            if not files:
                raise InputError(self.path / "result", "no result/<time>.bin trace in this trace directory")
            if not -len(files) <= index_or_path < len(files):
                raise InputError(self.path / "result",
                                 f"has {len(files)} trace(s), index {index_or_path} requested")
            target = files[index_or_path]
        else:
            target = Path(index_or_path)
            if not target.is_absolute() and not target.exists():
                target = self.path / target
        probe = self.probe()
        levels = probe.levels if probe is not None and probe.datamodels else None
        return open_trace(target, levels=levels)

    @cached_property
    def _event_log(self) -> EventLog:
        from neutrino_ae.formats.eventlog import parse_event_log

        return parse_event_log(self.path / "event.log")

    def event_log(self) -> EventLog:
        return self._event_log

    @cached_property
    def _probe(self) -> ProbeSpec | None:
        f = self.path / "probe.toml"
        return read_probe_toml(f) if f.exists() else None

    def probe(self) -> ProbeSpec | None:
        return self._probe

    def tensor_trace(self) -> pd.DataFrame | None:
        from neutrino_ae.formats.tensortrace import read_tensor_trace

        f = self.path / "tensor.trace"
        return read_tensor_trace(f) if f.exists() else None

    def kernels(self) -> list[KernelDir]:
        """Probed kernels, ordered by the numeric index prefix of ``kernel/<idx>_<sha1>``."""
        kdir = self.path / "kernel"
        if not kdir.is_dir():
            return []
        found = []
        for d in kdir.iterdir():
            m = _KERNEL_DIR.fullmatch(d.name)
            if m and d.is_dir():
                found.append((int(m.group(1)), d))
        found.sort(key=lambda t: (t[0], t[1].name))
        out = []
        for idx, d in found:
            info = read_kernel_info(d / "kernel.info") if (d / "kernel.info").exists() else None
            regs, problem = None, None
            if (d / "process.log").exists():
                try:
                    regs = read_register_usage(d / "process.log", info.name if info else None)
                except TraceFormatError as e:
                    problem = e.problem
            out.append(KernelDir(d, idx, info, regs, problem))
        return out


_ENGINE_ERROR = re.compile(r"^((?:\w+\.)*\w+(?:Error|Exception)\b.*)$", re.M)
#: What to do about a probe engine error, by the words Neutrino uses in it.
_ENGINE_HINTS = {
    "PTX Not Found": "the kernel's binary carries no PTX, which Neutrino probes: use a PTX-included build, "
                     "e.g. PyTorch built with TORCH_CUDA_ARCH_LIST='9.0+PTX'; python prepare_env.py --check",
    "probed.ptx": "ptxas refused the probed build; a known case is Neutrino main's gmem_bytes probe on a kernel "
                  "with cp.async, which leaves a literal BYTES in the PTX (ptxas: Unknown symbol 'BYTES'); the "
                  "artifact branch builds it",
}


def engine_errors(path: str | os.PathLike[str]) -> list[str]:
    """The probe engine's errors in a trace folder's ``kernel/*/process.log`` (each such kernel ran unprobed),
    one line each with what to do where known."""
    reasons = []
    for log in sorted((Path(path) / "kernel").glob("*/process.log")):
        errors = _ENGINE_ERROR.findall(log.read_text(encoding="utf-8", errors="replace"))
        if errors:
            hint = next((h for words, h in _ENGINE_HINTS.items() if words in errors[-1]), "")
            reasons.append(f"the probe engine failed on kernel {log.parent.name}: {_short(errors[-1])}"
                           + (f" ({hint})" if hint else ""))
    return reasons


_PTXAS_FAILED = re.compile(r"CalledProcessError: Command '\['ptxas'.*?(\w+)\.ptx'.*returned non-zero exit status (\d+)")


def _short(error: str, limit: int = 300) -> str:
    """The engine's error line, a failed ptxas command said in a few words."""
    error = error.strip()
    m = _PTXAS_FAILED.search(error)
    if m:
        return f"ptxas exited {m.group(2)} on the {m.group(1)} build ({m.group(1)}.ptx)"
    return error if len(error) <= limit else error[:limit] + "..."


def no_result_reasons(path: str | os.PathLike[str]) -> list[str]:
    """Why a trace folder holds no ``result/*.bin``, from what Neutrino left in it: the probe engine's error
    in a ``kernel/*/process.log`` (the kernel then ran unprobed), or an event.log with no launch (the
    process died or exited before launching; the CLI does not pass its exit code on). Empty when neither."""
    p = Path(path)
    reasons = engine_errors(p)
    if not reasons:
        head = _event_log_head(p)
        if head is not None and not re.search(rb"^\[exec\]", head, re.M):
            reasons.append("its event.log records no kernel launch: the traced process ended before launching "
                           "one (a crash? its stderr is in the CLI's log)")
    return reasons[:2]


def no_result_message(path: str | os.PathLike[str]) -> str:
    """"trace directory has no result/*.bin trace", and why (:func:`no_result_reasons`)."""
    reasons = no_result_reasons(path)
    return "trace directory has no result/*.bin trace" + (f": {'; '.join(reasons)}" if reasons else "")


def is_trace_dir(path: str | os.PathLike[str]) -> bool:
    p = Path(path)
    return p.is_dir() and any((p / n).exists() for n in ("event.log", "probe.toml", "result", "kernel"))


_GPU_WORK_LINE = re.compile(rb"^\[(?:mod|bin|exec|jit|count)\]", re.M)


def _event_log_head(p: Path) -> bytes | None:
    """The first MiB of ``p/event.log`` (enough for a start-up and many launches), None when unreadable."""
    try:
        with open(p / "event.log", "rb") as fh:
            return fh.read(1 << 20)
    except OSError:
        return None


def launched_nothing(path: str | os.PathLike[str]) -> bool:
    """True for the trace folder of a process that loaded no GPU code and launched no kernel: nothing in
    ``result/`` or ``kernel/`` (the hook driver makes both, empty, at start-up) and an event.log without
    a module, launch or JIT line (the probe engine's ``nvidia-smi`` calls, see the module docstring)."""
    p = Path(path)
    if any((p / "result").glob("*")) or any((p / "kernel").glob("*")):
        return False
    head = _event_log_head(p)
    return head is not None and _GPU_WORK_LINE.search(head) is None


def workload_dirs(dirs: Sequence[Path]) -> list[Path]:
    """``dirs`` without the folders of processes that :func:`launched_nothing`, in the same order; all of
    ``dirs`` when nothing else is among them (then there is no better folder to point at)."""
    work = [d for d in dirs if not launched_nothing(d)]
    return work or list(dirs)


def trace_dir_order_key(path: Path) -> tuple:
    """Sort key of a trace folder, oldest first (the rule in the module docstring): a parsed name by its
    time and pid; an unparsed one after every parsed one, by modification time then name."""
    key = name_time_key(path.name)
    if key is not None:
        return (0, key, path.name)
    return (1, (path.stat().st_mtime_ns,), path.name)


def _walk_trace_dirs(root: Path) -> list[Path]:
    """Every trace directory under ``root`` (not descending into one; hidden and ``_`` folders skipped)."""
    found = []
    for dirpath, dirnames, _files in os.walk(root):
        here = Path(dirpath)
        if here != root and is_trace_dir(here):
            found.append(here)
            dirnames[:] = []
            continue
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "_"))]
    return found


def find_trace_dirs(root: str | os.PathLike[str], recursive: bool = False) -> list[Path]:
    """Trace directories directly under ``root`` (or ``root`` itself when it is one), oldest first by
    :func:`trace_dir_order_key`; with ``recursive``, every trace directory anywhere under ``root``.
    Folders of processes that :func:`launched_nothing` are left out unless nothing else is there; hidden
    folders are never trace folders (a ``.copy`` would sort as the newest: issue 36)."""
    r = Path(root)
    if not r.is_dir():
        raise InputError(r, "no such directory" if not r.exists() else "is not a directory")
    if is_trace_dir(r) and ((r / "event.log").exists() or (r / "result").is_dir()):
        return [r]
    found = _walk_trace_dirs(r) if recursive else [d for d in r.iterdir()
                                                    if not d.name.startswith(".") and is_trace_dir(d)]
    return sorted(workload_dirs(found), key=trace_dir_order_key)


def check_collected(root: str | os.PathLike[str]) -> None:
    """Raise :class:`TraceFormatError` naming the first ``result/*.bin`` under ``root`` (a trace directory or a
    collection holding several) that does not open whole: a truncated file, an impossible header. The Neutrino
    CLI exits 0 whatever its hook driver managed to write (a full disk, a killed workload), so a collection is
    checked before it replaces an earlier one."""
    r = Path(root)
    dirs = [r] if is_trace_dir(r) else _walk_trace_dirs(r)
    for d in dirs:
        for trace in sorted((d / "result").glob("*.bin")):
            open_trace(trace)


def newest_trace_dir(root: str | os.PathLike[str], recursive: bool = False) -> Path:
    """The newest of :func:`find_trace_dirs` (``root`` itself when it is a trace directory)."""
    dirs = find_trace_dirs(root, recursive)
    if not dirs:
        raise InputError(root, "holds no Neutrino trace directory")
    return dirs[-1]


#: The hook driver announces its folder on stderr: ``[info] trace in <path>`` (common.h).
TRACE_LINE_MARK = "trace in"


def trace_dirs_from_stderr(text: str) -> list[str]:
    """Every folder the Neutrino CLI announced on stderr (the last word of each "trace in" line)."""
    return [line.split()[-1] for line in text.splitlines() if TRACE_LINE_MARK in line and line.split()]


def trace_dir_from_stderr(text: str) -> Path:
    """The trace folder the Neutrino CLI announced last on stderr."""
    hits = trace_dirs_from_stderr(text)
    if not hits:
        raise InputError(None, "Neutrino's stderr has no 'trace in <dir>' line (did the run start probing?)")
    return Path(hits[-1])
