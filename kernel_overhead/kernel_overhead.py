"""Table 2: kernel slowdown and extra registers per kernel x probe, from benchmark-mode traces.

Input layout (the dynamic notebook's collection, ``<test>/<metric>/{stdout.log,trace}``)::

    <root>/{cutlass_op,triton_op,pytorch_op}/<kernel>/<probe>/trace/{event.log,kernel/<i>_<sha1>/process.log}

Per kernel x probe:

* slowdown = MEDIAN of ``impact`` (probed kernel time / pruned original time) over the launches'
  ``[benchmark] ... impact <r> <rc>`` lines. The median, not the mean, because one launch hit by
  a clock change or a context switch should not move a row of the table.
* launches that failed (``[exec] failed`` or a non-zero rc) are listed (launch index and why) and
  left out of the median; launches with no benchmark line at all are counted separately.
* extra registers = probed - pruned from each kernel folder's ``process.log`` (ptxas lines). When a
  trace holds several kernels the table shows the largest extra count; all of them are in the JSON.

Missing files (event.log, process.log, a probe's trace folder) are listed per kernel x probe and the
rest of the table is still produced.

    python kernel_overhead/kernel_overhead.py [<root>] [--out DIR] [--json]
"""

# ruff: noqa: E402  (imports follow the sys.path set-up that lets this file run as a script)
from __future__ import annotations

import argparse
import html
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a script: the repo root (parent of this folder) holds neutrino_ae.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm
from matplotlib.ticker import FuncFormatter

from neutrino_ae.atomic import write_text
from neutrino_ae.bundle import manifest as bundle
from neutrino_ae.errors import InputError, NeutrinoAEError
from neutrino_ae.formats.eventlog import parse_event_log
from neutrino_ae.formats.kernelinfo import read_kernel_info, read_register_usage
from neutrino_ae.report import style
from neutrino_ae.report.results import SectionResult, write_results
from neutrino_ae.report.script import add_output_args, emit, run_main

SECTION = "kernel_overhead"
PAPER_REF = "Table 2"
GROUPS = ("cutlass_op", "triton_op", "pytorch_op")
GROUP_LABELS = {"cutlass_op": "CUTLASS", "triton_op": "Triton", "pytorch_op": "PyTorch"}
PROBE_ORDER = ("block_sched", "gmem_bytes", "tensorop_count", "dmat")
# Paper row order; kernels not listed follow alphabetically.
KERNEL_ORDER = {
    "cutlass_op": ("gemm", "streamk", "gemm-streamk", "gemm_streamk", "conv"),
    "triton_op": ("gmm", "attn"),
    "pytorch_op": ("norm", "batchnorm", "layernorm", "softmax", "sum", "pool", "maxpool", "avgpool",
                   "embedding", "gather"),
}
KERNEL_LABELS = {
    "gemm": "GEMM", "streamk": "Stream-K GEMM", "gemm-streamk": "Stream-K GEMM", "gemm_streamk": "Stream-K GEMM",
    "conv": "Conv2D", "gmm": "Group GEMM", "attn": "FlashAttn-2", "norm": "Batch/LayerNorm",
    "batchnorm": "BatchNorm", "layernorm": "LayerNorm", "softmax": "Softmax", "sum": "Sum", "pool": "Max/AvgPool",
    "maxpool": "MaxPool", "avgpool": "AvgPool", "embedding": "Embedding", "gather": "Gather",
}


@dataclass
class Cell:
    """One kernel x probe measurement (one row of the long table)."""

    group: str
    kernel: str
    probe: str
    path: str
    trace_dirs: list[str] = field(default_factory=list)
    launches: int = 0
    used: int = 0
    slowdown: float | None = None
    impact_min: float | None = None
    impact_max: float | None = None
    failed: list[dict[str, Any]] = field(default_factory=list)
    no_benchmark: int = 0
    registers: list[dict[str, Any]] = field(default_factory=list)
    extra_regs: int | None = None
    problems: list[str] = field(default_factory=list)
    ground_truth: dict[str, Any] | None = None


