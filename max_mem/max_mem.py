"""Fig. 11: the largest probe memory of each model x probe vs. the workload's own peak memory.

Input layout (the dynamic notebook's ``--memusage`` runs of each torch.compile'd sub-module)::

    <root>/<model>/<probe>/<sub>/stdout.log              workload prints "max memory: <bytes>"
    <root>/<model>/<probe>/<sub>/<tracedir>/event.log    "[exec] probe-mem <bytes> (bytes)" per launch

Per model x probe:

* probe memory = the maximum ``[exec] probe-mem`` over ALL launches of ALL trace folders of ALL
  sub-modules (each launch allocates its probe buffers anew, so the peak is one launch's need);
* workload memory = the maximum of EVERY ``max memory:`` line of every sub-module's stdout.log
  (the artifact's loop stopped at the first line of each file).

A missing stdout.log / event.log, a sub-module without trace folder or an unreadable value is listed
for its model and the rest is still reported.

    python max_mem/max_mem.py [<root>] [--out DIR] [--json]
"""

# ruff: noqa: E402  (imports follow the sys.path set-up that lets this file run as a script)
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    # Run as a script: the repo root (parent of this folder) holds neutrino_ae.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from neutrino_ae.bundle import manifest as bundle
from neutrino_ae.errors import InputError
from neutrino_ae.formats.eventlog import parse_event_log
from neutrino_ae.report import style
from neutrino_ae.report.results import SectionResult, write_results
from neutrino_ae.report.script import add_output_args, emit, run_main

SECTION = "max_mem"
PAPER_REF = "Fig. 11"
MODEL_ORDER = ("resnet-bs32", "sd-bs1", "mamba-bs32", "llama1b-bs32", "llama3b-bs32", "llama8b-bs32",
               "llama8b-bs128", "llama8b-bs256")
PROBE_ORDER = ("block_sched", "gmem_bytes", "tensorop_count", "dmat")
MAX_MEMORY_TAG = "max memory:"
WORKLOAD_COLOR = "#404040"
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(n: float | None) -> str:
    """``1536`` -> ``'1.5 KiB'`` (binary units, three significant digits)."""
    if n is None or not np.isfinite(n):
        return "-"
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    return f"{int(value)} B" if unit == 0 else f"{value:.3g} {_UNITS[unit]}"


@dataclass
class Entry:
    """One model x probe: peaks and where they came from."""

    model: str
    probe: str
    path: str
    subs: list[str] = field(default_factory=list)
    trace_dirs: int = 0
    launches: int = 0
    probe_mem_max: int | None = None
    probe_mem_source: str | None = None
    workload_max: int | None = None
    workload_source: str | None = None
    problems: list[str] = field(default_factory=list)
    ground_truth: dict[str, Any] | None = None

    @property
    def ratio(self) -> float | None:
        if self.probe_mem_max is None or not self.workload_max:
            return None
        return self.probe_mem_max / self.workload_max


def read_max_memory(path: str | Path) -> tuple[int | None, list[str]]:
    """Largest ``max memory: <bytes>`` value in a stdout.log, and problems (unreadable values, no line)."""
    path = Path(path)
    text = path.read_bytes().decode("utf-8", errors="replace")
    best: int | None = None
    problems = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line.startswith(MAX_MEMORY_TAG):
            continue
        raw = line[len(MAX_MEMORY_TAG):].strip()
        try:
            value = float(raw.split()[0]) if raw else float("nan")
        except ValueError:
            value = float("nan")
        if not np.isfinite(value) or value < 0:
            problems.append(f"{path}: line {lineno}: {line[:80]!r} is not a byte count")
            continue
        best = int(value) if best is None else max(best, int(value))
    if best is None and not problems:
        problems.append(f"{path}: no '{MAX_MEMORY_TAG} <bytes>' line")
    return best, problems


def _subdirs(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def _order(names: Sequence[str], preferred: Sequence[str]) -> list[str]:
    rank = {n: i for i, n in enumerate(preferred)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))


