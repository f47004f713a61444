"""Densified memory access timeline (DMAT) plots: paper Fig. 1 and Fig. 10a/b/c.

``python dmat/dmat.py <trace.bin | file.dmat | tracedir> [--out DIR] [--json]``; the last stdout line
is the saved PNG (the notebooks display it).

* A raw ``dmat`` trace (``result/*.bin``, or a trace directory: its newest result) is sparsified in
  bounded-memory chunks into ``<name>.dmat`` in the output folder (formats.dmat.sparsify).
* The plot: clock on x (cycles since the thread's kernel entry, the probe's own clock), page index
  on y (distinct 64 KiB pages, ascending), one colour family per tensor, darker = denser. Density
  levels are quantiles of the non-empty cells *of that tensor* (25/50/75/90 %), so a lightly used
  tensor still shows its pattern. Cells are binned arrays (fixed ``--xbins`` clock bins and at most
  ``--ybins`` page rows) filled with one ``np.bincount`` per tensor: drawing time depends on the
  number of (clock, page) pairs, not on the number of distinct clocks. There is no clock cut-off.

Tensor names come from the launch's pointer arguments (``[exec] <ns> param <hex> ...`` in
``event.log``) matched to ``tensor.trace`` rows (decimal ``data_ptr`` + ``nbytes`` -> ``arg_name``).
The launch is the one whose ``[exec] save`` names the plotted result file, else the last launch
with parameters. A parameter missing from ``tensor.trace`` is named ``param<i>`` and extends to the
next parameter's address (size unknown). A page that two tensors share belongs to the lower
address. Pages of no tensor are grouped as ``other``.

Where the naming files are looked for:
  * trace directory or ``<tracedir>/result/*.bin``: that trace directory;
  * a bare ``<dir>/<fig>.dmat``: the newest trace directory under ``<dir>/raw/<fig>/`` (the sample
    bundle's layout), else ``<dir>/<fig>/`` if it is a trace directory; otherwise every page is
    drawn as ``unnamed``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo root importable (and win over this folder)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse  # noqa: E402
import os  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from neutrino_ae.bundle import manifest as bundle  # noqa: E402
from neutrino_ae.errors import InputError, TraceFormatError, refuse_pickle  # noqa: E402
from neutrino_ae.formats.bintrace import BinTrace, Level, open_trace  # noqa: E402
from neutrino_ae.formats.dmat import PAGE_MASK, DmatData, drop_unfilled, read_dmat, sparsify, write_dmat  # noqa: E402
from neutrino_ae.formats.records import DMAT  # noqa: E402
from neutrino_ae.report.results import SectionResult, write_results  # noqa: E402
from neutrino_ae.report.script import add_output_args, emit, run_main  # noqa: E402
from neutrino_ae.report.style import mark_synthetic, new_figure, save_figure, style_context  # noqa: E402

SECTION = "dmat"
FIGURES = ("fig1", "fig10a", "fig10b", "fig10c")
PAPER_REFS = {"fig1": "Fig. 1", "fig10a": "Fig. 10a", "fig10b": "Fig. 10b", "fig10c": "Fig. 10c"}
OTHER = "other"
UNNAMED = "unnamed"
#: Colour family per tensor (light -> dark); "other"/"unnamed" always grey.
FAMILIES = ["Blues", "Oranges", "Greens", "Purples", "Reds", "YlOrBr", "PuRd", "BuGn", "GnBu", "OrRd"]
QUANTILES = (0.25, 0.5, 0.75, 0.9)
DEFAULT_XBINS = 500
DEFAULT_YBINS = 1024


# --------------------------------------------------------------------------------------------------
# Inputs


@dataclass
class Naming:
    """Where tensor names come from (any part may be missing)."""

    trace_dir: Path | None = None
    event_log: Path | None = None
    tensor_trace: Path | None = None
    result_name: str | None = None  # file name of the plotted result/*.bin, to pick the launch


@dataclass
class TensorRange:
    name: str
    start: int
    nbytes: int | None  # None: size unknown (extends to the next tensor)


@dataclass
class DmatInput:
    name: str  # figure stem, e.g. "fig1"
    source: Path
    data: DmatData
    naming: Naming
    sparsified: Path | None = None  # the .dmat we wrote, for raw inputs


def _is_trace_dir(p: Path) -> bool:
    return p.is_dir() and ((p / "result").is_dir() or (p / "event.log").is_file())


def _newest_result(trace_dir: Path) -> Path:
    try:
        from neutrino_ae.formats.tracedir import TraceDir

        results = [Path(r) for r in TraceDir(trace_dir).results()]
    except ImportError:  # tracedir.py not available: same rule, seconds-since-start file names
        results = sorted((trace_dir / "result").glob("*.bin"), key=_result_seconds)
    if not results:
        raise InputError(trace_dir, "trace directory has no result/*.bin trace")
    return results[-1]


def _result_seconds(p: Path) -> float:
    try:
        return float(p.stem)
    except ValueError:
        return float("inf")


def _open_result(trace_dir: Path | None, result: Path) -> BinTrace:
    if trace_dir is not None and (trace_dir / "probe.toml").is_file():
        try:
            from neutrino_ae.formats.tracedir import TraceDir

            return TraceDir(trace_dir).open_result(result)
        except ImportError:
            pass
    return open_trace(result)


def _naming_for_trace_dir(trace_dir: Path, result_name: str | None) -> Naming:
    ev = trace_dir / "event.log"
    tt = trace_dir / "tensor.trace"
    return Naming(trace_dir, ev if ev.is_file() else None, tt if tt.is_file() else None, result_name)


def naming_for_dmat(path: Path) -> Naming:
    """Naming files for a bare ``<dir>/<fig>.dmat`` (rule in the module docstring)."""
    stem = path.stem
    raw = path.parent / "raw" / stem
    if raw.is_dir():
        dirs = sorted(d for d in raw.iterdir() if _is_trace_dir(d))
        if _is_trace_dir(raw):
            dirs.append(raw)
        if dirs:
            td = dirs[-1]
            res = sorted((td / "result").glob("*.bin"), key=_result_seconds) if (td / "result").is_dir() else []
            return _naming_for_trace_dir(td, res[-1].name if res else None)
    side = path.parent / stem
    if _is_trace_dir(side):
        return _naming_for_trace_dir(side, None)
    return Naming()


def figure_name(path: Path) -> str:
    """``fig1`` for ``dmat/fig1.dmat`` and for ``dmat/raw/fig1/<tracedir>/...``; else the trace dir / file stem."""
    parts = path.resolve().parts
    for i in range(len(parts) - 2, 0, -1):  # the bundle's dmat/raw/<fig>/... layout
        if parts[i] == "raw" and parts[i - 1] == "dmat" and (i + 1 < len(parts) - 1 or path.is_dir()):
            return parts[i + 1]
    if path.suffix == ".bin" and path.parent.name == "result":
        return path.parent.parent.name
    return path.stem if path.suffix else path.name


def sparsify_trace(trace: BinTrace, section: int = 0, chunk_bytes: int = 64 << 20) -> DmatData:
    """Per-(clock, page) counts of a dmat trace, read in chunks of whole blocks (bounded memory)."""
    sec = trace.section(section)
    if sec.level != Level.THREAD:
        raise TraceFormatError(trace.path, f"section {section} is {sec.level.name.lower()}-level; the dmat probe "
                                           "saves per thread (wrong probe?)")
    return sparsify(chunk for _, chunk in trace.iter_chunks(section, DMAT, chunk_bytes))


def load_input(path: str | os.PathLike[str], out_dir: Path, section: int = 0) -> DmatInput:
    p = Path(path)
    refuse_pickle(p, "Pass the .dmat or the raw .bin trace instead.")
    if not p.exists():
        raise InputError(p, "no such file or directory")
    name = figure_name(p)
    if p.is_dir():
        if not _is_trace_dir(p):
            raise InputError(p, "is a directory but not a trace directory (no result/ or event.log)")
        result = _newest_result(p)
        trace_dir = p
    elif p.suffix.lower() == ".dmat":
        return DmatInput(name, p, read_dmat(p), naming_for_dmat(p))
    elif p.suffix.lower() == ".bin":
        result = p
        trace_dir = p.parent.parent if p.parent.name == "result" and _is_trace_dir(p.parent.parent) else None
    else:
        raise InputError(p, "expected a dmat result .bin, a .dmat file or a trace directory")
    data = sparsify_trace(_open_result(trace_dir, result), section)
    naming = _naming_for_trace_dir(trace_dir, result.name) if trace_dir else Naming()
    written = write_dmat(out_dir / f"{name}.dmat", data)
    return DmatInput(name, result, data, naming, written)


# --------------------------------------------------------------------------------------------------
# Tensor attribution


def launch_params(event_log: Path, result_name: str | None) -> tuple[int, ...]:
    from neutrino_ae.formats.eventlog import parse_event_log

    launches = parse_event_log(event_log).launches
    if len(launches) == 0:
        return ()
    if result_name and "save_path" in launches:
        hit = launches[launches["save_path"].map(lambda s: isinstance(s, str) and Path(s).name == result_name)]
        if len(hit):
            return tuple(int(x) for x in (hit.iloc[-1]["params"] or ()))
    with_params = launches[launches["params"].map(lambda t: bool(t))]
    return tuple(int(x) for x in with_params.iloc[-1]["params"]) if len(with_params) else ()


def tensor_ranges(params: Sequence[int], tensors: pd.DataFrame | None) -> list[TensorRange]:
    """Name each distinct pointer argument from ``tensor.trace`` (exact ``data_ptr`` match, else a
    tensor whose ``[data_ptr, data_ptr + nbytes)`` contains it); unmatched pointers are ``param<i>``."""
    calls: list[tuple[int, int, str]] = []
    if tensors is not None and len(tensors):
        rows = tensors[(tensors["kind"] == "call") & tensors["arg_name"].notna()]
        # A few rows per traced call (not trace data): plain Python keeps pointers as exact ints.
        calls = [(int(d), int(n), str(a)) for d, n, a in zip(rows["data_ptr"], rows["nbytes"], rows["arg_name"],
                                                             strict=True)]
    out: list[TensorRange] = []
    seen: set[int] = set()
    for i, ptr in enumerate(int(x) for x in params):
        if ptr == 0 or ptr in seen:
            continue
        seen.add(ptr)
        exact = [c for c in calls if c[0] == ptr]
        inside = [c for c in calls if c[0] < ptr < c[0] + c[1]]
        if exact:  # the latest call that passed this tensor names it
            out.append(TensorRange(exact[-1][2], ptr, exact[-1][1]))
        elif inside:
            base, nbytes, arg = inside[-1]
            out.append(TensorRange(f"{arg}+{ptr - base:#x}", ptr, nbytes - (ptr - base)))
        else:
            out.append(TensorRange(f"param{i}", ptr, None))
    return out


def ranges_from_tensor_trace(tensors: pd.DataFrame) -> list[TensorRange]:
    """Without ``event.log``: every distinct tensor of ``tensor.trace`` [call] rows (latest name per pointer)."""
    calls = tensors[(tensors["kind"] == "call") & tensors["arg_name"].notna()]
    last = calls.drop_duplicates(subset=["data_ptr"], keep="last")
    return [TensorRange(str(r.arg_name), int(r.data_ptr), int(r.nbytes)) for r in last.itertuples(index=False)]


def attribute_pages(pages: np.ndarray, ranges: Sequence[TensorRange]) -> tuple[np.ndarray, list[str]]:
    """Label index per page (into the returned names; ``other`` last). Vectorised per tensor."""
    pages = np.asarray(pages, dtype=np.uint64)
    ordered = sorted(ranges, key=lambda r: r.start)
    names = [r.name for r in ordered]
    labels = np.full(pages.size, len(names), dtype=np.int64)  # "other"
    top = int(pages.max()) + 0x10000 if pages.size else 0
    for k, r in enumerate(ordered):
        if r.nbytes is not None:
            end = r.start + max(r.nbytes, 1)
        else:
            end = ordered[k + 1].start if k + 1 < len(ordered) else max(top, r.start + 1)
        lo = np.uint64(r.start) & PAGE_MASK
        hi = np.uint64(end - 1) & PAGE_MASK
        mask = (labels == len(names)) & (pages >= lo) & (pages <= hi)
        labels[mask] = k
    return labels, [*names, OTHER]


def tensor_names(inp: DmatInput) -> tuple[np.ndarray, list[str], list[TensorRange]]:
    """Page labels for the (sorted) pages of ``inp`` and their names; all ``unnamed`` without naming files."""
    pages = np.unique(inp.data.pages)
    nm = inp.naming
    tensors = None
    if nm.tensor_trace is not None:
        from neutrino_ae.formats.tensortrace import read_tensor_trace

        tensors = read_tensor_trace(nm.tensor_trace)
    ranges: list[TensorRange] = []
    if nm.event_log is not None:
        ranges = tensor_ranges(launch_params(nm.event_log, nm.result_name), tensors)
        if pages.size:
            # Scalar arguments (sizes, strides) sit in the same param list: an argument unknown to
            # tensor.trace counts as a pointer only if it points into the accessed address range.
            lo, hi = int(pages.min()), int(pages.max()) + 0x10000
            ranges = [r for r in ranges if r.nbytes is not None or lo <= r.start < hi]
    elif tensors is not None:
        ranges = ranges_from_tensor_trace(tensors)
    if not ranges:
        return np.zeros(pages.size, np.int64), [UNNAMED], []
    labels, names = attribute_pages(pages, ranges)
    return labels, names, sorted(ranges, key=lambda r: r.start)


# --------------------------------------------------------------------------------------------------
# Binning and drawing


@dataclass
class DmatPlotData:
    """What the figure shows: per-label 2-D histograms on shared bins (no clock cut-off)."""

    names: list[str]
    hist: np.ndarray  # (labels, ybins, xbins) access counts
    x_edges: np.ndarray  # clock bin edges, cycles
    y_edges: np.ndarray  # page-index bin edges
    n_pages: int
    max_clock: int
    accesses_per_label: np.ndarray
    pages_per_label: np.ndarray
    row_label: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # majority label per y bin


def bin_dmat(data: DmatData, labels: np.ndarray, names: list[str], xbins: int = DEFAULT_XBINS,
             ybins: int = DEFAULT_YBINS) -> DmatPlotData:
    """Histogram every (clock, page, count) pair into (label, page-row, clock-bin) cells."""
    pages = np.unique(data.pages)
    n_pages = pages.size
    clock = data.pair_clock()
    max_clock = int(clock.max()) if clock.size else 0
    page_idx = np.searchsorted(pages, data.pair_page)
    if clock.size and (np.any(page_idx >= n_pages) or np.any(pages[np.minimum(page_idx, n_pages - 1)]
                                                             != data.pair_page)):
        raise TraceFormatError(None, "a (clock, page) pair names a page missing from the page list")
    ny = max(1, min(ybins, n_pages))
    nx = max(1, xbins)
    # Integer bin arithmetic (no float rounding at the edges): bin = value * nbins // span.
    xspan = max_clock + 1
    xb = (clock.astype(np.uint64) * np.uint64(nx) // np.uint64(xspan)).astype(np.int64) if clock.size else clock
    yb = page_idx * ny // max(n_pages, 1)
    lab = labels[page_idx] if clock.size else np.zeros(0, np.int64)
    cell = (lab * ny + yb) * nx + xb
    hist = np.bincount(cell, weights=data.pair_count.astype(np.float64), minlength=len(names) * ny * nx)
    hist = hist.reshape(len(names), ny, nx)
    page_rows = np.arange(n_pages) * ny // max(n_pages, 1)
    counts = np.zeros((ny, len(names)), np.int64)
    np.add.at(counts, (page_rows, labels), 1)
    return DmatPlotData(
        names, hist, np.arange(nx + 1) * (xspan / nx), np.arange(ny + 1) * (n_pages / ny), int(n_pages),
        max_clock, hist.sum(axis=(1, 2)), np.bincount(labels, minlength=len(names)),
        counts.argmax(axis=1),
    )


def _levels(values: np.ndarray) -> np.ndarray:
    """Density level 1..5 of non-zero cells from quantiles of those cells (0 = empty)."""
    out = np.zeros(values.shape, np.int64)
    nz = values > 0
    if not nz.any():
        return out
    q = np.quantile(values[nz], QUANTILES)
    v = values[nz]
    # Midpoint of the strict and non-strict ranks: a tensor whose cells all hold the same count gets the
    # middle level, not the lightest.
    out[nz] = 1 + (np.searchsorted(q, v, side="left") + np.searchsorted(q, v, side="right")) // 2
    return out


def render_rgba(plot: DmatPlotData) -> np.ndarray:
    """RGBA image (ybins, xbins, 4): each cell takes the colour of its densest tensor at its level."""
    import matplotlib

    ny, nx = plot.hist.shape[1:]
    img = np.ones((ny, nx, 4))
    best = np.zeros((ny, nx))
    for k, name in enumerate(plot.names):
        h = plot.hist[k]
        if not h.any():
            continue
        cmap = matplotlib.colormaps["Greys" if name in (OTHER, UNNAMED) else FAMILIES[k % len(FAMILIES)]]
        lev = _levels(h)
        palette = cmap(np.r_[0.0, np.linspace(0.35, 1.0, len(QUANTILES) + 1)])
        take = h > best
        img[take] = palette[lev[take]]
        best = np.maximum(best, h)
    return img


def _draw(plot: DmatPlotData, title: str, synthetic: bool):
    import matplotlib
    from matplotlib.patches import Patch

    with style_context():
        fig = new_figure(10.0, 6.5, layout="constrained")
        fig.get_layout_engine().set(rect=(0, 0.3 / 6.5, 1, 1 - 0.3 / 6.5))  # strip for the synthetic footer
        ax = fig.subplots()
        ax.imshow(render_rgba(plot), aspect="auto", origin="lower", interpolation="nearest",
                  extent=(0, plot.x_edges[-1], 0, plot.n_pages))
        ax.grid(False)
        # A little room left of clock 0: accesses right at kernel entry would hide under the spine.
        ax.set_xlim(-0.01 * plot.x_edges[-1], plot.x_edges[-1] * 1.005)
        ax.set_xlabel("clock (cycles since the thread's kernel entry)")
        ax.set_ylabel("page index (64 KiB pages, ascending address)")
        ax.set_title(title, fontsize=11)
        # Tensor boundaries as thin lines, names on the right edge.
        if len(plot.names) > 1:
            rows = plot.row_label
            change = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1], True])
            sec = ax.secondary_yaxis("right")
            mids, labels = [], []
            for a, b in zip(change[:-1], change[1:], strict=True):
                y0, y1 = plot.y_edges[a], plot.y_edges[b]
                if a:
                    ax.axhline(y0, color="black", lw=0.4, alpha=0.5)
                if y1 - y0 >= plot.n_pages * 0.03:  # label only bands tall enough to read
                    mids.append((y0 + y1) / 2)
                    labels.append(plot.names[rows[a]])
            sec.set_yticks(mids, labels, fontsize=9)
            sec.tick_params(length=0)
        handles = []
        for k, name in enumerate(plot.names):
            if plot.accesses_per_label[k] == 0:
                continue
            fam = "Greys" if name in (OTHER, UNNAMED) else FAMILIES[k % len(FAMILIES)]
            colour = matplotlib.colormaps[fam](0.75)
            handles.append(Patch(color=colour, label=f"{name}: {int(plot.pages_per_label[k])} pages, "
                                                     f"{int(plot.accesses_per_label[k]):,} accesses"))
        # Below the axes (never over the data); constrained layout makes room for it above the footer strip.
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=min(3, len(handles)),
                  frameon=False, title="tensor (darker = denser; levels = quantiles 25/50/75/90 % of its cells)",
                  title_fontsize=9)
        mark_synthetic(fig, synthetic)
    return fig


# --------------------------------------------------------------------------------------------------
# Entry points


def dmat_figure(path: str | os.PathLike[str], out_dir: str | os.PathLike[str], name: str | None = None,
                xbins: int = DEFAULT_XBINS, ybins: int = DEFAULT_YBINS, section: int = 0) -> SectionResult:
    """One DMAT figure from a ``.bin``, ``.dmat`` or trace directory; PNG path is ``files[<name>.png]``."""
    out = Path(out_dir)
    inp = load_input(path, out, section)
    # Zero-filled count slots are not accesses: a .dmat from the artifact's sparsifier keeps them as
    # a page-0 cell at clock 0 (see formats/dmat.py); they are left out of the plot and reported.
    inp.data = drop_unfilled(inp.data)
    if name:
        inp.name = name
    labels, names, ranges = tensor_names(inp)
    plot = bin_dmat(inp.data, labels, names, xbins, ybins)
    synthetic = bundle.is_synthetic(inp.source)
    ref = PAPER_REFS.get(inp.name, "DMAT")
    title = (f"{ref} DMAT [{inp.name}]: {inp.data.num_accesses:,} accesses, {plot.n_pages} pages, "
             f"clock 0-{plot.max_clock:,} cycles")
    if inp.data.unfilled:
        title += f"\n({inp.data.unfilled:,} unfilled count slots, zero-filled by Neutrino, not drawn)"
    fig = _draw(plot, title, synthetic)
    png, svg = save_figure(fig, out, inp.name)
    files: dict[str, Path] = {f"{inp.name}.png": png, f"{inp.name}.svg": svg}
    if inp.sparsified is not None:
        files[f"{inp.name}.dmat"] = inp.sparsified
    truth = bundle.ground_truth(inp.source, SECTION)
    truth = truth.get(inp.name) if isinstance(truth, dict) and isinstance(truth.get(inp.name), dict) else None
    starts = {r.name: r.start for r in ranges}
    tensors = pd.DataFrame({
        "tensor": names,
        "address": [hex(starts[n]) if n in starts else "" for n in names],
        "pages": plot.pages_per_label,
        "accesses": plot.accesses_per_label.astype(np.int64),
    })
    if truth and isinstance(truth.get("tensor_ptrs"), dict):
        # The generator keys its truth by its own tensor names; match them to ours by pointer.
        by_ptr = {int(p): n for n, p in truth["tensor_ptrs"].items()}
        per = truth.get("accesses_in_dmat") or {}
        gt = [per.get(by_ptr.get(starts.get(n, -1))) for n in names]
        tensors["gt_accesses"] = pd.Series([int(v) if v is not None else "" for v in gt], dtype=object)
    data = {
        "figure": inp.name, "paper_ref": ref, "input": str(path), "source": str(inp.source),
        "sparsified_dmat": str(inp.sparsified) if inp.sparsified else None,
        "naming": {"trace_dir": str(inp.naming.trace_dir) if inp.naming.trace_dir else None,
                   "event_log": str(inp.naming.event_log) if inp.naming.event_log else None,
                   "tensor_trace": str(inp.naming.tensor_trace) if inp.naming.tensor_trace else None},
        "tensor_ranges": [{"name": r.name, "start": hex(r.start), "nbytes": r.nbytes} for r in ranges],
        "accesses": inp.data.num_accesses, "pages": plot.n_pages, "clock_entries": int(inp.data.clocks.size),
        "unfilled_slots_excluded": inp.data.unfilled,
        "max_clock": plot.max_clock, "xbins": int(plot.hist.shape[2]), "ybins": int(plot.hist.shape[1]),
        "tensors": tensors.to_dict(orient="records"), "ground_truth": truth,
    }
    summary = [
        {"key": f"{inp.name}.accesses", "paper_ref": ref, "value": inp.data.num_accesses, "unit": "accesses",
         "ground_truth": sum(truth["expected_accesses"].values())
         if truth and isinstance(truth.get("expected_accesses"), dict) else None},
        {"key": f"{inp.name}.pages", "paper_ref": ref, "value": plot.n_pages, "unit": "pages",
         "ground_truth": truth.get("num_pages") if truth else None},
        {"key": f"{inp.name}.max_clock", "paper_ref": ref, "value": plot.max_clock, "unit": "cycles",
         "ground_truth": truth.get("max_clock") if truth else None},
    ]
    data["summary"] = summary
    files.update(write_results(out, f"dmat_{inp.name}", data, input_path=inp.source,
                               tables={f"dmat_{inp.name}_tensors": tensors}))
    named = ", ".join(f"{n} ({a:,})" for n, a in zip(names, plot.accesses_per_label.astype(np.int64), strict=True))
    text = (f"{inp.name}: {inp.data.num_accesses:,} accesses over {plot.n_pages} pages, clock up to "
            f"{plot.max_clock:,}; tensors: {named}"
            + (f"; {inp.data.unfilled:,} unfilled count slots excluded" if inp.data.unfilled else "") + f"\n{png}")
    result = SectionResult(SECTION, data, files, {f"dmat_{inp.name}_tensors": tensors}, summary, text)
    result.plot = plot  # type: ignore[attr-defined]  # the binned arrays, for tests and notebooks
    return result


def analyze(root: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> SectionResult:
    """All DMAT figures of a bundle's ``dmat/`` folder (``fig1``, ``fig10a/b/c`` ``.dmat`` files present)."""
    base = Path(root)
    if (base / "dmat").is_dir():
        base = base / "dmat"
    inputs = [base / f"{f}.dmat" for f in FIGURES if (base / f"{f}.dmat").is_file()]
    if not inputs:
        raise InputError(base, f"holds none of {', '.join(f + '.dmat' for f in FIGURES)}")
    parts = [dmat_figure(p, out_dir) for p in inputs]
    files = {k: v for r in parts for k, v in r.files.items()}
    data = {"section": SECTION, "paper_ref": "Fig. 1, Fig. 10a/b/c", "figures": [r.data for r in parts]}
    summary = [row for r in parts for row in r.summary]
    data["summary"] = summary
    files.update(write_results(out_dir, SECTION, data, input_path=inputs[0]))
    return SectionResult(SECTION, data, files, {k: v for r in parts for k, v in r.tables.items()}, summary,
                         "\n".join(r.text for r in parts))


def analyze_bundle(bundle_root: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> SectionResult:
    """The section entry point: every DMAT figure of a bundle root."""
    return analyze(Path(bundle_root) / "dmat", out_dir)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Draw a DMAT plot (Fig. 1 / Fig. 10) from a dmat trace or .dmat")
    parser.add_argument("input", type=Path, help="dmat result .bin, .dmat file, or trace directory")
    parser.add_argument("--name", help="figure name (default: from the path, e.g. fig1)")
    parser.add_argument("--xbins", type=int, default=DEFAULT_XBINS, help="clock bins (default 500)")
    parser.add_argument("--ybins", type=int, default=DEFAULT_YBINS, help="max page rows (default 1024)")
    add_output_args(parser, "results/dmat")
    args = parser.parse_args(argv)
    if args.xbins < 1 or args.ybins < 1:
        parser.error("--xbins and --ybins must be positive")
    emit(dmat_figure(args.input, args.out, args.name, args.xbins, args.ybins), args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(run_main(main))
