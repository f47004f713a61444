"""A notebook run's verdict: every selected section's claims judged on the summary rows, written to
``verdict.json`` in the output folder (with the trace directories each section read) and shown.

A verdict belongs to its run:

* **No stale verdict.** A run removes the output folder's ``verdict.json`` when it starts
  (:func:`retire_verdict`, from ``prepare_output``) and writes the new one atomically at the end: a
  run that fails in its set-up or is interrupted leaves no verdict, never the previous one looking
  current. A run in which a section failed still writes its verdict, with that section's claims
  SKIPPED and ``overall`` ``FAILED`` (unless a claim DIFFERS).
* **Run id and bundle digest on every claim.** Each claim carries ``run_id`` (the run that judged it)
  and ``bundle_digest`` (``bundle/trust.py``: the paper archive's sha256, else one over the recorded
  file digests); ``bundle.line`` is the header (``bundle: paper, sha256 ..., not pinned in the repo``).
* **Partial runs** (``--sections dmat``). When the folder's previous verdict was made by the same
  notebook on the same bundle digest, and the previous ``summary.json`` is of the same runs, the new
  claims replace that verdict's claims of the sections run and the other sections' claims are kept as
  they were, each with its own run id (``merged``; ``runs`` lists the runs that contributed) -- but
  only for sections whose results are still in the output folder (their ``section-run.json``): a
  section whose results were deleted is not judged (:func:`kept_sections`, issue 36). The summary
  is merged the same way (:func:`kept_rows`), so ``summary.json`` and ``verdict.json`` always cover
  the same sections of the same runs. Otherwise (another bundle, no digest, no previous verdict) the
  verdict covers the sections run and says so (``partial``, ``sections``, ``missing_sections``).
  ``overall`` is judged over every claim in the file.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_json
from neutrino_ae.bundle.trust import Identity
from neutrino_ae.escape import html_attr, md_text
from neutrino_ae.report.claims import (
    DIFFERS,
    PASS,
    SKIPPED,
    VERDICT_NAME,
    AnyClaim,
    Outcome,
    counts_line,
    verdict,
)
from neutrino_ae.report.claims.view import TEXT_WIDTH, verdict_text
from neutrino_ae.report.claims.view import verdict_html as verdict_table
from neutrino_ae.report.command.layout import RECORD
from neutrino_ae.report.results import SectionResult
from neutrino_ae.report.section import registry
from neutrino_ae.run.display import html_output

FAILED = "FAILED"  # overall, when a section failed and no claim DIFFERS


def new_run_id() -> str:
    """``20260101T120000Z-3fa1``: the UTC start time and 16 random bits."""
    return f"{_dt.datetime.now(_dt.UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"


def retire_verdict(out_root: Path, name: str = VERDICT_NAME) -> dict[str, Any] | None:
    """Remove ``out_root/verdict.json`` (or ``name``: ``summary.json``) at the start of a run and return
    what it said (None when there was none or it could not be read): a run that does not finish leaves
    no verdict that looks like its own, and a partial run can still merge into the previous one."""
    path = Path(out_root) / name
    doc = None
    with contextlib.suppress(OSError, ValueError):
        doc = json.loads(path.read_text(encoding="utf-8"))
    path.unlink(missing_ok=True)
    return doc if isinstance(doc, dict) else None


@dataclass(frozen=True)
class VerdictRun:
    """One run as its verdict names it: ``run_id``, when it started, the notebook, the bundle's
    :class:`Identity` and the folder's previous verdict (for merging a partial run)."""

    notebook: str
    identity: Identity
    run_id: str
    started_at: str
    previous: dict[str, Any] | None = None
    previous_summary: dict[str, Any] | None = None

    @classmethod
    def begin(cls, notebook: str, identity: Identity, previous: dict[str, Any] | None = None,
              previous_summary: dict[str, Any] | None = None) -> VerdictRun:
        return cls(notebook, identity, new_run_id(),
                   _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"), previous, previous_summary)

    def mergeable(self) -> bool:
        """The previous verdict is of this notebook on this very bundle digest, and the previous summary
        is of the very runs that verdict names (so the two stay one set when merged)."""
        prev = self.previous or {}
        bundle = prev.get("bundle") if isinstance(prev.get("bundle"), dict) else {}
        return (self.identity.digest is not None and prev.get("notebook") == self.notebook
                and bundle.get("digest") == self.identity.digest and isinstance(prev.get("claims"), list)
                and _summary_runs(self.previous_summary) == set(_dict(prev.get("runs")) or {prev.get("run_id")}))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _summary_runs(summary: dict[str, Any] | None) -> set[Any] | None:
    """The runs a summary's rows are from: its ``runs`` (a merged one), else its ``run_id``."""
    if not isinstance(summary, dict) or not isinstance(summary.get("results"), list):
        return None
    return set(_dict(summary.get("runs"))) or {summary.get("run_id")}


def kept_sections(run: VerdictRun, out_root: Path, selected: list[str]) -> list[str]:
    """The sections a partial run keeps from the folder's previous verdict and summary: not run now,
    judged before, and their results still in ``out_root`` (``<section>/section-run.json``); none when
    the previous set is not mergeable (:meth:`VerdictRun.mergeable`)."""
    all_names = registry.names()
    if set(all_names) <= set(selected) or not run.mergeable():
        return []
    judged = {c.get("section") for c in (run.previous or {}).get("claims", []) if isinstance(c, dict)}
    return [s for s in all_names if s not in selected and s in judged and (Path(out_root) / s / RECORD).is_file()]


def kept_rows(run: VerdictRun, keep: list[str]) -> list[dict[str, Any]]:
    """The previous summary's rows of the sections ``keep`` (:func:`kept_sections`)."""
    rows = (run.previous_summary or {}).get("results", []) if keep else []
    return [r for r in rows if isinstance(r, dict) and r.get("section") in keep]


def kept_runs(run: VerdictRun, keep: list[str], selected: list[str]) -> dict[str, Any]:
    """The runs a merged set is from: those of the previous verdict whose claims are kept, then this one."""
    used = {c.get("run_id") for c in (run.previous or {}).get("claims", [])
            if isinstance(c, dict) and c.get("section") in keep}
    prev = {r: v for r, v in _dict((run.previous or {}).get("runs")).items() if r in used}
    return {**prev, run.run_id: {"started_at": run.started_at, "sections": list(selected)}}


def trace_dirs_read(results: dict[str, SectionResult]) -> dict[str, list[str]]:
    """Per section, the trace directories its results say it read (``data["trace_dirs"]``)."""
    return {name: [str(d) for d in dirs] for name, res in results.items() if (dirs := res.data.get("trace_dirs"))}


def _previous_claims(run: VerdictRun, keep: list[str]) -> list[Outcome]:
    fields = set(Outcome.__dataclass_fields__)
    out = []
    for c in (run.previous or {}).get("claims", []):
        if isinstance(c, dict) and c.get("section") in keep:
            with contextlib.suppress(TypeError):
                out.append(Outcome(**{k: v for k, v in c.items() if k in fields}))
    return out


def _overall(outcomes: list[Outcome], failed: dict[str, str], nothing_collected: bool) -> str:
    if nothing_collected:
        return "NOTHING COLLECTED"
    if any(o.status == DIFFERS for o in outcomes):
        return DIFFERS
    if failed:
        return FAILED
    return PASS if any(o.status == PASS for o in outcomes) else SKIPPED


def write_verdict(out_root: Path, rows: list[dict[str, Any]], kind: str, selected: list[str],
                  skipped: dict[str, str], nothing_collected: bool = False,
                  trace_dirs: dict[str, list[str]] | None = None, *, run: VerdictRun | None = None,
                  failed: dict[str, str] | None = None, emulated: bool = False, scope: str | None = None,
                  source: str | None = None, judge: Callable[[AnyClaim], bool] | None = None,
                  show: bool = True) -> dict[str, Any]:
    """Judge every selected section's claims on ``rows``; write ``verdict.json`` (with the trace
    directories each section read, ``trace_dirs``; the run id and bundle digest on every claim; merged
    into the previous verdict of the same bundle when only some sections ran) and show it.
    ``failed``: sections that failed in this run (name -> why); ``emulated``: a dynamic run on the emulated
    driver, labelled EMULATED as a sample run is SYNTHETIC. ``scope`` replaces the kind's scope line and
    ``source`` (a short label, ``verdict.json`` ``source``) says where the data came from (dynamic.ipynb:
    collected now, earlier traces, nothing); ``judge`` keeps only the claims that can apply to the data
    (dynamic.ipynb leaves out ground-truth claims); ``show=False`` leaves the display to the caller."""
    run = run or VerdictRun.begin(kind, Identity(kind, None, "nothing", None, f"bundle: {kind}, no digest"))
    all_names = registry.names()
    claims_by_section = {s.name: [c for c in s.claims if judge is None or judge(c)]
                         for s in registry.sections() if s.name in selected}
    stamp = {"run_id": run.run_id, "bundle_digest": run.identity.digest or ""}
    outcomes = [replace(o, **stamp) for o in verdict(claims_by_section, rows, skipped)]
    read = {s: list(d) for s, d in (trace_dirs or {}).items() if s in selected and d}
    failed = {s: m for s, m in (failed or {}).items() if s in selected}
    keep = kept_sections(run, out_root, selected)
    runs = kept_runs(run, keep, selected)
    merged = bool(keep)
    if merged:
        prev = run.previous or {}
        kept = _previous_claims(run, keep)
        by_section = {s: [o for o in [*outcomes, *kept] if o.section == s] for s in all_names}
        outcomes = [o for s in all_names for o in by_section[s]]
        read.update({s: d for s, d in _dict(prev.get("trace_dirs")).items() if s in keep and d})
        failed.update({s: m for s, m in _dict(prev.get("failed_sections")).items() if s in keep})
    covered = [s for s in all_names if any(o.section == s for o in outcomes) or s in selected]
    counts = {k: sum(o.status == k for o in outcomes) for k in (PASS, DIFFERS, SKIPPED)}
    overall = _overall(outcomes, failed, nothing_collected)
    scope = scope or {"sample": "SYNTHETIC sample bundle: this checks the pipeline (analyses vs an execution model), "
                                "not the paper's measurements",
                      "paper": "the paper's traces", "dynamic": "traces collected on this machine's GPU"}.get(
        kind, "traces of unknown provenance")
    if emulated:
        scope = ("EMULATED: the real Neutrino (CLI, hook driver, probe engine) over an emulated CUDA driver; "
                 "every value is the emulator's fill or time model, not a GPU measurement")
    missing = [s for s in all_names if s not in covered]
    doc = {"overall": overall, "bundle_kind": kind, "emulated": emulated, "scope": scope, "counts": counts,
           "notebook": run.notebook, "run_id": run.run_id, "started_at": run.started_at,
           "written_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
           "bundle": run.identity.to_dict(), "partial": bool(missing), "merged": merged,
           "sections": covered, "missing_sections": missing, "runs": runs, "failed_sections": failed,
           "trace_dirs": read, "claims": [o.to_dict() for o in outcomes]}
    if source:
        doc["source"] = source
    write_json(out_root / VERDICT_NAME, doc)
    if show:
        show_verdict(doc, outcomes)
    return doc


def show_verdict(doc: dict[str, Any], outcomes: list[Outcome]) -> None:
    """The verdict as a notebook output: its heading, whose it is (:func:`verdict_header`), its scope and
    counts, the trace directories read (folded) and ``outcomes`` as the one verdict table
    (``verdict_view.verdict_html``); the plain-text alternative is what ``neutrino-ae run`` prints."""
    e = html_attr  # what the header and trace folders say, escaped as they always were (quotes too)
    wrap = "overflow-wrap:anywhere"
    read = doc.get("trace_dirs") if isinstance(doc.get("trace_dirs"), dict) else {}
    dirs = "".join(f"<li>{e(s)}: " + ", ".join(f"<code>{e(str(d))}</code>" for d in ds) + "</li>"
                   for s, ds in read.items() if ds)
    dirs = (f'<details><summary>Trace directories read ({sum(len(d) for d in read.values() if d)}; the newest '
            f'collection by the time in its name)</summary><ul style="{wrap}">{dirs}</ul></details>') if dirs else ""
    scope = f"{doc.get('scope')}. {counts_line(doc.get('counts', {}))}."
    header = "<br>".join(e(line) for line in verdict_header(doc))
    page = (f"<h3>Verdict: {e(str(doc.get('overall')))}</h3><p style=\"{wrap}\">{header}</p>"
            f"<p><b>{e(scope)}</b></p>{dirs}{verdict_table(outcomes)}")
    plain = "\n".join([f"Verdict: {doc.get('overall')}", *verdict_header(doc), scope, "",
                        verdict_text(outcomes, width=TEXT_WIDTH)])
    html_output(page, plain)


def verdict_header(doc: dict[str, Any]) -> list[str]:
    """The lines that say whose verdict this is: its bundle (digest, pinned or not), run and coverage."""
    bundle = doc.get("bundle") if isinstance(doc.get("bundle"), dict) else {}
    lines = [str(bundle.get("line") or f"bundle: {doc.get('bundle_kind')}, no digest recorded"),
             f"run: {doc.get('run_id', 'not recorded')}"]
    runs = doc.get("runs") if isinstance(doc.get("runs"), dict) else {}
    if doc.get("merged"):
        mine = ", ".join(runs.get(doc.get("run_id"), {}).get("sections", []))
        others = ", ".join(r for r in runs if r != doc.get("run_id")) or "none"
        lines.append(f"merged: this run's sections ({mine}) replace theirs in the earlier verdict of the same "
                     f"bundle digest; the other claims are from run {others}")
    if doc.get("partial"):
        lines.append(f"partial: covers {', '.join(doc.get('sections', []))}; not judged: "
                     f"{', '.join(doc.get('missing_sections', []))}")
    return lines


def verdict_headline(out_dir: Path) -> str | None:
    """The run's verdict (verdict.json) in a few lines of Markdown, for the top of the notebook: the overall
    verdict with its scope (the synthetic caveat) in one heading, the counts, and any claim that did not pass;
    the table of every claim is the last cell's output (shown once). None when there is no verdict to read.
    ``neutrino-ae run`` puts it in a cell under the title; an interactive run shows it in the set-up cell."""
    from neutrino_ae.report.claims import read_verdict

    try:
        found = read_verdict(out_dir)
    except (OSError, ValueError, TypeError):
        return None
    if found is None:
        return None
    doc, outcomes = found
    kind = {"sample": "SYNTHETIC sample data", "paper": "the paper's traces", "dynamic": "traces from this GPU"}.get(
        str(doc.get("bundle_kind")), "traces of unknown provenance")
    if doc.get("source"):  # dynamic.ipynb: collected now, earlier traces, or nothing
        kind = str(doc["source"])
    if doc.get("emulated"):
        kind = "EMULATED GPU (emulator's model, not a measurement)"
    # The scope holds a tool's words (nvidia-smi's error) and folder names: Markdown text, never markup.
    text = (f"## Verdict: {md_text(doc.get('overall'))} · {md_text(kind)}\n\n**{md_text(doc.get('scope'))}.** "
            f"{counts_line(doc.get('counts', {}))}; every claim with what was expected and obtained is in the "
            f"Verdict section at the end and in `{VERDICT_NAME}`.")
    # Nothing judged (every claim SKIPPED, e.g. nothing collected): the end lists them once, not twice.
    others = [o for o in outcomes if o.status != PASS] if any(o.status != SKIPPED for o in outcomes) else []
    if others:
        text += f"\n\nClaims that did not pass:\n\n{verdict_table(others)}"
    return text + "\n"
