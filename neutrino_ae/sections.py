"""The six paper sections of the static evaluation: what they read, and how to run one with caching.

This registry is the single place that knows which bundle files feed which per-figure analysis.
The notebooks (static and dynamic) and the benchmarks call :func:`run_section`; nobody else needs
to know the analyses' signatures.

>>> from neutrino_ae import sections
>>> [s.name for s in sections.SECTIONS]                       # the original notebook's order
['block_sched', 'dmat', 'kernel_overhead', 'max_mem', 'exposed_latency', 'warp_sched']
>>> res = sections.run_section("dmat", "traces/", "results/")  # doctest: +SKIP
>>> rows = sections.summary_rows([res])                       # doctest: +SKIP

Output of a section goes to ``<output_dir>/<name>/``. After the analysis succeeds, a small record
``<output_dir>/<name>/section-run.json`` is written last (atomically): it lists the result's files,
tables, summary rows and text plus a fingerprint of the inputs. A later call with ``force=False``
rebuilds the :class:`SectionResult` from that record instead of recomputing, as long as the
record belongs to the same bundle, its inputs and the analysis' source file are unchanged (file
count, total size, newest mtime) and every listed file still exists.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from neutrino_ae.atomic import atomic_open, write_json
from neutrino_ae.bundle import manifest as _bundle
from neutrino_ae.errors import InputError, NeutrinoAEError
from neutrino_ae.report.results import SectionResult

#: The repository root: the per-figure folders (``block_sched/`` ...) are importable from here.
REPO_ROOT = Path(__file__).resolve().parents[1]

RECORD = "section-run.json"
RECORD_VERSION = 1


@dataclass(frozen=True)
class Section:
    """One paper result.

    ``inputs`` are paths relative to the bundle root; a ``*`` makes an entry a glob that must match
    at least one path. ``optional_inputs`` are globs the analysis uses when present (and reports
    when absent); they take part in the cache fingerprint. ``runtime`` is the wall time measured
    on a 2-core machine on the small and the paper-scale sample bundles (the paper's own bundle
    was not available offline; it is about three times the paper-scale sample's size).
    """

    name: str
    title: str
    paper_ref: str
    runtime: str
    inputs: tuple[str, ...]
    module: str
    call: Callable[[Any, Path, Path], SectionResult]
    optional_inputs: tuple[str, ...] = ()

    def input_paths(self, bundle_root: str | os.PathLike[str]) -> list[Path]:
        """The concrete input paths in ``bundle_root``; the first missing one raises InputError."""
        root = Path(bundle_root)
        found: list[Path] = []
        for rel in self.inputs:
            if "*" in rel:
                matches = sorted(root.glob(rel))
                if not matches:
                    raise InputError(root / rel, f"no file matches (needed by section {self.name}, {self.paper_ref})")
                found.extend(matches)
            else:
                path = root / rel
                if not path.exists():
                    raise InputError(path, f"missing (needed by section {self.name}, {self.paper_ref})")
                found.append(path)
        return found


# --------------------------------------------------------------------------------------------- adapters
# One adapter per analysis: it maps bundle paths onto the analysis function's own arguments.


def _block_sched(mod: Any, root: Path, out: Path) -> SectionResult:
    # The main trace (the paper's torch.zeros run) plus, when the bundle has them, the two optimised
    # variants of Sec. 4.5 (sample bundles and dynamic runs); the analysis labels them by folder.
    main = sorted((root / "block_sched").glob("*/result/*.bin"))
    variants = sorted(d for d in (root / "block_sched" / "variants").glob("*/*") if (d / "result").is_dir())
    return mod.block_sched([*main, *variants], out)


def _dmat(mod: Any, root: Path, out: Path) -> SectionResult:
    return mod.analyze(root / "dmat", out)


def _kernel_overhead(mod: Any, root: Path, out: Path) -> SectionResult:
    return mod.analyze(root / "kernel_overhead", out)


def _max_mem(mod: Any, root: Path, out: Path) -> SectionResult:
    return mod.analyze(root / "max_mem", out)


def _exposed_latency(mod: Any, root: Path, out: Path) -> SectionResult:
    return mod.analyze([root / "exposed_latency"], out)


def _warp_sched(mod: Any, root: Path, out: Path) -> SectionResult:
    return mod.warp_sched(root / "warp_sched", out)


SECTIONS: tuple[Section, ...] = (
    Section(
        name="block_sched", title="Block scheduling cost", paper_ref="Sec. 4.5",
        runtime="5 s small sample, 6 s paper-scale sample",
        inputs=("block_sched/*/result/*.bin",),
        module="block_sched.block_sched", call=_block_sched,
    ),
    Section(
        name="dmat", title="Densified memory access timeline (DMAT)", paper_ref="Fig. 1, Fig. 10a/b/c",
        runtime="3 s small sample, 16 s paper-scale sample",
        inputs=("dmat/fig1.dmat", "dmat/fig10a.dmat", "dmat/fig10b.dmat", "dmat/fig10c.dmat"),
        module="dmat.dmat", call=_dmat,
    ),
    Section(
        name="kernel_overhead", title="Kernel slowdown and additional registers", paper_ref="Table 2",
        runtime="1 s small sample, 1 s paper-scale sample",
        inputs=("kernel_overhead/cutlass_op", "kernel_overhead/triton_op", "kernel_overhead/pytorch_op"),
        module="kernel_overhead.kernel_overhead", call=_kernel_overhead,
    ),
    Section(
        name="max_mem", title="Maximum probe memory usage", paper_ref="Fig. 11",
        runtime="1.5 s small sample, 2 s paper-scale sample",
        inputs=("max_mem",),
        module="max_mem.max_mem", call=_max_mem,
    ),
    Section(
        name="exposed_latency", title="Exposed latency vs. Nsight Compute", paper_ref="Fig. 12",
        runtime="3 s small sample, 3 s paper-scale sample",
        inputs=("exposed_latency/attn.csv", "exposed_latency/gmm.csv", "exposed_latency/conv.csv",
                "exposed_latency/gemm.csv"),
        module="exposed_latency.exposed_latency", call=_exposed_latency,
    ),
    Section(
        name="warp_sched", title="Warp scheduling and the tailing effect", paper_ref="Fig. 13a-d",
        runtime="4 s small sample, 3 s paper-scale sample",
        inputs=("warp_sched/exclusive_sched/**/result/*.bin", "warp_sched/shared_sched/**/result/*.bin"),
        # Fig. 13c/d: a tail trace when the bundle has one; the paper's bundle only has a pickle,
        # which the analysis refuses (13a/b are still drawn and the refusal is reported).
        optional_inputs=("warp_sched/tail/**/result/*.bin", "warp_sched/*.pkl"),
        module="warp_sched.warp_sched", call=_warp_sched,
    ),
)

NAMES: tuple[str, ...] = tuple(s.name for s in SECTIONS)
_BY_NAME = {s.name: s for s in SECTIONS}


def get(name: str) -> Section:
    """The section called ``name``; an unknown name raises a one-line InputError listing the valid ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise InputError(None, f"unknown section {name!r}; valid sections: {', '.join(NAMES)}") from None


def parse_names(value: str | Iterable[str] | None) -> list[str]:
    """Normalise a ``sections`` parameter: None/"all" → all six; a comma/space separated string or a
    list of names → those names in registry order (duplicates dropped). Unknown names raise."""
    if value is None:
        return list(NAMES)
    if isinstance(value, str):
        items = [v for v in value.replace(",", " ").split() if v]
        if items == ["all"]:
            return list(NAMES)
    else:
        items = [str(v) for v in value]
    for item in items:
        get(item)
    return [n for n in NAMES if n in items]


# --------------------------------------------------------------------------------------------- running


def _import(module: str) -> Any:
    # The per-figure folders are top-level packages of the repo, not of the installed package.
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    return importlib.import_module(module)


def _fingerprint(paths: Iterable[Path]) -> dict[str, Any]:
    """Count, total size and newest mtime of every file under ``paths`` (directories walked)."""
    n = size = newest = 0
    for path in paths:
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        for f in files:
            st = f.stat()
            n += 1
            size += st.st_size
            newest = max(newest, st.st_mtime_ns)
    return {"files": n, "bytes": size, "newest_mtime_ns": newest}


def _rel(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())


def _write_record(result: SectionResult, out: Path, root: Path, fingerprint: dict[str, Any], kind: str) -> None:
    tables: dict[str, str] = {}
    for tname, df in result.tables.items():
        csv = out / f"{tname}.csv"
        if not csv.is_file():  # the analysis normally wrote it through write_results already
            with atomic_open(csv, "w", encoding="utf-8", newline="") as fh:
                df.to_csv(fh, index=False)
        tables[tname] = _rel(csv, out)
    record = {
        "record_version": RECORD_VERSION,
        "section": result.section,
        "bundle_root": str(root.resolve()),
        "bundle_kind": kind,
        "inputs": fingerprint,
        "files": {k: _rel(Path(v), out) for k, v in result.files.items()},
        "tables": tables,
        "summary": result.summary,
        "text": result.text,
        "data": result.data,
    }
    write_json(out / RECORD, record)


def _load_record(out: Path, root: Path, fingerprint: dict[str, Any]) -> SectionResult | None:
    """The cached result in ``out`` if it is complete and was made from these very inputs."""
    path = out / RECORD
    if not path.is_file():
        return None
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # a damaged cache is just recomputed
    if (rec.get("record_version") != RECORD_VERSION or rec.get("bundle_root") != str(root.resolve())
            or rec.get("inputs") != fingerprint):
        return None
    files = {k: (out / v if not Path(v).is_absolute() else Path(v)) for k, v in rec.get("files", {}).items()}
    table_paths = {k: out / v for k, v in rec.get("tables", {}).items()}
    if not all(p.is_file() for p in [*files.values(), *table_paths.values()]):
        return None
    try:
        tables = {k: pd.read_csv(p) for k, p in table_paths.items()}
    except (OSError, ValueError):
        return None
    return SectionResult(section=rec["section"], data=rec.get("data", {}), files=files, tables=tables,
                         summary=rec.get("summary", []), text=rec.get("text", ""))


def run_section(name: str, bundle_root: str | os.PathLike[str], output_dir: str | os.PathLike[str],
                force: bool = False) -> SectionResult:
    """Run section ``name`` on the bundle at ``bundle_root``, writing into ``output_dir/<name>/``.

    Reuses the cached result of an earlier run with the same inputs unless ``force``. Missing
    inputs raise an InputError naming the first missing path, before anything is computed.
    The result's ``data`` gains ``cached`` (bool) so callers can say whether work was done.
    """
    section = get(name)
    root = Path(bundle_root)
    if not root.is_dir():
        raise InputError(root, "bundle root is not a directory")
    inputs = section.input_paths(root)
    optional = sorted(p for rel in section.optional_inputs for p in root.glob(rel))
    fingerprint = _fingerprint([*inputs, *optional])
    # An edited analysis must not be answered from a cache made by its previous version.
    source = REPO_ROOT / (section.module.replace(".", "/") + ".py")
    fingerprint["analysis"] = _fingerprint([source]) if source.is_file() else {}
    out = Path(output_dir) / name
    if not force:
        cached = _load_record(out, root, fingerprint)
        if cached is not None:
            cached.data["cached"] = True
            return cached
    # Drop a stale record first: if the analysis fails half-way, no old record may vouch for new files.
    (out / RECORD).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    result = section.call(_import(section.module), root, out)
    if not isinstance(result, SectionResult):
        raise NeutrinoAEError(f"{section.module}: returned {type(result).__name__}, not a SectionResult")
    kind = _bundle.bundle_kind(root)
    result.data.setdefault("bundle_kind", kind)
    _write_record(result, out, root, fingerprint, kind)
    result.data["cached"] = False
    return result


def summary_rows(results: Iterable[SectionResult] | Mapping[str, SectionResult],
                 bundle_kind: str | None = None) -> list[dict[str, Any]]:
    """Flatten every result's summary rows into summary.json rows (section and bundle kind added).

    ``bundle_kind`` overrides the kind recorded in each result's data (``unknown`` when neither).
    Rows keep the registry's section order and, within a section, the analysis' order.
    """
    items = list(results.values()) if isinstance(results, Mapping) else list(results)
    order = {n: i for i, n in enumerate(NAMES)}
    items.sort(key=lambda r: order.get(r.section, len(order)))
    rows: list[dict[str, Any]] = []
    for res in items:
        kind = bundle_kind or res.data.get("bundle_kind") or _bundle.UNKNOWN
        default_ref = _BY_NAME[res.section].paper_ref if res.section in _BY_NAME else ""
        for row in res.summary:
            rows.append({
                "section": res.section,
                "key": row.get("key"),
                "paper_ref": row.get("paper_ref") or default_ref,
                "value": row.get("value"),
                "unit": row.get("unit", ""),
                "bundle_kind": kind,
                "ground_truth": row.get("ground_truth"),
            })
    return rows


SUMMARY_COLUMNS = ("section", "paper_ref", "key", "value", "unit", "bundle_kind", "ground_truth")


def format_number(value: Any) -> str:
    """A summary number for people: integers with thousands separators, others to 4 significant digits."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.4g}"


def summary_table(rows: Iterable[Mapping[str, Any]], ground_truth: bool = True) -> pd.DataFrame:
    """Summary rows as a display table (numbers formatted as text); ``ground_truth`` keeps that column."""
    columns = [c for c in SUMMARY_COLUMNS if ground_truth or c != "ground_truth"]
    df = pd.DataFrame([{c: row.get(c) for c in columns} for row in rows], columns=columns)
    for col in ("value", "ground_truth"):
        if col in df:
            df[col] = [format_number(v) for v in df[col]]
    return df.fillna("")


class NotebookStop(NeutrinoAEError):
    """Stops a notebook cell with one line (no traceback): the message is what the reader should do.

    IPython renders an exception through ``_render_traceback_`` when it has one; papermill then
    reports exactly this line.
    """

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]
