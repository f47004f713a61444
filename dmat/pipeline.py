"""Densified memory access timeline (DMAT) plots: paper Fig. 1 and Fig. 10a/b/c.

``python dmat/dmat.py <trace.bin | file.dmat | tracedir> [--out DIR] [--json]``; the last stdout line
is the saved PNG (the notebooks display it).

* A raw ``dmat`` trace (``result/*.bin``, or a trace directory: its newest result) is sparsified into
  ``<name>.dmat`` in the output folder and binned for the figure in the same pass, clock range by
  clock range, in memory bounded whatever the trace size (formats.dmat.stream).
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
    bundle's layout; newest by the time in its name, neutrino_ae/formats/tracedir.py), else
    ``<dir>/<fig>/`` if it is a trace directory; otherwise every page is drawn as ``unnamed``.
    The folder used is ``naming.trace_dir`` in the results and ends the figure's text line.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from neutrino_ae.bundle.context import Bundle, bundle_of
from neutrino_ae.errors import InputError
from neutrino_ae.report.figures.process import FigureJob, FigureProcess, draw
from neutrino_ae.report.results import SectionResult, write_results
from neutrino_ae.report.results.summary import summary_row

from . import FIGURES
from .analysis import (  # noqa: F401  (re-exported for callers)
    ARTIFACT_CLOCK_CUTOFF,
    DEFAULT_XBINS,
    DEFAULT_YBINS,
    OTHER,
    UNNAMED,
    DmatBinner,
    DmatPlotData,
    TensorRange,
    attribute_pages,
    bin_dmat,
    ranges_from_tensor_trace,
    tensor_ranges,
)
from .inputs import DmatInput, load_input, tensor_names, write_raw
from .memory import out_of_memory

SECTION = "dmat"
PAPER_REFS = {key: fig.paper_ref for key, fig in FIGURES.items()}
#: Names of :mod:`.figures` (matplotlib) still importable from here, loaded on first use: the command line
#: itself never imports matplotlib (its figure process does, while the trace is read).
_FIGURE_NAMES = ("FAMILIES", "QUANTILES", "_draw", "_levels", "render_rgba")
#: The arrays of :class:`DmatPlotData` the drawing reads.
DRAWN_ARRAYS = ("hist", "x_edges", "y_edges", "row_label", "accesses_per_label", "pages_per_label")


def __getattr__(name: str):
    if name in _FIGURE_NAMES:
        from . import figures

        return getattr(figures, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def figure_job(plot: DmatPlotData, title: str, synthetic: bool | None, out: Path, stem: str) -> FigureJob:
    """The figure of ``plot`` as a figure process's job: what :func:`.figures._draw` reads, nothing else
    (:func:`.figures.dmat_figure_from_arrays` draws it)."""
    return FigureJob(stem, f"{__package__}.figures:dmat_figure_from_arrays", out,
                     {k: getattr(plot, k) for k in DRAWN_ARRAYS},
                     {"names": list(plot.names), "n_pages": int(plot.n_pages), "max_clock": int(plot.max_clock),
                      "title": title, "synthetic": synthetic})


# --------------------------------------------------------------------------------------------------
# Entry points


def dmat_figure(path: str | os.PathLike[str], out_dir: str | os.PathLike[str], name: str | None = None,
                xbins: int = DEFAULT_XBINS, ybins: int = DEFAULT_YBINS, section: int = 0,
                bundle: Bundle | None = None, figures: FigureProcess | None = None) -> SectionResult:
    """One DMAT figure from a ``.bin``, ``.dmat`` or trace directory; PNG path is ``files[<name>.png]``.
    ``bundle``: the run's bundle; without it (a command line) the one holding the input, found from its path.
    ``figures``: the command line's figure process, which draws the figure while the results are written
    (:mod:`neutrino_ae.report.figures.process`); without it the figure is drawn here."""
    out = Path(out_dir)
    guard = None
    try:
        inp = load_input(path, out, section)
        guard = inp.raw.guard if inp.raw is not None else None
        # Zero-filled count slots are not accesses: a .dmat from the artifact's sparsifier keeps them as
        # a page-0 cell at clock 0 (see formats/dmat/__init__.py); they are left out of the plot and reported.
        if name:
            inp.name = name
            if inp.sparsified is not None:
                inp.sparsified = inp.sparsified.with_name(f"{name}.dmat")
        labels, names, ranges = tensor_names(inp)
        stats = inp.stats
        table = guard.check_figure(stats.pages.size, len(names), ybins, xbins) if guard is not None else None
        binner = DmatBinner(stats.pages, labels, names, stats.max_clock, xbins, ybins, stats.accesses, table)
        if inp.raw is not None:
            assert inp.sparsified is not None
            clock_entries = write_raw(inp.raw, inp.sparsified, binner.add)
        else:
            assert inp.dmat is not None
            for batch in inp.dmat.batches():
                binner.add(batch)
            clock_entries = inp.dmat.clock_entries
        return _figure(path, out, inp, binner, ranges, clock_entries, bundle, figures)
    except MemoryError as exc:
        what = "this DMAT figure"
        raise (guard.out_of_memory(exc, what) if guard is not None else out_of_memory(path, exc, what)) from None


def _figure(path: str | os.PathLike[str], out: Path, inp: DmatInput, binner: DmatBinner,
            ranges: list[TensorRange], clock_entries: int, bundle: Bundle | None,
            figures: FigureProcess | None = None) -> SectionResult:
    """The figure, its results files and summary rows, from the binned input."""
    stats = inp.stats
    names = binner.names
    plot = binner.result()
    bundle = bundle or bundle_of(inp.source)
    synthetic = bundle.synthetic
    ref = PAPER_REFS.get(inp.name, "DMAT")
    accesses, unfilled = stats.accesses, stats.unfilled
    # A paper figure is named once ("Fig. 1: DMAT, ..."), another by its input ("DMAT [name]: ...").
    heading = f"DMAT [{inp.name}]" if ref == "DMAT" else f"{ref}: DMAT"
    pages = f"{plot.n_pages:,} page" + ("" if plot.n_pages == 1 else "s")
    title = f"{heading}, {accesses:,} accesses, {pages}, clock 0-{plot.max_clock:,} cycles"
    notes = []
    if bundle.collected(SECTION).get("workloads") == "ptx" and inp.name in FIGURES:
        notes.append(FIGURES[inp.name].ptx_shows)  # PyTorch 2.11 ships no PTX: what ran instead
    if unfilled:
        notes.append(f"{unfilled:,} unfilled count slots not drawn")
    if plot.past_artifact_cutoff:
        notes.append(f"{plot.past_artifact_cutoff:,} accesses past clock {ARTIFACT_CLOCK_CUTOFF:,} drawn "
                     "(the artifact's plot drops them)")
    if inp.level_note:
        notes.append(inp.level_note)
    if notes:
        title += "\n(" + "; ".join(notes) + ")"
    job = figure_job(plot, title, synthetic, out, inp.name)
    if figures is None:
        files = draw(job)
    else:
        figures.send([job])  # drawn there while the results files are written here
        files = {}
    if inp.sparsified is not None:
        files[f"{inp.name}.dmat"] = inp.sparsified
    truth = bundle.ground_truth(SECTION)
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
        "figure": inp.name, "paper_ref": ref, "title": title, "input": str(path), "source": str(inp.source),
        "sparsified_dmat": str(inp.sparsified) if inp.sparsified else None,
        "naming": {"trace_dir": bundle.relative(inp.naming.trace_dir) if inp.naming.trace_dir else None,
                   "event_log": str(inp.naming.event_log) if inp.naming.event_log else None,
                   "tensor_trace": str(inp.naming.tensor_trace) if inp.naming.tensor_trace else None},
        "tensor_ranges": [{"name": r.name, "start": hex(r.start), "nbytes": r.nbytes} for r in ranges],
        "accesses": accesses, "pages": plot.n_pages, "clock_entries": clock_entries,
        "unfilled_slots_excluded": unfilled,
        "clock_cutoff": {
            "ours": None, "artifact": ARTIFACT_CLOCK_CUTOFF,
            "accesses_past_artifact_cutoff": plot.past_artifact_cutoff,
            "note": f"every clock is drawn; the artifact's dmat.py drops clock entries >= {ARTIFACT_CLOCK_CUTOFF:,}",
        },
        "section_level": inp.level_note or None,
        "max_clock": plot.max_clock, "xbins": int(plot.hist.shape[2]), "ybins": int(plot.hist.shape[1]),
        "tensors": tensors.to_dict(orient="records"), "ground_truth": truth,
    }
    summary = [
        summary_row(SECTION, f"{inp.name}.accesses", accesses, "accesses", ref, bundle.kind,
                    sum(truth["expected_accesses"].values())
                    if truth and isinstance(truth.get("expected_accesses"), dict) else None),
        summary_row(SECTION, f"{inp.name}.pages", plot.n_pages, "pages", ref, bundle.kind,
                    truth.get("num_pages") if truth else None),
        summary_row(SECTION, f"{inp.name}.max_clock", plot.max_clock, "cycles", ref, bundle.kind,
                    truth.get("max_clock") if truth else None),
    ]
    # Per tensor: its accesses (truth: the generator's count, matched by pointer above) and the first and
    # last clock it is accessed at, the time order the figure shows (Q read first, O written last).
    tensor_truth = tensors["gt_accesses"] if "gt_accesses" in tensors else [None] * len(names)
    for i, n in enumerate(names):
        if n == OTHER and not plot.accesses_per_label[i]:
            continue  # the label for pages of no tensor, with none
        tkey = f"{inp.name}.{n.replace('.', '_')}"
        summary += [
            summary_row(SECTION, f"{tkey}.accesses", int(plot.accesses_per_label[i]), "accesses", ref, bundle.kind,
                        tensor_truth[i] if tensor_truth[i] != "" else None),
            summary_row(SECTION, f"{tkey}.first_clock", _cycles(plot.first_clock_per_label[i]), "cycles", ref,
                        bundle.kind),
            summary_row(SECTION, f"{tkey}.last_clock", _cycles(plot.last_clock_per_label[i]), "cycles", ref,
                        bundle.kind),
        ]
    data["summary"] = summary
    files.update(write_results(out, f"dmat_{inp.name}", data, input_path=inp.source, bundle=bundle,
                               tables={f"dmat_{inp.name}_tensors": tensors}))
    if figures is not None:
        files = {**figures.join(), **files}  # the figure's files first, as when drawn here
    named = ", ".join(f"{n} ({a:,})" for n, a in zip(names, plot.accesses_per_label.astype(np.int64), strict=True))
    text = (f"{inp.name}: {accesses:,} accesses over {pages}, clock up to "
            f"{plot.max_clock:,}; tensors: {named}"
            + (f"; {unfilled:,} unfilled count slots excluded" if unfilled else "")
            + (f"; {plot.past_artifact_cutoff:,} accesses past clock {ARTIFACT_CLOCK_CUTOFF:,} kept "
               "(the artifact's plot drops them)" if plot.past_artifact_cutoff else "")
            + (f"; {inp.level_note}" if inp.level_note else "")
            + (f"; names from trace dir {data['naming']['trace_dir']}" if inp.naming.trace_dir
               else "; no naming trace dir (pages unnamed)")
            + f"\n{files[f'{inp.name}.png']}")
    result = SectionResult(SECTION, data, files, {f"dmat_{inp.name}_tensors": tensors}, summary, text)
    result.plot = plot  # type: ignore[attr-defined]  # the binned arrays, for tests and notebooks
    return result


def _cycles(clock: float) -> int | None:
    """A tensor's first or last clock (NaN: the tensor was never accessed) as the integer it is."""
    return None if np.isnan(clock) else int(clock)