def _order(names: Sequence[str], preferred: Sequence[str]) -> list[str]:
    rank = {n: i for i, n in enumerate(preferred)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))


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
    return sorted(probe_dir / d for d in _subdirs(probe_dir) if (probe_dir / d / "event.log").is_file())


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
    return cell


def _read_launches(cell: Cell, log_path: Path, offset: int) -> np.ndarray:
    """Record launch counts and failures on ``cell``; return the impacts that count."""
    launches = parse_event_log(log_path).launches
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
                               "builds_named": usage.by_name})
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
        raise InputError(root, "no such folder (expected kernel_overhead/ or one of its group folders)")
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


def _ordered_probes(cells: Sequence[Cell]) -> list[str]:
    return _order(sorted({c.probe for c in cells}), PROBE_ORDER)


def long_table(cells: Sequence[Cell]) -> pd.DataFrame:
    rows = []
    for c in cells:
        regs = c.registers
        rows.append({
            "group": GROUP_LABELS.get(c.group, c.group), "kernel": c.kernel, "probe": c.probe,
            "launches": c.launches, "used": c.used, "failed": len(c.failed), "no_benchmark": c.no_benchmark,
            "slowdown": np.nan if c.slowdown is None else c.slowdown,
            "impact_min": np.nan if c.impact_min is None else c.impact_min,
            "impact_max": np.nan if c.impact_max is None else c.impact_max,
            "pruned_regs": regs[0]["pruned"] if len(regs) == 1 else np.nan,
            "probed_regs": regs[0]["probed"] if len(regs) == 1 else np.nan,
            "extra_regs": np.nan if c.extra_regs is None else c.extra_regs,
            "kernels_with_regs": len(regs),
            "problems": "; ".join(c.problems),
        })
    return pd.DataFrame(rows)


def wide_table(cells: Sequence[Cell]) -> pd.DataFrame:
    """Table 2 layout: one row per kernel, ``<probe> slowdown`` and ``<probe> +regs`` per probe."""
    probes = _ordered_probes(cells)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for c in cells:
        row = rows.setdefault((c.group, c.kernel), {"group": GROUP_LABELS.get(c.group, c.group),
                                                    "kernel": KERNEL_LABELS.get(c.kernel, c.kernel)})
        row[f"{c.probe} slowdown"] = np.nan if c.slowdown is None else c.slowdown
        row[f"{c.probe} +regs"] = np.nan if c.extra_regs is None else c.extra_regs
    cols = ["group", "kernel"] + [f"{p} {k}" for p in probes for k in ("slowdown", "+regs")]
    return pd.DataFrame(list(rows.values())).reindex(columns=cols)


def render_html(cells: Sequence[Cell], title: str, synthetic: bool) -> str:
    """A standalone HTML page with Table 2 (probe headers spanning slowdown and +regs)."""
    probes = _ordered_probes(cells)
    by_key = {(c.group, c.kernel, c.probe): c for c in cells}
    kernels: list[tuple[str, str]] = []
    for c in cells:
        if (c.group, c.kernel) not in kernels:
            kernels.append((c.group, c.kernel))
    esc = html.escape
    out = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>", f"<title>{esc(title)}</title>",
           "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
           "th,td{border:1px solid #999;padding:3px 8px;text-align:right}th{background:#eee}"
           "td.k,th.k{text-align:left}td.na{color:#999;text-align:center}"
           ".synthetic{color:#a00000;font-weight:bold}</style></head><body>",
           f"<h2>{esc(title)}</h2>"]
    if synthetic:
        out.append(f"<p class='synthetic'>{esc(style.SYNTHETIC_LABEL)}</p>")
    out.append("<table><thead><tr><th class='k' rowspan='2'>group</th><th class='k' rowspan='2'>kernel</th>")
    out += [f"<th colspan='2'>{esc(p)}</th>" for p in probes]
    out.append("</tr><tr>" + "<th>slowdown</th><th>+regs</th>" * len(probes) + "</tr></thead><tbody>")
    groups = [g for g, _ in kernels]
    for i, (g, k) in enumerate(kernels):
        out.append("<tr>")
        if i == 0 or groups[i - 1] != g:
            out.append(f"<td class='k' rowspan='{groups.count(g)}'>{esc(GROUP_LABELS.get(g, g))}</td>")
        out.append(f"<td class='k'>{esc(KERNEL_LABELS.get(k, k))}</td>")
        for p in probes:
            c = by_key.get((g, k, p))
            tip = esc("; ".join(c.problems + [f"{len(c.failed)} failed launch(es)"] * bool(c.failed))) if c else ""
            if c is None or c.slowdown is None:
                out.append(f"<td class='na' title='{tip or 'not measured'}'>&ndash;</td>")
            else:
                out.append(f"<td title='{tip}'>{c.slowdown:.2f}&times;{'*' if c.failed else ''}</td>")
            if c is None or c.extra_regs is None:
                out.append(f"<td class='na' title='{tip or 'not measured'}'>&ndash;</td>")
            else:
                out.append(f"<td>{c.extra_regs:+d}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    out.append("<p>slowdown = median over launches of probed / pruned kernel time; +regs = probed &minus; pruned "
               "registers (ptxas). * = some launches failed and were left out. &ndash; = not measured "
               "(hover for the reason).</p></body></html>")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------------
