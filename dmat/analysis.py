"""DMAT computations (no I/O, no plots): tensor ranges and page attribution (the binned timeline is
:mod:`.binning`), and the section's ``compute`` / ``figures`` (neutrino_ae/report/section/driver.py): each
figure's results, numbers and the arrays its figure shows (:mod:`.figures` draws them).

Every figure is a result of its own (``dmat_<fig>.json`` and its tensors table, its paper reference per
number); a bundle's four figures are the section result's ``parts``, with ``dmat.json`` listing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from neutrino_ae.formats.dmat import PAGE_MASK
from neutrino_ae.report.section.driver import Figure, Number, Result

from . import FIGURES, SECTION
from .binning import ARTIFACT_CLOCK_CUTOFF, DmatPlotData

if TYPE_CHECKING:
    import pandas as pd

OTHER = "other"

UNNAMED = "unnamed"


@dataclass
class TensorRange:
    name: str
    start: int
    nbytes: int | None  # None: size unknown (extends to the next tensor)

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

# --------------------------------------------------------------------------------------------------
# The section's results (driver entry points)

PAPER_REFS = {key: fig.paper_ref for key, fig in FIGURES.items()}
#: The unit of each number, by the key's last part.
UNITS = {"accesses": "accesses", "pages": "pages", "max_clock": "cycles", "first_clock": "cycles",
         "last_clock": "cycles"}
#: The arrays of :class:`DmatPlotData` the drawing reads.
DRAWN_ARRAYS = ("hist", "x_edges", "y_edges", "row_label", "accesses_per_label", "pages_per_label")


@dataclass
class BinnedFigure:
    """One DMAT figure read and binned (``load``'s frames; dmat/inputs.py): what its results are made of."""

    name: str  # figure stem, e.g. "fig1"
    given: Path  # the input as given
    source: Path  # the file read (a trace directory's newest result)
    sparsified: Path | None  # the .dmat written from a raw trace
    trace_dir: str | None  # the trace directory that named the tensors, bundle-relative
    event_log: Path | None
    tensor_trace: Path | None
    ranges: list[TensorRange]  # ascending start
    plot: DmatPlotData
    accesses: int
    unfilled: int
    clock_entries: int
    level_note: str  # how the section's level was decided, when the file could not tell
    truth: dict[str, Any] | None  # the sample generator's ground truth of this figure
    synthetic: bool | None
    workloads: str | None  # how the bundle was collected ("ptx": stand-in kernels, named in the title)


def compute(frames: BinnedFigure | Sequence[BinnedFigure]) -> dict[str, Result]:
    """One figure's result (``dmat_<figure>.json``); for a bundle's figures, each figure's, then the section's
    (``dmat.json``: every figure's document and numbers, each figure's line and path as its text)."""
    if isinstance(frames, BinnedFigure):
        return {f"dmat_{frames.name}": figure_result(frames)}
    figures = {f"dmat_{f.name}": figure_result(f) for f in frames}
    parts = list(figures.values())
    data = {"section": SECTION.name, "paper_ref": SECTION.paper_ref, "figures": [p.data for p in parts],
            "trace_dirs": [f.trace_dir for f in frames if f.trace_dir], "summary": None}
    done = "\n".join(f"{p.lines[0]}\n{{{f.name}.png}}" for f, p in zip(frames, parts, strict=True))
    return {**figures, SECTION.name: Result(numbers={k: v for p in parts for k, v in p.numbers.items()},
                                            truth={k: v for p in parts for k, v in p.truth.items()}, units=UNITS,
                                            data=data, done=done, input=frames[0].given)}


def figure_result(f: BinnedFigure) -> Result:
    """The results of one figure: its title, document, tensors table, numbers and text line."""
    import pandas as pd  # here only: the figure process imports this module (figures.py) without pandas

    plot, names = f.plot, f.plot.names
    ref = PAPER_REFS.get(f.name, "DMAT")
    # A paper figure is named once ("Fig. 1: DMAT, ..."), another by its input ("DMAT [name]: ...").
    heading = f"DMAT [{f.name}]" if ref == "DMAT" else f"{ref}: DMAT"
    pages = f"{plot.n_pages:,} page" + ("" if plot.n_pages == 1 else "s")
    title = f"{heading}, {f.accesses:,} accesses, {pages}, clock 0-{plot.max_clock:,} cycles"
    notes = []
    if f.workloads == "ptx" and f.name in FIGURES:
        notes.append(FIGURES[f.name].ptx_shows)  # PyTorch 2.11 ships no PTX: what ran instead
    if f.unfilled:
        notes.append(f"{f.unfilled:,} unfilled count slots not drawn")
    if plot.past_artifact_cutoff:
        notes.append(f"{plot.past_artifact_cutoff:,} accesses past clock {ARTIFACT_CLOCK_CUTOFF:,} drawn "
                     "(the artifact's plot drops them)")
    if f.level_note:
        notes.append(f.level_note)
    if notes:
        title += "\n(" + "; ".join(notes) + ")"
    truth = f.truth
    starts = {r.name: r.start for r in f.ranges}
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
        "figure": f.name, "paper_ref": ref, "title": title, "input": str(f.given), "source": str(f.source),
        "sparsified_dmat": str(f.sparsified) if f.sparsified else None,
        "naming": {"trace_dir": f.trace_dir,
                   "event_log": str(f.event_log) if f.event_log else None,
                   "tensor_trace": str(f.tensor_trace) if f.tensor_trace else None},
        "tensor_ranges": [{"name": r.name, "start": hex(r.start), "nbytes": r.nbytes} for r in f.ranges],
        "accesses": f.accesses, "pages": plot.n_pages, "clock_entries": f.clock_entries,
        "unfilled_slots_excluded": f.unfilled,
        "clock_cutoff": {
            "ours": None, "artifact": ARTIFACT_CLOCK_CUTOFF,
            "accesses_past_artifact_cutoff": plot.past_artifact_cutoff,
            "note": f"every clock is drawn; the artifact's dmat.py drops clock entries >= {ARTIFACT_CLOCK_CUTOFF:,}",
        },
        "section_level": f.level_note or None,
        "max_clock": plot.max_clock, "xbins": int(plot.hist.shape[2]), "ybins": int(plot.hist.shape[1]),
        "tensors": tensors.to_dict(orient="records"), "ground_truth": truth,
        "summary": None,  # the figure's rows (the driver's), here
    }
    numbers: dict[str, Any] = {f"{f.name}.accesses": f.accesses, f"{f.name}.pages": plot.n_pages,
                               f"{f.name}.max_clock": plot.max_clock}
    expected = truth.get("expected_accesses") if truth else None
    gts: dict[str, Any] = {f"{f.name}.accesses": sum(expected.values()) if isinstance(expected, dict) else None,
                           f"{f.name}.pages": truth.get("num_pages") if truth else None,
                           f"{f.name}.max_clock": truth.get("max_clock") if truth else None}
    # Per tensor: its accesses (truth: the generator's count, matched by pointer above) and the first and
    # last clock it is accessed at, the time order the figure shows (Q read first, O written last).
    tensor_truth = tensors["gt_accesses"] if "gt_accesses" in tensors else [None] * len(names)
    for i, n in enumerate(names):
        if n == OTHER and not plot.accesses_per_label[i]:
            continue  # the label for pages of no tensor, with none
        tkey = f"{f.name}.{n.replace('.', '_')}"
        numbers[f"{tkey}.accesses"] = int(plot.accesses_per_label[i])
        gts[f"{tkey}.accesses"] = tensor_truth[i] if tensor_truth[i] != "" else None
        numbers[f"{tkey}.first_clock"] = _cycles(plot.first_clock_per_label[i])
        numbers[f"{tkey}.last_clock"] = _cycles(plot.last_clock_per_label[i])
    named = ", ".join(f"{n} ({a:,})" for n, a in zip(names, plot.accesses_per_label.astype(np.int64), strict=True))
    line = (f"{f.name}: {f.accesses:,} accesses over {pages}, clock up to "
            f"{plot.max_clock:,}; tensors: {named}"
            + (f"; {f.unfilled:,} unfilled count slots excluded" if f.unfilled else "")
            + (f"; {plot.past_artifact_cutoff:,} accesses past clock {ARTIFACT_CLOCK_CUTOFF:,} kept "
               "(the artifact's plot drops them)" if plot.past_artifact_cutoff else "")
            + (f"; {f.level_note}" if f.level_note else "")
            + (f"; names from trace dir {f.trace_dir}" if f.trace_dir else "; no naming trace dir (pages unnamed)"))

    files: dict[str, Any] = {f"{f.name}.dmat": f.sparsified} if f.sparsified else {}  # written while it was read
    files[f"dmat_{f.name}_tensors"] = tensors
    return Result(files=files, numbers={k: Number(v, ref=ref) for k, v in numbers.items()}, truth=gts, units=UNITS,
                  data=data, lines=[line], done=f"{{{f.name}.png}}", input=f.source,
                  plots={"plot": plot, "title": title, "synthetic": f.synthetic})


def _cycles(clock: float) -> int | None:
    """A tensor's first or last clock (NaN: the tensor was never accessed) as the integer it is."""
    return None if np.isnan(clock) else int(clock)


def figures(result: Result) -> list[Figure]:
    """A figure's drawing (:func:`.figures.dmat_figure_from_arrays`): the arrays it reads, nothing else; none
    for the section's own result (its figures are the figures' results')."""
    if "plot" not in result.plots:
        return []
    plot: DmatPlotData = result.plots["plot"]
    name = result.data["figure"]
    return [Figure(name, "figures:dmat_figure_from_arrays", {k: getattr(plot, k) for k in DRAWN_ARRAYS},
                   {"names": list(plot.names), "n_pages": int(plot.n_pages), "max_clock": int(plot.max_clock),
                    "title": result.plots["title"], "synthetic": result.plots["synthetic"]}, key="")]