def measure_entry(model: str, probe: str, probe_dir: str | Path) -> Entry:
    """Peaks of one ``<model>/<probe>/`` folder over all its sub-modules."""
    probe_dir = Path(probe_dir)
    entry = Entry(model, probe, str(probe_dir))
    subs = _subdirs(probe_dir)
    if not subs:
        entry.problems.append(f"{probe_dir}: no sub-module folders")
    for sub in subs:
        entry.subs.append(sub.name)
        stdout = sub / "stdout.log"
        if stdout.is_file():
            value, problems = read_max_memory(stdout)
            entry.problems += problems
            if value is not None and (entry.workload_max is None or value > entry.workload_max):
                entry.workload_max, entry.workload_source = value, str(stdout)
        else:
            entry.problems.append(f"{stdout}: missing, workload memory of this sub-module unknown")
        tdirs = _subdirs(sub)
        if not tdirs:
            entry.problems.append(f"{sub}: no trace folder, probe memory of this sub-module unknown")
        for tdir in tdirs:
            log = tdir / "event.log"
            if not log.is_file():
                entry.problems.append(f"{log}: missing")
                continue
            entry.trace_dirs += 1
            mem = parse_event_log(log).launches["probe_mem"].to_numpy(dtype=float, na_value=np.nan)
            entry.launches += int(mem.size)
            mem = mem[np.isfinite(mem)]
            if mem.size and (entry.probe_mem_max is None or mem.max() > entry.probe_mem_max):
                entry.probe_mem_max, entry.probe_mem_source = int(mem.max()), str(log)
    if entry.probe_mem_max is None and entry.trace_dirs:
        entry.problems.append(f"{probe_dir}: no '[exec] probe-mem' line in any event.log")
    return entry


def discover(root: str | Path) -> tuple[list[tuple[str, str, Path]], dict[str, list[str]]]:
    """``(model, probe, folder)`` runs under ``root``, and models that have no probe folder at all."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(root, "no such folder (expected max_mem/<model>/<probe>/<sub>/)")
    runs, empty = [], {}
    for model in _order([p.name for p in _subdirs(root)], MODEL_ORDER):
        probes = _order([p.name for p in _subdirs(root / model)], PROBE_ORDER)
        if not probes:
            empty[model] = [f"{root / model}: no <probe>/ folders, model not measured"]
        runs += [(model, probe, root / model / probe) for probe in probes]
    return runs, empty


def table(entries: Sequence[Entry]) -> pd.DataFrame:
    rows = []
    for e in entries:
        rows.append({
            "model": e.model, "probe": e.probe,
            "probe_mem_bytes": e.probe_mem_max, "probe_mem": human_bytes(e.probe_mem_max),
            "workload_bytes": e.workload_max, "workload": human_bytes(e.workload_max),
            "probe_over_workload": np.nan if e.ratio is None else e.ratio,
            "subs": len(e.subs), "trace_dirs": e.trace_dirs, "launches": e.launches, "problems": len(e.problems),
        })
    df = pd.DataFrame(rows)
    for col in ("probe_mem_bytes", "workload_bytes"):
        df[col] = df[col].astype("Int64")
    return df


def _models_probes(entries: Sequence[Entry]) -> tuple[list[str], list[str]]:
    models: list[str] = []
    for e in entries:
        if e.model not in models:
            models.append(e.model)
    return models, _order(sorted({e.probe for e in entries}), PROBE_ORDER)


def workload_peaks(entries: Sequence[Entry]) -> dict[str, int | None]:
    """Per model, the workload's peak over all its probe runs (the run under each probe re-measures it)."""
    peaks: dict[str, int | None] = {}
    for e in entries:
        cur = peaks.get(e.model)
        if e.workload_max is not None and (cur is None or e.workload_max > cur):
            peaks[e.model] = e.workload_max
        else:
            peaks.setdefault(e.model, cur)
    return peaks


def _byte_ticks(lo: float, hi: float) -> list[float]:
    """Powers of 1024 and their x4/x16/x64/x256 steps, thinned to at most ~8 ticks."""
    ticks = [1024.0 ** k * m for k in range(7) for m in (1, 4, 16, 64, 256)]
    ticks = [t for t in ticks if lo <= t <= hi]
    step = max(1, int(np.ceil(len(ticks) / 8)))
    return ticks[::step]