# Figure


def draw_heatmap(cells: Sequence[Cell], synthetic: bool, title: str):
    """Kernels x probes heatmap of slowdown (log colour), each cell labelled with slowdown and +regs."""
    probes = _ordered_probes(cells)
    kernels: list[tuple[str, str]] = []
    for c in cells:
        if (c.group, c.kernel) not in kernels:
            kernels.append((c.group, c.kernel))
    by_key = {(c.group, c.kernel, c.probe): c for c in cells}
    grid = np.full((len(kernels), len(probes)), np.nan)
    for i, (g, k) in enumerate(kernels):
        for j, p in enumerate(probes):
            c = by_key.get((g, k, p))
            if c is not None and c.slowdown is not None:
                grid[i, j] = c.slowdown
    with style.style_context():
        fig = style.new_figure(1.6 + 1.5 * max(len(probes), 2), 1.4 + 0.5 * max(len(kernels), 2))
        ax = fig.add_subplot(1, 1, 1)
        ax.grid(False)
        finite = grid[np.isfinite(grid) & (grid > 0)]
        vmax = max(float(finite.max()) if finite.size else 2.0, 1.05)
        vmin = min(float(finite.min()) if finite.size else 1.0, 1.0)
        cmap = matplotlib.colormaps["YlOrRd"].with_extremes(bad="#dddddd")
        im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=LogNorm(vmin=max(vmin, 1e-3), vmax=vmax),
                       aspect="auto")
        for i, (g, k) in enumerate(kernels):
            for j, p in enumerate(probes):
                c = by_key.get((g, k, p))
                if c is None or c.slowdown is None:
                    label = "n/a"
                else:
                    label = f"{c.slowdown:.2f}x" + ("*" if c.failed else "")
                if c is not None and c.extra_regs is not None:
                    label += f"\n{c.extra_regs:+d} regs"
                elif c is not None and c.slowdown is not None:
                    label += "\nregs n/a"
                dark = np.isfinite(grid[i, j]) and LogNorm(vmin=max(vmin, 1e-3), vmax=vmax)(grid[i, j]) > 0.6
                ax.text(j, i, label, ha="center", va="center", fontsize=8.5, color="white" if dark else "black")
        ax.set_xticks(range(len(probes)), probes)
        ax.xaxis.tick_top()
        ax.set_yticks(range(len(kernels)), [f"{GROUP_LABELS.get(g, g)}: {KERNEL_LABELS.get(k, k)}"
                                            for g, k in kernels])
        for i in range(1, len(kernels)):
            if kernels[i][0] != kernels[i - 1][0]:
                ax.axhline(i - 0.5, color="black", linewidth=1.5)
        cbar = fig.colorbar(im, ax=ax, fraction=0.05, pad=0.02)
        cbar.set_label("slowdown (probed / pruned)")
        # Plain "2x" labels instead of LogNorm's default 2x10^0 notation.
        times = FuncFormatter(lambda v, _: f"{v:g}x")
        cbar.ax.yaxis.set_major_formatter(times)
        cbar.ax.yaxis.set_minor_formatter(times)
        if any(c.failed for c in cells):
            fig.text(0.01, 0.005, "* some launches failed and were left out (see JSON)", fontsize=8,
                     ha="left", va="bottom")
        ax.set_title(title, pad=24)
        style.mark_synthetic(fig, synthetic)
    return fig


