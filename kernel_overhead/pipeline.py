"""Table 2: kernel slowdown and extra registers per kernel x probe, from benchmark-mode traces.

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

    python kernel_overhead/kernel_overhead.py [<root>] [--out DIR] [--json]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from neutrino_ae.atomic import write_text
from neutrino_ae.bundle.context import Bundle, bundle_of
from neutrino_ae.errors import InputError, NeutrinoAEError
from neutrino_ae.formats.eventlog import parse_event_log
from neutrino_ae.formats.kernelinfo import FEWER_REGISTERS, read_kernel_info, read_register_usage
from neutrino_ae.formats.tracedir import trace_dir_order_key
from neutrino_ae.report import style
from neutrino_ae.report.paths import missing_reason
from neutrino_ae.report.results import SectionResult, write_results

from .analysis import (  # noqa: F401  (re-exported for callers)
    FEWER_LEGEND,
    GROUP_LABELS,
    GROUPS,
    KERNEL_LABELS,
    KERNEL_ORDER,
    PAPER_REF,  # noqa: F401  (re-exported for callers)
    PROBE_ORDER,
    Cell,
    _order,
    _ordered_probes,
    _summary_rows,
    _truth,
    _truth_lines,
    _truth_value,
    long_table,
    regs_label,
    wide_table,
)
from .figures import draw_heatmap, render_html  # noqa: F401  (re-exported for callers)

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
    return sorted((probe_dir / d for d in _subdirs(probe_dir) if (probe_dir / d / "event.log").is_file()),
                  key=trace_dir_order_key)


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
        _read_registers(cell, tdir)
    values = np.concatenate(impacts) if impacts else np.empty(0)
    cell.used = int(values.size)
    if values.size:
        cell.slowdown = float(np.median(values))
        cell.impact_min, cell.impact_max = float(values.min()), float(values.max())
    elif not cell.problems:
        cell.problems.append(f"{probe_dir}: no successful [benchmark] launch (was --benchmark on?)")
    extras = [r["extra"] for r in cell.registers]
    cell.extra_regs = max(extras) if extras else None
    if cell.extra_regs is not None and cell.extra_regs < 0:
        cell.registers_note = FEWER_REGISTERS
    return cell


def _read_launches(cell: Cell, log_path: Path, offset: int) -> np.ndarray:
    """Record launch counts and failures on ``cell``; return the impacts that count."""
    log = parse_event_log(log_path)
    launches = log.complete_launches()
    if log.cut_launch is not None:
        cell.problems.append(f"{log_path}: ends mid-line (run killed?); launch {log.cut_launch} left out")
    cell.launches += len(launches)
    # Columns may be nullable (pd.NA); read them as float with NaN for "not logged".
    impact = launches["impact"].to_numpy(dtype=float, na_value=np.nan)
    rc = launches["rc"].to_numpy(dtype=float, na_value=np.nan)
    failed_flag = launches["failed"].to_numpy(dtype=bool)
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


# --------------------------------------------------------------------------------------------------
# Tables


# --------------------------------------------------------------------------------------------------
# Figure


# --------------------------------------------------------------------------------------------------
# Ground truth


# --------------------------------------------------------------------------------------------------
# Entry points


def analyze(root: str | Path, out_dir: str | Path, groups: Sequence[str] | None = None,
            stem: str | None = None, bundle: Bundle | None = None) -> SectionResult:
    """Build Table 2 from ``root`` and write figure, tables (CSV/Markdown/HTML) and JSON into ``out_dir``.

    ``groups`` restricts to some of ``cutlass_op``/``triton_op``/``pytorch_op``; ``stem`` names the
    output files (default ``kernel_overhead``, or ``kernel_overhead_<group>`` for one group). ``bundle``:
    the run's bundle; without it (a command line) the one holding ``root``, found from its path.
    """
    root = Path(root)
    out = Path(out_dir)
    runs, group_problems = discover(root, groups)
    if not runs:
        raise InputError(root, "no <kernel>/<probe>/ trace folders found "
                               "(expected [<group>/]<kernel>/<probe>/trace/event.log)")
    cells = [measure_cell(g, k, p, d) for g, k, p, d in runs]
    if stem is None:
        only = {c.group for c in cells}
        stem = f"{SECTION}_{only.pop()}" if groups and len(only) == 1 else SECTION
    bundle = bundle or bundle_of(root)
    synthetic = bundle.synthetic
    gt = bundle.ground_truth(SECTION)
    for c in cells:
        c.ground_truth = _truth(gt, c.group, c.kernel, c.probe)

    wide, longt = wide_table(cells), long_table(cells)
    title = f"{PAPER_REF}: kernel slowdown and extra registers"
    fig = draw_heatmap(cells, synthetic, title)
    files = style.save_figure_files(fig, out, stem, key="figure")
    files["html"] = write_text(out / f"{stem}.html", render_html(cells, title, synthetic))

    summary = _summary_rows(cells, bundle.kind)
    problems = group_problems + [p for c in cells for p in c.problems]
    failed = [f"{c.group}/{c.kernel}/{c.probe} launch {f['launch']} ({f['reason']})" for c in cells for f in c.failed]
    payload = {
        "paper_ref": PAPER_REF,
        "bundle_kind": bundle.kind,
        "synthetic": synthetic,
        "root": str(root),
        "probes": _ordered_probes(cells),
        "cells": [asdict(c) for c in cells],
        "failed_launches": failed,
        "problems": problems,
        "summary": summary,
    }
    tables = {stem: wide, f"{stem}_long": longt}
    written = write_results(out, stem, payload, input_path=root, tables=tables, bundle=bundle)
    files.update(written)
    text = _text(wide, cells, problems, failed, synthetic, files)
    return SectionResult(SECTION, payload, files, tables, summary, text)


def _text(wide: pd.DataFrame, cells: Sequence[Cell], problems: Sequence[str], failed: Sequence[str],
          synthetic: bool, files: dict[str, Path]) -> str:
    show = wide.drop(columns="notes")  # the text marks negatives in the cell and explains them below
    for col in show.columns:
        if col.endswith("slowdown"):
            show[col] = [("-" if pd.isna(v) else f"{v:.2f}x") for v in show[col]]
        elif col.endswith("+regs"):
            show[col] = [("-" if pd.isna(v) else regs_label(int(v))) for v in show[col]]
    lines = [f"{PAPER_REF}: kernel slowdown (median probed/pruned) and extra registers (probed - pruned)"
             + (" [SYNTHETIC sample data]" if synthetic else "")]
    lines.append(show.to_string(index=False))
    if any(c.registers_note for c in cells):
        lines.append(FEWER_LEGEND)
    lines += _truth_lines(cells)
    if failed:
        lines.append(f"failed launches (excluded): {len(failed)}")
        lines += [f"  {f}" for f in failed[:20]]
        if len(failed) > 20:
            lines.append(f"  ... {len(failed) - 20} more in the JSON")
    if problems:
        lines.append(f"missing or unusable inputs: {len(problems)}")
        lines += [f"  {p}" for p in problems]
    lines.append(f"wrote {files['figure']} and {files['html']}")
    return "\n".join(lines)


def analyze_bundle(bundle: Bundle, out_dir: str | Path) -> SectionResult:
    """The section entry point: Table 2 from the run's bundle."""
    return analyze(bundle.path("kernel_overhead"), out_dir, bundle=bundle)

