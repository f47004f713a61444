"""The static notebook's Perfetto links: the block_sched / warp_sched traces a section read, exported
as Chrome Trace Event JSON (:mod:`neutrino_ae.report.figures.perfetto`) into ``<output_dir>/<section>/perfetto/``
and linked beside its figures. An export is reused while its trace's result files are unchanged."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.escape import md_link, md_text
from neutrino_ae.report.figures.perfetto import FORMAT_VERSION, export_perfetto, read_other_data
from neutrino_ae.run.display import link, markdown

log = logging.getLogger(__name__)
FOLDER = "perfetto"
HOW_TO_OPEN = ("open one in [ui.perfetto.dev](https://ui.perfetto.dev) (*Open trace file*): a track group per SM, "
               "a track per resident slot, a slice per block or warp and one per scheduling gap; 1 µs on the "
               "axis = 1 clock cycle")


def _stamp(trace: Path) -> list[list[Any]]:
    files = sorted((trace / "result").glob("*.bin")) if trace.is_dir() else [trace]
    return [[f.name, f.stat().st_size, f.stat().st_mtime_ns] for f in files]


def _current(out: Path, stamp: list[list[Any]]) -> dict[str, Any] | None:
    """The export's otherData when it was made from these very result files, in this format."""
    other = read_other_data(out)
    current = other is not None and other.get("stamp") == stamp and other.get("format_version") == FORMAT_VERSION
    return other if current else None


def export_section(name: str, bundle_root: Path, out_root: Path, trace_dirs: list[str],
                   bundle_kind: str) -> list[tuple[str, Path, dict[str, Any]]]:
    """Export each trace dir (bundle-relative) of section ``name``; (label, file, otherData) for each."""
    done = []
    for rel in trace_dirs:
        trace = bundle_root / rel
        if not (trace.is_dir() and (trace / "result").is_dir()) and trace.suffix != ".bin":
            continue  # a table input (.npz/.csv) has no trace to show
        label = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(rel)).strip("_")
        out = out_root / name / FOLDER / f"{label}.json"
        stamp = _stamp(trace)
        other = _current(out, stamp)
        if other is None:
            provenance = {"stamp": stamp, "bundle_kind": bundle_kind, "synthetic": bundle_kind == "sample",
                          "trace": str(rel)}
            export_perfetto(trace, out, provenance=provenance)
            other = _current(out, stamp) or {}
            log.info("%s: Perfetto timeline of %s -> %s", name, rel, out)
        done.append((str(rel), out, other))
    return done


def show_timelines(nb: Any, name: str) -> None:
    """Link the Perfetto timelines of section ``name`` (a :class:`~neutrino_ae.run.notebook.StaticNotebook`'s
    result); nothing when the section did not run. An export that fails is one line, not a stop."""
    res = nb.results.get(name)
    if res is None:
        return
    dirs = [str(d) for d in res.data.get("trace_dirs") or []]
    try:
        done = export_section(name, Path(nb.bundle_root), Path(nb.out_root), dirs, str(nb.kind))
    except (NeutrinoAEError, OSError) as exc:
        log.warning("%s: no Perfetto timeline: %s", name, exc)
        return
    if not done:
        return
    synthetic = " (SYNTHETIC sample data)" if nb.kind == "sample" else ""
    items = []
    for rel, out, other in done:
        sampling = other.get("sampling", {})
        part = f" ({sampling.get('sms_whole')} of {sampling.get('sms')} SMs in full)" \
            if sampling.get("sms_summarised") else ""
        # The trace folder's name is the bundle's: text of the link, never markup or another target.
        items.append(f"* {md_link(rel, link(out))}: {md_text(other.get('blocks', '?'))} blocks, a slice per "
                     f"{md_text(other.get('level', 'block'))}{md_text(part)}")
    markdown(f"**Timelines for Perfetto**{synthetic}: {HOW_TO_OPEN}.\n\n" + "\n".join(items))