def analyze(root: str | os.PathLike[str], out_dir: str | os.PathLike[str],
            bundle: Bundle | None = None) -> SectionResult:
    """All DMAT figures of a bundle's ``dmat/`` folder (``fig1``, ``fig10a/b/c`` ``.dmat`` files present)."""
    base = Path(root)
    if (base / "dmat").is_dir():
        base = base / "dmat"
    inputs = [base / f"{f}.dmat" for f in FIGURES if (base / f"{f}.dmat").is_file()]
    if not inputs:
        raise InputError(base, f"holds none of {', '.join(f + '.dmat' for f in FIGURES)}")
    parts = [dmat_figure(p, out_dir, bundle=bundle) for p in inputs]
    files = {k: v for r in parts for k, v in r.files.items()}
    data = {"section": SECTION, "paper_ref": "Fig. 1, Fig. 10a/b/c", "figures": [r.data for r in parts],
            "trace_dirs": [d for r in parts if (d := r.data["naming"]["trace_dir"])]}
    summary = [row for r in parts for row in r.summary]
    data["summary"] = summary
    files.update(write_results(out_dir, SECTION, data, input_path=inputs[0], bundle=bundle))
    return SectionResult(SECTION, data, files, {k: v for r in parts for k, v in r.tables.items()}, summary,
                         "\n".join(r.text for r in parts))


def analyze_bundle(bundle: Bundle, out_dir: str | os.PathLike[str]) -> SectionResult:
    """The section entry point: every DMAT figure of the run's bundle."""
    return analyze(bundle.path("dmat"), out_dir, bundle=bundle)