# --------------------------------------------------------------------------------------------------
# Ground truth


def _truth(gt: dict[str, Any] | None, group: str, kernel: str, probe: str) -> dict[str, Any] | None:
    """The sample generator's injected values for one cell (its ``rows`` are per compiled kernel).

    A test folder can hold several kernels (``norm``: two BatchNorm kernels and LayerNorm) whose
    launches the event.log does not name, so the measured cell is over all of them: the truth is a
    single slowdown only for single-kernel tests, otherwise the range of the kernels' slowdowns; the
    extra-register truth is the largest, like the table.
    """
    rows = gt.get("rows") if isinstance(gt, dict) else None
    if not isinstance(rows, list):
        return None
    mine = [r for r in rows if isinstance(r, dict) and r.get("probe") == probe
            and r.get("suite", r.get("group")) == group and r.get("test", r.get("kernel")) == kernel]
    if not mine:
        return None
    slow = [float(r["model_slowdown"]) for r in mine if r.get("model_slowdown") is not None]
    extra = [int(r["extra_regs"]) for r in mine if r.get("extra_regs") is not None]
    return {
        "kernels": len(mine),
        "slowdown": slow[0] if len(mine) == 1 and slow else None,
        "slowdown_range": [min(slow), max(slow)] if slow else None,
        "extra_registers": max(extra) if extra else None,
        "failed_launches": sum(int(r.get("failed_launches", 0)) for r in mine),
    }


def _truth_value(t: dict[str, Any] | None, name: str) -> Any:
    return t.get(name) if t else None


# --------------------------------------------------------------------------------------------------
# Entry points


