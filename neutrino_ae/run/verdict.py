"""A notebook run's verdict: every selected section's claims judged on the summary rows, written to
``verdict.json`` in the output folder (with the trace directories each section read) and shown."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_json
from neutrino_ae.report import registry
from neutrino_ae.report.claims import (
    DIFFERS,
    PASS,
    SKIPPED,
    VERDICT_NAME,
    counts_line,
    verdict,
    verdict_table,
)
from neutrino_ae.report.results import SectionResult
from neutrino_ae.run.display import markdown


def trace_dirs_read(results: dict[str, SectionResult]) -> dict[str, list[str]]:
    """Per section, the trace directories its results say it read (``data["trace_dirs"]``)."""
    return {name: [str(d) for d in dirs] for name, res in results.items() if (dirs := res.data.get("trace_dirs"))}


def write_verdict(out_root: Path, rows: list[dict[str, Any]], kind: str, selected: list[str],
                  skipped: dict[str, str], nothing_collected: bool = False,
                  trace_dirs: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """Judge every selected section's claims on ``rows``; write ``verdict.json`` (with the trace directories
    each section read, ``trace_dirs``); show the table."""
    claims_by_section = {s.name: s.claims for s in registry.sections() if s.name in selected}
    outcomes = verdict(claims_by_section, rows, skipped)
    counts = {k: sum(o.status == k for o in outcomes) for k in (PASS, DIFFERS, SKIPPED)}
    if nothing_collected:
        overall = "NOTHING COLLECTED"
    elif counts[DIFFERS]:
        overall = "DIFFERS"
    elif counts[PASS]:
        overall = "PASS"
    else:
        overall = "SKIPPED"
    scope = {"sample": "SYNTHETIC sample bundle: this checks the pipeline (analyses vs an execution model), "
                       "not the paper's measurements",
             "paper": "the paper's traces", "dynamic": "traces collected on this machine's GPU"}.get(
        kind, "traces of unknown provenance")
    read = {s: list(d) for s, d in (trace_dirs or {}).items() if s in selected and d}
    doc = {"overall": overall, "bundle_kind": kind, "scope": scope, "counts": counts,
           "trace_dirs": read, "claims": [o.to_dict() for o in outcomes]}
    write_json(out_root / VERDICT_NAME, doc)
    dirs = "".join(f"\n* {s}: " + ", ".join(f"`{d}`" for d in ds) for s, ds in read.items())
    dirs = f"\n\nTrace directories read (newest collection by the time in its name):{dirs}" if dirs else ""
    markdown(f"### Verdict: {overall}\n\n{scope}. {counts_line(counts)}.{dirs}\n\n{verdict_table(outcomes)}\n")
    return doc