def draw(entries: Sequence[Entry], synthetic: bool):
    """Grouped bars on a log axis: per model one bar per probe plus the workload's own peak."""
    models, probes = _models_probes(entries)
    by_key = {(e.model, e.probe): e for e in entries}
    peaks = workload_peaks(entries)
    series = [(p, [by_key[(m, p)].probe_mem_max if (m, p) in by_key else None for m in models], color)
              for p, color in zip(probes, style.PALETTE * 4, strict=False)]
    series.append(("workload peak", [peaks.get(m) for m in models], WORKLOAD_COLOR))
    values = [v for _, vals, _ in series for v in vals if v]
    with style.style_context():
        fig = style.new_figure(max(7.0, 1.3 * len(models) + 2.5), 5.0, layout="constrained")
        # Keep a strip at the bottom free for the synthetic-data footer.
        fig.get_layout_engine().set(rect=(0, 0.035, 1, 0.965))
        ax = fig.add_subplot(1, 1, 1)
        x = np.arange(len(models))
        width = 0.84 / len(series)
        for k, (name, vals, color) in enumerate(series):
            pos = x - 0.42 + width * (k + 0.5)
            heights = np.array([v if v else np.nan for v in vals], dtype=float)
            bars = ax.bar(pos, heights, width, label=name, color=color,
                          hatch="//" if name == "workload peak" else None, edgecolor="white", linewidth=0.5)
            ax.bar_label(bars, labels=[human_bytes(v) if v else "" for v in vals], rotation=90, fontsize=7,
                         padding=2)
            for xi, v in zip(pos, vals, strict=True):
                if not v:
                    ax.text(xi, 1.0, "n/a", rotation=90, fontsize=7, ha="center", va="bottom", color="#a00000")
        ax.set_yscale("log")
        lo = min(values) / 4 if values else 1.0
        hi = max(values) * 24 if values else 1024.0  # headroom for the rotated value labels
        ax.set_ylim(lo, hi)
        ax.yaxis.set_major_locator(FixedLocator(_byte_ticks(lo, hi)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: human_bytes(v)))
        ax.yaxis.set_minor_formatter(NullFormatter())
        # "llama8b-bs128" -> two lines, so long model names never run into each other.
        ax.set_xticks(x, [m.replace("-bs", "\nbs", 1) for m in models])
        ax.set_ylabel("memory (log scale)")
        ax.set_title(f"{PAPER_REF}: maximum probe memory vs. workload peak memory")
        ax.grid(axis="x", visible=False)
        fig.legend(loc="outside right upper", frameon=False, fontsize=9)
        style.mark_synthetic(fig, synthetic)
    return fig


def _truth(gt: dict[str, Any] | None, model: str, probe: str) -> dict[str, Any] | None:
    """The sample generator's injected peaks for one model x probe, if recorded."""
    if not isinstance(gt, dict):
        return None
    for container in (gt.get("models"), gt.get("entries"), gt):
        if isinstance(container, list):
            for row in container:
                if isinstance(row, dict) and row.get("model") == model and row.get("probe") == probe:
                    return row
        elif isinstance(container, dict):
            node = container.get(model)
            if isinstance(node, dict):
                sub = node.get(probe)
                if isinstance(sub, dict):
                    return sub
                workload = {k: v for k, v in node.items() if not isinstance(v, dict)}
                return workload or None
    return None


def _truth_value(t: dict[str, Any] | None, *names: str) -> Any:
    if not t:
        return None
    for n in names:
        if n in t:
            return t[n]
    return None


_PROBE_TRUTH = ("probe_mem_max", "probe_mem", "max_probe_mem", "probe_mem_bytes", "probe_bytes")
_WORKLOAD_TRUTH = ("workload_max", "workload_bytes", "max_memory", "workload_mem", "workload")