def analyze(root: str | Path, out_dir: str | Path, groups: Sequence[str] | None = None,
            stem: str | None = None) -> SectionResult:
    """Build Table 2 from ``root`` and write figure, tables (CSV/Markdown/HTML) and JSON into ``out_dir``.

    ``groups`` restricts to some of ``cutlass_op``/``triton_op``/``pytorch_op``; ``stem`` names the
    output files (default ``kernel_overhead``, or ``kernel_overhead_<group>`` for one group).
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
    synthetic = bundle.is_synthetic(root)
    gt = bundle.ground_truth(root, SECTION)
    for c in cells:
        c.ground_truth = _truth(gt, c.group, c.kernel, c.probe)

    wide, longt = wide_table(cells), long_table(cells)
    title = f"{PAPER_REF}: kernel slowdown and extra registers"
    fig = draw_heatmap(cells, synthetic, title)
    files: dict[str, Path] = {}
    png, *rest = style.save_figure(fig, out, stem)
    files["figure"] = png
    for extra in rest:
        files[f"figure.{extra.suffix[1:]}"] = extra
    files["html"] = write_text(out / f"{stem}.html", render_html(cells, title, synthetic))

    summary = _summary_rows(cells)
    problems = group_problems + [p for c in cells for p in c.problems]
    failed = [f"{c.group}/{c.kernel}/{c.probe} launch {f['launch']} ({f['reason']})" for c in cells for f in c.failed]
    payload = {
        "paper_ref": PAPER_REF,
        "bundle_kind": bundle.bundle_kind(root),
        "synthetic": synthetic,
        "root": str(root),
        "probes": _ordered_probes(cells),
        "cells": [asdict(c) for c in cells],
        "failed_launches": failed,
        "problems": problems,
        "summary": summary,
    }
    tables = {stem: wide, f"{stem}_long": longt}
    written = write_results(out, stem, payload, input_path=root, tables=tables)
    files.update(written)
    text = _text(wide, cells, problems, failed, synthetic, files)
    return SectionResult(SECTION, payload, files, tables, summary, text)


def _summary_rows(cells: Sequence[Cell]) -> list[dict[str, Any]]:
    rows = []
    for c in cells:
        base = f"{c.group}.{c.kernel}.{c.probe}"
        rows.append({"key": f"{base}.slowdown", "paper_ref": PAPER_REF, "value": c.slowdown, "unit": "x",
                     "ground_truth": _truth_value(c.ground_truth, "slowdown")})
        rows.append({"key": f"{base}.extra_registers", "paper_ref": PAPER_REF, "value": c.extra_regs,
                     "unit": "registers",
                     "ground_truth": _truth_value(c.ground_truth, "extra_registers")})
    return rows


def _text(wide: pd.DataFrame, cells: Sequence[Cell], problems: Sequence[str], failed: Sequence[str],
          synthetic: bool, files: dict[str, Path]) -> str:
    show = wide.copy()
    for col in show.columns:
        if col.endswith("slowdown"):
            show[col] = [("-" if pd.isna(v) else f"{v:.2f}x") for v in show[col]]
        elif col.endswith("+regs"):
            show[col] = [("-" if pd.isna(v) else f"{int(v):+d}") for v in show[col]]
    lines = [f"{PAPER_REF}: kernel slowdown (median probed/pruned) and extra registers"
             + (" [SYNTHETIC sample data]" if synthetic else "")]
    lines.append(show.to_string(index=False))
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


def _truth_lines(cells: Sequence[Cell]) -> list[str]:
    """Measured vs injected (sample bundles): slowdown deviation, range hits, register matches."""
    single = [(c, c.ground_truth["slowdown"]) for c in cells
              if c.ground_truth and c.ground_truth["slowdown"] is not None and c.slowdown is not None]
    multi = [(c, c.ground_truth["slowdown_range"]) for c in cells
             if c.ground_truth and c.ground_truth["slowdown"] is None and c.ground_truth["slowdown_range"]
             and c.slowdown is not None]
    regs = [(c, c.ground_truth["extra_registers"]) for c in cells
            if c.ground_truth and c.ground_truth["extra_registers"] is not None and c.extra_regs is not None]
    lines = []
    if single:
        err = [abs(c.slowdown - t) / t for c, t in single]
        lines.append(f"ground truth: slowdown of {len(single)} single-kernel cells within {max(err):.1%} of the "
                     f"injected model (median deviation {float(np.median(err)):.1%})")
    if multi:
        # Launch-to-launch noise can put the median a little outside the noise-free per-kernel range.
        inside = sum(lo * 0.97 <= c.slowdown <= hi * 1.03 for c, (lo, hi) in multi)
        lines.append(f"ground truth: {inside}/{len(multi)} multi-kernel cells inside the injected per-kernel "
                     "slowdown range (+-3%)")
    if regs:
        same = sum(c.extra_regs == t for c, t in regs)
        lines.append(f"ground truth: extra registers equal the injected value in {same}/{len(regs)} cells")
    return lines


def build_parser(default_root: Path, prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=f"{PAPER_REF}: kernel slowdown and extra registers "
                                     "from Neutrino benchmark-mode traces.")
    parser.add_argument("root", nargs="?", type=Path, default=default_root,
                        help=f"kernel_overhead folder or one group folder (default: {default_root})")
    add_output_args(parser)
    return parser


def analyze_bundle(bundle_root: str | Path, out_dir: str | Path) -> SectionResult:
    """The section entry point: Table 2 from a bundle root."""
    return analyze(Path(bundle_root) / "kernel_overhead", out_dir)


def main(argv: Sequence[str] | None = None, groups: Sequence[str] | None = None,
         default_root: Path | None = None, prog: str | None = None) -> int:
    args = build_parser(default_root or Path(__file__).resolve().parent, prog).parse_args(argv)
    emit(analyze(args.root, args.out, groups=groups), args.json)
    return 0


def group_main(group: str, argv: Sequence[str] | None = None) -> int:
    """CLI of the per-group wrappers (``kernel_overhead/<group>/overhead.py``): that group's rows only."""
    here = Path(__file__).resolve().parent / group
    return main(argv, groups=[group], default_root=here, prog=f"{group}/overhead.py")


if __name__ == "__main__":
    sys.exit(run_main(main))
