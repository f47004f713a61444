"""Collection for dynamic.ipynb: each section's own collector, reached through the registry.

A section's ``SECTION.collect`` entry fills ``<trace_root>/<section>/``; :func:`collect_section`
runs it and records the section in the tree's ``bundle.json`` (kind ``dynamic``), and
:func:`analyze_section` runs the same analysis static.ipynb uses on the collected tree.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from neutrino_ae.atomic import write_json
from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.report.results import SectionResult
from neutrino_ae.run import registry
from neutrino_ae.workloads.neutrino import CollectError, run_command, staged, tail


@dataclass
class Context:
    """What every section collector gets."""

    neutrino: str = "neutrino"
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    repeats: int = 1
    log: Callable[[str], None] = print
    #: extra command-line arguments per script-collected section, e.g. {"max_mem": ["--models", "llama1b-bs32"]}
    extra_args: dict[str, list[str]] = field(default_factory=dict)

def script_collector(section: str, script: str | os.PathLike[str]) -> Callable[[Path, Context], None]:
    """A collector that runs ``python <script> --out <trace_root>/<section> --neutrino N --repeats R``
    (the section's own collection CLI) into a staging folder."""
    def collect(root: Path, ctx: Context) -> None:
        with staged(root / section) as out:
            argv = [ctx.python, str(script), "--out", str(out.resolve()), "--neutrino", ctx.neutrino,
                    "--repeats", str(ctx.repeats), *ctx.extra_args.get(section, [])]
            rc, so, se, secs = run_command(argv, registry.REPO_ROOT, out, f"collect_{section}", ctx.env, ctx.timeout)
            if rc != 0:
                raise CollectError(f"{script} exited {rc}: {tail(se.read_text(errors='replace'))} (log: {se})")
            ctx.log(f"  {Path(script).name}: done in {secs:.1f}s ({so})")
    collect.__doc__ = f"Run {script} into <trace_root>/{section}."
    return collect


def write_dynamic_manifest(root: str | os.PathLike[str], **fields: object) -> Path:
    """Mark ``root`` as a dynamically collected tree (``bundle_kind`` = ``dynamic``).

    No file digests: traces are hundreds of MB and were produced here, not downloaded.
    """
    from neutrino_ae.bundle.manifest import DYNAMIC, FORMAT_VERSION, MANIFEST

    path = Path(root) / MANIFEST
    doc: dict[str, object] = {}
    if path.is_file():
        import json

        with contextlib.suppress(ValueError, OSError):
            doc = json.loads(path.read_text(encoding="utf-8"))
    doc.update({"kind": DYNAMIC, "format_version": FORMAT_VERSION, "files": {}})
    sections = dict(doc.get("sections", {}))  # type: ignore[arg-type]
    sections.update(fields.pop("sections", {}))  # type: ignore[arg-type]
    doc.update(fields)
    doc["sections"] = sections
    return write_json(path, doc)


def collect_section(name: str, trace_root: str | os.PathLike[str], ctx: Context | None = None) -> None:
    """Collect one section into ``trace_root/<name>`` and record it in the tree's bundle.json."""
    section = registry.get(name)
    if not section.collect:
        raise CollectError(f"section {name!r} has no collector")
    ctx = ctx or Context()
    root = Path(trace_root)
    root.mkdir(parents=True, exist_ok=True)
    section.entry("collect")(root, ctx)
    now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    write_dynamic_manifest(root, sections={name: {"collected_at": now, "neutrino": ctx.neutrino}})


def analyze_section(name: str, trace_root: str | os.PathLike[str],
                    output_dir: str | os.PathLike[str]) -> SectionResult:
    """Run the SAME analysis static.ipynb uses on a collected tree (its trace folders carry the
    collection time and pid, so the bundle's input-path check is skipped)."""
    section = registry.get(name)
    out = Path(output_dir) / name
    out.mkdir(parents=True, exist_ok=True)
    result = section.entry("analyze")(Path(trace_root), out)
    if not isinstance(result, SectionResult):
        raise NeutrinoAEError(f"{name}: analyze returned {type(result).__name__}, not a SectionResult")
    result.data.setdefault("bundle_kind", "dynamic")
    return result