def analyze(root: str | Path, out_dir: str | Path) -> SectionResult:
    """Fig. 11 from ``root`` (the max_mem folder); writes figure, table and JSON into ``out_dir``."""
    root = Path(root)
    out = Path(out_dir)
    runs, problems_by_model = discover(root)
    if not runs:
        raise InputError(root, "no <model>/<probe>/ folders found")
    entries = [measure_entry(m, p, d) for m, p, d in runs]
    synthetic = bundle.is_synthetic(root)
    gt = bundle.ground_truth(root, SECTION)
    for e in entries:
        e.ground_truth = _truth(gt, e.model, e.probe)

    df = table(entries)
    fig = draw(entries, synthetic)
    files: dict[str, Path] = {}
    png, *rest = style.save_figure(fig, out, SECTION)
    files["figure"] = png
    for extra in rest:
        files[f"figure.{extra.suffix[1:]}"] = extra
    for e in entries:
        if e.problems:
            problems_by_model.setdefault(e.model, []).extend(e.problems)
    summary = []
    for e in entries:
        key = f"{e.model}.{e.probe}"
        summary.append({"key": f"{key}.probe_mem_max", "paper_ref": PAPER_REF, "value": e.probe_mem_max,
                        "unit": "bytes", "ground_truth": _truth_value(e.ground_truth, *_PROBE_TRUTH)})
        summary.append({"key": f"{key}.workload_max", "paper_ref": PAPER_REF, "value": e.workload_max,
                        "unit": "bytes", "ground_truth": _truth_value(e.ground_truth, *_WORKLOAD_TRUTH)})
        summary.append({"key": f"{key}.probe_over_workload", "paper_ref": PAPER_REF, "value": e.ratio,
                        "unit": "ratio", "ground_truth": None})
    payload = {
        "paper_ref": PAPER_REF,
        "bundle_kind": bundle.bundle_kind(root),
        "synthetic": synthetic,
        "root": str(root),
        "entries": [{**asdict(e), "ratio": e.ratio} for e in entries],
        "workload_peaks": workload_peaks(entries),
        "problems_by_model": problems_by_model,
        "summary": summary,
    }
    files.update(write_results(out, SECTION, payload, input_path=root, tables={SECTION: df}))
    return SectionResult(SECTION, payload, files, {SECTION: df}, summary,
                         _text(entries, df, problems_by_model, synthetic, files["figure"]))


def _text(entries: Sequence[Entry], df: pd.DataFrame, problems: dict[str, list[str]], synthetic: bool,
          figure: Path) -> str:
    lines = [f"{PAPER_REF}: maximum probe memory vs. workload peak" + (" [SYNTHETIC sample data]" if synthetic else "")]
    show = df[["model", "probe", "probe_mem", "workload", "probe_over_workload"]].copy()
    show["probe_over_workload"] = [("-" if pd.isna(v) else f"{v:.3g}") for v in show["probe_over_workload"]]
    lines.append(show.to_string(index=False))
    for what, names, attr in (("probe-memory", _PROBE_TRUTH, "probe_mem_max"),
                              ("workload", _WORKLOAD_TRUTH, "workload_max")):
        checked = []
        for e in entries:
            t = _truth_value(e.ground_truth, *names)
            if t is not None and getattr(e, attr) is not None:
                checked.append(getattr(e, attr) == int(t))
        if checked:
            lines.append(f"ground truth: {sum(checked)}/{len(checked)} {what} peaks equal the injected value")
    if problems:
        lines.append("missing or unusable inputs (the rest is reported):")
        for model, items in problems.items():
            lines.append(f"  {model}: {len(items)}")
            lines += [f"    {p}" for p in items]
    lines.append(f"wrote {figure}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    default_root = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=f"{PAPER_REF}: maximum probe memory vs. workload memory.")
    parser.add_argument("root", nargs="?", type=Path, default=default_root,
                        help=f"max_mem folder: <model>/<probe>/<sub>/ (default: {default_root})")
    add_output_args(parser)
    return parser


def analyze_bundle(bundle_root: str | Path, out_dir: str | Path) -> SectionResult:
    """The section entry point: Fig. 11 from a bundle root."""
    return analyze(Path(bundle_root) / "max_mem", out_dir)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    emit(analyze(args.root, args.out), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
