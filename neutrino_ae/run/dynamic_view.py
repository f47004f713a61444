"""What dynamic.ipynb shows besides the sections (issue 37 item 4): the environment check as one compact
table of what is missing and how to get it, an honest line on where the analysed data came from, the
claims that can apply to it, and the claims a GPU run is judged on listed once as "not run" when
nothing was collected. Paths are shown relative to the working folder, never as absolute paths."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from neutrino_ae.escape import md_text
from neutrino_ae.report.claims import PUBLISHED, TRUTH, AnyClaim, Outcome
from neutrino_ae.report.claims.view import verdict_html as verdict_table

#: An absolute path inside a text (a tool's location, a folder of this machine).
_ABS = re.compile(r"(?<![\w.~])/(?:[\w.+@-]+/)*[\w.+@-]+")
NOT_NEEDED = "not needed by the ptx workloads"


def shown(path: str | os.PathLike[str]) -> str:
    """``path`` as the notebook prints it: relative to the working folder when inside it (the checkout,
    where the kernel runs), else ``…/<its last two parts>``: never a folder of this machine."""
    p = Path(path)
    if not p.is_absolute():
        return p.as_posix()
    try:
        rel = p.resolve().relative_to(Path.cwd().resolve())
        return rel.as_posix() if rel.parts else "."
    except (ValueError, OSError):
        return "…/" + "/".join(p.parts[-2:])


def unabsolute(text: str) -> str:
    """Every absolute path in ``text`` as :func:`shown` writes it. The working folder's own path is taken
    whole first: it may hold a space (a clone at ``/tmp/x y``), where :data:`_ABS` would stop."""
    here = re.escape(str(Path.cwd().resolve()))
    if here != "/":
        text = re.sub(rf"(?<![\w.~/]){here}/", "", text)  # a path inside it: relative
        text = re.sub(rf"(?<![\w.~/]){here}(?![\w.+@/-])", ".", text)  # the folder itself
    return _ABS.sub(lambda m: shown(m.group(0)), text)


def _version(detail: str) -> str:
    """``13.0 (/usr/local/bin/ptxas)`` -> ``13.0``."""
    return re.sub(r"\s*\((?:/[^)]*)\)$", "", detail).strip()


def _cell(text: str) -> str:
    return md_text(unabsolute(" ".join(str(text).split())))


def env_markdown(report) -> str:
    """The environment check (``workloads.envcheck.Report``) as Markdown: one row per missing item that
    this run needs (or that feeds some rows), with how to install it; what was found on one line."""
    missing = [c for c in report.checks if c.status != "ok" and not c.hint.startswith(NOT_NEEDED)]
    missing.sort(key=lambda c: not c.required)
    unneeded = [c.name for c in report.checks if c.status != "ok" and c.hint.startswith(NOT_NEEDED)]
    found = [f"{c.name} {_version(c.detail)}" for c in report.checks
             if c.status == "ok" and c.name not in ("workloads", "nvidia-gpu", "python")]
    lines = []
    if missing:
        lines += ["| missing | needed | here | how to get it |", "|---|---|---|---|"]
        lines += [f"| **{c.name}** | {'yes' if c.required else 'some rows'} | {_cell(c.detail)} | {_cell(c.hint)} |"
                  for c in missing]
        lines.append("")
    gpu = next((c for c in report.checks if c.name == "nvidia-gpu" and c.status == "ok"), None)
    if gpu is not None:
        lines.append(f"GPU: {_cell(gpu.detail)}  ")
    lines.append(f"Workloads: {_cell(report.family)} ({_cell(report.family_reason)})  ")
    if found:
        lines.append("Found: " + ", ".join(_cell(f) for f in found) + "  ")
    if unneeded:
        lines.append(f"Not needed here: {', '.join(unneeded)} (only by `workloads=\"paper\"`)  ")
    lines.append("Install what is missing from a terminal: `python prepare_env.py --install` "
                 "(`--dry-run` lists the commands; `--check` repeats this check).")
    return "\n".join(lines)


def applies(claim: AnyClaim, kind: str) -> bool:
    """Whether ``claim`` can be judged on data of bundle kind ``kind``: a ground-truth claim only on the
    sample bundle (the model's injected values), a published number only on the kinds it names (the
    authors' A100 runs), a shape claim on any data."""
    if claim.kind == TRUTH:
        return kind == "sample"
    if claim.kind == PUBLISHED:
        return kind in getattr(claim, "kinds", ())
    return True


def not_run_markdown(outcomes: Iterable[Outcome], why: str) -> str:
    """The claims a GPU run is judged on, once, as "not run": the verdict table (``verdict_view.verdict_html``: per
    section, one row per claim with what it expects; the claims in words in each section's detail)."""
    outcomes = list(outcomes)
    return (f"**Not run: {len(outcomes)} claims** ({why}). A run that collects traces on an NVIDIA GPU judges "
            f"each of them on its own data:\n\n{verdict_table(outcomes)}")


def provenance(collected: list[str], earlier: list[str], kind: str, blocker: str | None,
               trace_root: str) -> tuple[str, str]:
    """(short label, scope line) of what a run analysed: traces collected now, earlier traces (or another
    bundle) it did not collect, or nothing."""
    root = shown(trace_root)
    if collected:
        tail = f"; {', '.join(earlier)} from earlier traces under `{root}`" if earlier else ""
        return "traces collected on this GPU", f"traces collected on this machine's GPU by this run{tail}"
    why = blocker or "nothing could be collected"
    why = unabsolute(why.removesuffix(": analysing it"))  # bundle=...: the run analyses a bundle it was given
    if not earlier:
        short = ("no NVIDIA GPU here" if why.startswith("no NVIDIA GPU") else
                 "collection off (collect=False)" if why == "collect=False" else
                 "nothing in the bundle" if why.startswith("bundle=") else
                 "no neutrino CLI here" if "not on PATH" in why else "nothing collected")
        return (short,
                f"nothing was collected on this machine: {why}; no earlier traces were analysed")
    what = {"sample": "the SYNTHETIC sample bundle (an execution model, not a GPU)",
            "paper": "the paper's traces (the authors' A100)",
            "dynamic": "traces an earlier run collected"}.get(kind, "traces of unknown provenance")
    label = {"sample": "SYNTHETIC sample bundle", "paper": "the paper's traces",
             "dynamic": "earlier traces"}.get(kind, "traces of unknown provenance")
    return (f"{label}, nothing collected",
            f"nothing was collected by this run: {why}; {', '.join(earlier)} analysed {what} under `{root}`")
