"""The static notebook's Perfetto links: the block_sched / warp_sched traces a section read, exported
as Chrome Trace Event JSON (:mod:`neutrino_ae.report.figures.perfetto`) into ``<output_dir>/<section>/perfetto/``
and linked beside its figures. An export is reused while it is current by content: every file of the trace
it was made from has the sha256 it had then, and the export itself the sha256 it was written with (both kept in
``perfetto/timelines.json``); stamps (size, mtime) can be put back, content cannot."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_json
from neutrino_ae.bundle.manifest import sha256_file
from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.escape import md_link, md_text
from neutrino_ae.report.figures.perfetto import FORMAT_VERSION, export_perfetto, read_other_data
from neutrino_ae.run.display import link, markdown

log = logging.getLogger(__name__)
FOLDER = "perfetto"
#: In each ``perfetto/`` folder: per export, the trace files (name, size, sha256) it was made from and its own sha256.
INDEX = "timelines.json"
HOW_TO_OPEN = ("open one in [ui.perfetto.dev](https://ui.perfetto.dev) (*Open trace file*): a track group per SM, "
               "a track per resident slot, a slice per block or warp and one per scheduling gap; 1 µs on the "
               "axis = 1 clock cycle")


def _stamp(trace: Path) -> list[list[Any]]:
    """Name, size and sha256 of every file of ``trace`` (a trace directory: its result files, event.log,
    probe.toml ...; or one ``.bin``)."""
    files = sorted(p for p in trace.rglob("*") if p.is_file()) if trace.is_dir() else [trace]
    return [[f.relative_to(trace).as_posix() if trace.is_dir() else f.name, f.stat().st_size, sha256_file(f)]
            for f in files]


def _index(folder: Path) -> dict[str, Any]:
    try:
        doc = json.loads((folder / INDEX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def _current(out: Path, stamp: list[list[Any]]) -> dict[str, Any] | None:
    """The export's otherData when it was made from these very trace files, in this format, and is still the
    file that was written then (its sha256 in :data:`INDEX`)."""
    other = read_other_data(out)
    entry = _index(out.parent).get(out.name)
    if other is None or other.get("format_version") != FORMAT_VERSION or not isinstance(entry, dict):
        return None
    try:
        same = entry.get("stamp") == stamp and entry.get("sha256") == sha256_file(out)
    except OSError:
        return None
    return other if same else None


def _note(out: Path, stamp: list[list[Any]]) -> None:
    """Record in :data:`INDEX` what ``out`` was made from and its sha256."""
    index = _index(out.parent)
    index[out.name] = {"stamp": stamp, "sha256": sha256_file(out)}
    write_json(out.parent / INDEX, index)


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
            _note(out, stamp)
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
