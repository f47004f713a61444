"""Table 2's inputs: the benchmark-mode trace folders read, each kernel x probe's median slowdown, failed
launches and extra registers (:func:`measure_cell`), with its ground truth attached: the section's
``load`` (:func:`load`).

Input layout (the dynamic notebook's collection, ``<test>/<metric>/{stdout.log,trace}``)::

    <root>/{cutlass_op,triton_op,pytorch_op}/<kernel>/<probe>/trace/{event.log,kernel/<i>_<sha1>/process.log}

Per kernel x probe:

* slowdown = MEDIAN of ``impact`` (probed kernel time / pruned original time) over the launches'
  ``[benchmark] ... impact <r> <rc>`` lines. The median, not the mean, because one launch hit by
  a clock change or a context switch should not move a row of the table.
* launches that failed (``[exec] failed`` or a non-zero rc) are listed (launch index and why) and
  left out of the median; launches with no benchmark line at all are counted separately.
* extra registers = probed - pruned from each kernel folder's ``process.log`` (ptxas lines), signed
  as ptxas gives them: ptxas allocates each build on its own, so a probed build can get fewer
  registers than the pruned one (the real engine's dmat build of a register-heavy kernel does). A
  negative value is shown marked "probed build allocated fewer registers" (``registers_note`` in the
  JSON, ``notes`` in the table, a dagger in the text, HTML and figure). When a trace holds several
  kernels the table shows the largest value; all of them are in the JSON.

Missing files (event.log, process.log, a probe's trace folder) are listed per kernel x probe and the
rest of the table is still produced.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neutrino_ae.bundle.context import Bundle
from neutrino_ae.errors import InputError, NeutrinoAEError
from neutrino_ae.formats.eventlog import parse_event_log
from neutrino_ae.formats.kernelinfo import FEWER_REGISTERS, read_kernel_info, read_register_usage
from neutrino_ae.formats.tracedir import engine_errors, trace_dir_order_key, workload_dirs
from neutrino_ae.report.command.paths import missing_reason
from neutrino_ae.report.section.driver import Source

from .analysis import (
    GROUP_LABELS,
    GROUPS,
    KERNEL_ORDER,
    NOT_BUILT,
    PROBE_ORDER,
    Cell,
    _order,
    _truth,
)

SECTION = "kernel_overhead"


def _subdirs(path: Path) -> list[str]:
    # Dot/underscore folders are caches (__pycache__, .ipynb_checkpoints), never kernels or probes.
    return [p.name for p in path.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))]


def _kernel_dir_key(path: Path) -> tuple[int, str]:
    head = path.name.split("_", 1)[0]
    return (int(head) if head.isdigit() else 1 << 30, path.name)


def find_trace_dirs(probe_dir: Path) -> list[Path]:
    """The trace folder(s) of one kernel x probe run: ``trace/``, the folder itself, or subfolders with event.log."""
    if (probe_dir / "trace").is_dir():
        return [probe_dir / "trace"]
    if (probe_dir / "event.log").is_file():
        return [probe_dir]
    found = [probe_dir / d for d in _subdirs(probe_dir) if (probe_dir / d / "event.log").is_file()]
    return sorted(workload_dirs(found), key=trace_dir_order_key)  # not the probe engine's nvidia-smi folders


def measure_cell(group: str, kernel: str, probe: str, probe_dir: str | Path) -> Cell:
    """Slowdown (median impact), failed launches and extra registers of one kernel x probe folder."""
    probe_dir = Path(probe_dir)
    cell = Cell(group, kernel, probe, str(probe_dir))
    trace_dirs = find_trace_dirs(probe_dir)
    if not trace_dirs:
        cell.problems.append(f"{probe_dir}: no trace folder (expected trace/event.log)")
        return cell
    cell.trace_dirs = [str(t) for t in trace_dirs]
    impacts: list[np.ndarray] = []
    offset = 0
    for tdir in trace_dirs:
        log_path = tdir / "event.log"
        if not log_path.is_file():
            cell.problems.append(f"{log_path}: missing")
        else:
            impacts.append(_read_launches(cell, log_path, offset))
            offset = cell.launches
        errors = engine_errors(tdir)
        if errors:  # the hook ran the kernel unprobed: no slowdown, no probed build to count registers of
            cell.not_built = errors[0]
            cell.problems.append(f"{tdir}: {NOT_BUILT}: {errors[0]}")
            continue
        _read_registers(cell, tdir)
    values = np.concatenate(impacts) if impacts else np.empty(0)
    cell.used = int(values.size)
    if values.size:
        cell.slowdown = float(np.median(values))
        cell.impact_min, cell.impact_max = float(values.min()), float(values.max())
    elif not cell.problems and not cell.not_built:
        cell.problems.append(f"{probe_dir}: no successful [benchmark] launch (was --benchmark on?)")
    extras = [r["extra"] for r in cell.registers]
    cell.extra_regs = max(extras) if extras else None
    if cell.extra_regs is not None and cell.extra_regs < 0:
        cell.registers_note = FEWER_REGISTERS
    return cell


def _read_launches(cell: Cell, log_path: Path, offset: int) -> np.ndarray:
    """Record launch counts and failures on ``cell``; return the impacts that count."""
    log = parse_event_log(log_path)
    if log.cut_launch is not None:
        cell.problems.append(f"{log_path}: ends mid-line (run killed?); launch {log.cut_launch} left out")
    # The complete launches; integer columns as float with NaN for "not logged".
    impact, rc = log.column("impact"), log.column("rc")
    failed_flag = log.column("failed").astype(bool)
    cell.launches += len(impact)
    bad_rc = np.isfinite(rc) & (rc != 0)
    bad = failed_flag | bad_rc
    for i in np.flatnonzero(bad):
        reason = "[exec] failed" if failed_flag[i] else f"rc {int(rc[i])}"
        if failed_flag[i] and bad_rc[i]:
            reason += f", rc {int(rc[i])}"
        cell.failed.append({"launch": int(offset + i), "event_log": str(log_path), "reason": reason,
                            "rc": int(rc[i]) if np.isfinite(rc[i]) else None})
    # A launch without impact that did not fail (e.g. a filtered kernel) is neither used nor failed.
    cell.no_benchmark += int(np.count_nonzero(~bad & ~np.isfinite(impact)))
    return impact[~bad & np.isfinite(impact)]


def _read_registers(cell: Cell, trace_dir: Path) -> None:
    kdir_root = trace_dir / "kernel"
    kdirs = sorted((p for p in kdir_root.iterdir() if p.is_dir()), key=_kernel_dir_key) if kdir_root.is_dir() else []
    if not kdirs:
        cell.problems.append(f"{kdir_root}: no kernel/<i>_<sha1>/ folder, extra registers unknown")
        return
    for kdir in kdirs:
        name = _kernel_name(kdir)
        log = kdir / "process.log"
        if not log.is_file():
            cell.problems.append(f"{log}: missing, extra registers unknown for this kernel")
            continue
        try:
            usage = read_register_usage(log, name)
        except NeutrinoAEError as exc:
            cell.problems.append(str(exc))
            continue
        cell.registers.append({"kernel_dir": str(kdir), "name": name, "pruned": usage.pruned,
                               "probed": usage.probed, "countd": usage.countd, "extra": usage.extra,
                               "note": usage.note, "builds_named": usage.by_name})
        if not usage.by_name:
            cell.problems.append(f"{log}: no ptxas command lines; builds taken in the engine's order "
                                 "(probed, pruned, countd)")


def _kernel_name(kdir: Path) -> str | None:
    # kernel.info only names the kernel (for the JSON and for picking ptxas lines); a missing one is
    # not worth a problem line because the register count does not depend on it.
    try:
        return read_kernel_info(kdir / "kernel.info").name
    except NeutrinoAEError:
        return None


def discover(root: str | Path, groups: Sequence[str] | None = None) -> tuple[list[tuple[str, str, str, Path]],
                                                                             list[str]]:
    """``(group, kernel, probe, probe_dir)`` for every run under ``root``, and group-level problems.

    ``root`` is either the ``kernel_overhead`` folder (holding group folders) or one group folder.
    """
    root = Path(root)
    if not root.is_dir():
        raise InputError(root, missing_reason(root, "no such folder (expected kernel_overhead/ or one of its group "
                                                    "folders)"))
    present = [g for g in GROUPS if (root / g).is_dir()]
    problems: list[str] = []
    if present or groups:
        wanted = list(groups) if groups else list(GROUPS)
        group_dirs = []
        for g in wanted:
            if (root / g).is_dir():
                group_dirs.append((g, root / g))
            elif root.name == g:
                group_dirs.append((g, root))
            else:
                problems.append(f"{root / g}: missing, no {GROUP_LABELS.get(g, g)} rows")
    else:
        group_dirs = [(root.name, root)]
    runs = []
    for g, gdir in group_dirs:
        for kernel in _order(_subdirs(gdir), KERNEL_ORDER.get(g, ())):
            for probe in _order(_subdirs(gdir / kernel), PROBE_ORDER):
                runs.append((g, kernel, probe, gdir / kernel / probe))
    return runs, problems


@dataclass
class Measured:
    """Table 2's inputs read: every kernel x probe cell (ground truth attached), the output stem, problems."""

    root: Path
    bundle: Bundle
    cells: list[Cell]
    stem: str
    group_problems: list[str]

    @property
    def problems(self) -> list[str]:
        return self.group_problems + [p for c in self.cells for p in c.problems]

    @property
    def failed(self) -> list[str]:
        return [f"{c.group}/{c.kernel}/{c.probe} launch {f['launch']} ({f['reason']})"
                for c in self.cells for f in c.failed]


def load(source: Source) -> Measured:
    """The section's ``load``: every kernel x probe cell under ``source.paths[0]`` (the kernel_overhead folder
    or one group folder); ``source.options["groups"]`` restricts to some of the groups (a per-group script),
    whose results are then named ``kernel_overhead_<group>``."""
    root = Path(source.paths[0])
    groups = source.options.get("groups")
    runs, group_problems = discover(root, groups)
    if not runs:
        raise InputError(root, "no <kernel>/<probe>/ trace folders found "
                               "(expected [<group>/]<kernel>/<probe>/trace/event.log)")
    cells = [measure_cell(g, k, p, d) for g, k, p, d in runs]
    only = {c.group for c in cells}
    stem = f"{SECTION}_{only.pop()}" if groups and len(only) == 1 else SECTION
    gt = source.bundle.ground_truth(SECTION)
    for c in cells:
        c.ground_truth = _truth(gt, c.group, c.kernel, c.probe)
    return Measured(root, source.bundle, cells, stem, group_problems)
