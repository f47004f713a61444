"""What static.ipynb's cells call: one :class:`StaticNotebook` per notebook run, one call per cell::

    nb = StaticNotebook(bundle=bundle, trace_root=trace_root, ...)   # set-up cell
    nb.section("block_sched")                                       # one cell per section
    nb.figure("dmat", "fig1.png")                                   # a section's figures, one cell each
    nb.summary()                                                    # summary.json / summary.md, verdict.json

The committed notebook's section cells are presentation, not the list of sections: its ``sections = "all"``
runs every registered one, and the summary shows a section that no cell showed (a folder added since the
notebook was built) under its own heading.

dynamic.ipynb has the same shape with ``neutrino_ae.run.dynamic_notebook.DynamicNotebook`` (collect,
then analyse); both show results with ``run/display.py`` and write the verdict with ``run/verdict.py``.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from neutrino_ae.atomic import DiskFull, is_disk_full, write_text
from neutrino_ae.bundle import fetch
from neutrino_ae.bundle.context import open_bundle
from neutrino_ae.bundle.target_lock import hold_for_reading, release_reading
from neutrino_ae.errors import NetworkError, NeutrinoAEError
from neutrino_ae.escape import md_text
from neutrino_ae.report.command.layout import STATIC_RESULTS, default_trace_root
from neutrino_ae.report.command.paths import new_folder_parent
from neutrino_ae.report.command.script import os_error_line
from neutrino_ae.report.results import SectionResult, dataframe_to_markdown
from neutrino_ae.report.results.summary import summary_rows, summary_table, write_summary
from neutrino_ae.report.section import NotebookInputError, NotebookNetworkError, NotebookStop, registry
from neutrino_ae.run.ahead import Ahead, default_workers
from neutrino_ae.run.display import Placeholder, Progress, in_kernel, link, markdown, show
from neutrino_ae.run.lock import parent_hold
from neutrino_ae.run.notebook_setup import (
    NotebookDiskFull,
    check,
    check_types,
    flag,
    prepare_output,
    section_names,
    separate,
)
from neutrino_ae.run.publish import public_dir
from neutrino_ae.run.runner import is_cached, run_section
from neutrino_ae.run.verdict import (
    VerdictRun,
    kept_rows,
    kept_runs,
    kept_sections,
    trace_dirs_read,
    verdict_headline,
    write_verdict,
)
from neutrino_ae.sample import generate_bundle

log = logging.getLogger(__name__)


class StaticNotebook:
    """static.ipynb: resolve the bundle, then compute (or reuse) each section on it."""

    def __init__(self, bundle: str = "auto", trace_root: str = "", bundle_url: str = fetch.PAPER_BUNDLE_URL,
                 bundle_sha256: str = "", sections: Any = None, output_dir: str = STATIC_RESULTS,
                 sample_scale: str = "small", seed: int = 0, force: bool = False,
                 workers: int | None = None) -> None:
        # run_section imports the section folders; keep their bytecode caches out of the source tree.
        sys.dont_write_bytecode = True
        # types and ranges: the rules `neutrino-ae run -p` checks with (run/parameters.py)
        check_types("static", bundle=bundle, trace_root=trace_root, bundle_url=bundle_url, bundle_sha256=bundle_sha256,
                    output_dir=output_dir, sample_scale=sample_scale, seed=seed, force=force, workers=workers)
        check(bundle in fetch.BUNDLE_WORDS or fetch.is_zip_choice(bundle),
              f'bundle must be "auto", "paper", "sample" or the path of a trace.zip, not {bundle!r}')
        bundle = os.fspath(bundle)
        workers = default_workers() if workers is None else workers
        self.bundle_choice, self.force = bundle, flag("force", force)
        self.selected = section_names(sections)
        self.out_root = Path(output_dir)
        if str(trace_root).strip():  # one given: never created inside a folder that does not exist
            try:
                new_folder_parent(trace_root, "trace_root")
            except NeutrinoAEError as exc:
                raise NotebookInputError(str(exc)) from None
        trace_root = default_trace_root(bundle) if not str(trace_root).strip() else trace_root
        separate(self.out_root, Path(trace_root))
        previous = prepare_output(self.out_root)  # (verdict, summary) a partial run merges into
        created = fetch.new_folders(Path(trace_root))
        try:
            # The sample's generator prints a line per section; a download keeps its progress bar.
            self.bundle_root = fetch.ensure_bundle(trace_root, bundle=bundle, url=bundle_url,
                                                   sha256=bundle_sha256 or None, sample_scale=sample_scale,
                                                   seed=int(seed), progress=bundle != "sample",
                                                   generator=generate_bundle)
        except (NeutrinoAEError, OSError, ValueError) as exc:
            fetch.remove_if_empty([Path(trace_root) / fetch.DOWNLOAD_DIR, *created])  # no empty traces/paper/ left
            message = f"trace_root {os_error_line(exc)}" if isinstance(exc, OSError) else str(exc)
            if 'bundle="sample"' not in message and bundle != "sample":
                message += f"; {fetch.SAMPLE_HINT}"
            stop = NotebookNetworkError if isinstance(exc, NetworkError) else NotebookInputError  # exit 4 / 2
            raise stop(message) from None
        try:
            # Held shared until the summary: `sample --force` or `fetch --force` on this root waits for the run
            # instead of replacing files under it (issue 36), and other runs read beside it.
            self._read_lock = hold_for_reading(Path(self.bundle_root), progress=False)
            # read once (every section and the report use it) and checked against its digests
            self.bundle = open_bundle(self.bundle_root)
        except NeutrinoAEError as exc:
            raise NotebookInputError(str(exc)) from None
        self.kind = self.bundle.kind
        self.verdict_run = VerdictRun.begin("static", self.bundle.identity, *previous)
        self.results: dict[str, SectionResult] = {}
        self.failed: dict[str, str] = {}
        self.disk_full: dict[str, DiskFull] = {}  # sections that failed because the disk was full
        self.summary_path: Path | None = None
        self.shown: set[str] = set()  # the sections a cell has shown (the summary shows the others)
        self._print_header()
        self._ahead = Ahead(self.selected, self.bundle, self.out_root, self.force, workers)
        # Run interactively, the verdict also appears up here once the last cell has run (neutrino-ae run's
        # saved copy has it in a cell under the title instead).
        self._verdict_top = Placeholder("*The verdict appears here once the last cell has run.*") \
            if in_kernel() and parent_hold() is None else None

    def _print_header(self) -> None:
        manifest = self.bundle.manifest
        print(f"bundle: {self.kind} at {_shown_path(self.bundle_root)}")
        print(f"{self.verdict_run.identity.line}\nrun: {self.verdict_run.run_id}")
        if self.kind == "sample":
            print("=" * 100)
            print("WARNING: SYNTHETIC DATA. This is the sample bundle made by an execution model "
                  f"(scale={manifest.get('scale')}, seed={manifest.get('seed')}), not traces from a GPU.")
            print('Its numbers test the analyses; they do not reproduce the paper. Use bundle="paper" for that.')
            print("=" * 100)
        elif self.kind == "unknown":
            print("WARNING: no bundle.json in this trace root: the data's provenance is unknown (it may be synthetic); "
                  "figures and results files carry that warning.")
        elif self.kind == "paper":
            print(f"paper traces from {manifest.get('source') or manifest.get('url') or 'a hand-extracted trace.zip'}")
        print(f"sections: {', '.join(self.selected)}")
        print(f"outputs:  {_shown_path(self.out_root)}")

    def run(self, name: str, progress: Progress | None = None) -> SectionResult | None:
        """Compute (or reuse) one section's results; None when it is not selected or its input is unusable.

        A section with bad input reports one line and lets the others run; :meth:`summary` then
        stops the notebook with the list of failed sections (after saving what did work). ``progress``:
        the cell's progress line, updated while it waits.
        """
        if name not in self.selected:
            print(f"{name}: skipped (not in sections)")
            return None
        start = time.perf_counter()

        def tick(where: str = "in a worker process") -> None:
            if progress is not None:
                done = len(self.results) + len(self.failed) + self._ahead.done()
                progress.show(f"{name}: computing {where} ... {done} of {len(self.selected)} sections done "
                              f"({time.perf_counter() - start:.0f} s)")

        worker_seconds = self._ahead.wait(name, tick if progress is not None else None)
        if progress is not None and worker_seconds is None and (self.force or not is_cached(name, self.bundle,
                                                                                             self.out_root)):
            tick("in this kernel")
        try:
            res = self._result(name, worker_seconds, progress)
        except (NeutrinoAEError, OSError) as exc:
            plain_os_error = isinstance(exc, OSError) and not isinstance(exc, NeutrinoAEError)
            self.failed[name] = os_error_line(exc) if plain_os_error else str(exc)
            if is_disk_full(exc):
                self.disk_full[name] = exc if isinstance(exc, DiskFull) else DiskFull(exc.filename or self.out_root,
                                                                                      exc.errno)
            print(f"{name}: FAILED: {self.failed[name]}", file=sys.stderr)
            return None
        except Exception as exc:  # a bug in an analysis: the other sections still run, the summary says so
            self.failed[name] = f"{type(exc).__name__}: {exc}"
            print(f"{name}: FAILED ({type(exc).__name__}): {exc}", file=sys.stderr)
            return None
        self.failed.pop(name, None)
        self.disk_full.pop(name, None)
        self.results[name] = res
        elapsed = time.perf_counter() - start
        if worker_seconds:
            how = f"computed in {worker_seconds:.1f} s in a worker process, beside other sections"
        else:
            how = "reused cached results" if res.data.get("cached") else f"computed in {elapsed:.1f} s"
        # Progress for the log (run.log), not the notebook: the section's outputs below say what it made.
        log.info("%s: %s -> %s", name, how, self.out_root / name)
        return res

    def _result(self, name: str, worker_seconds: float | None, progress: Progress | None) -> SectionResult:
        try:
            # Computed ahead by a worker: its cache record is current, so this only reads it back.
            return run_section(name, self.bundle, self.out_root, force=self.force and worker_seconds is None)
        finally:
            if progress is not None:  # gone before the cell says anything else
                progress.done()

    def section(self, name: str) -> None:
        """Run a section and show it once, in the paper's form (``Section.notebook_show`` and
        ``notebook_text``); a section with its own figure cells shows only its text here. Returns
        nothing, so the cell shows no repr; the result is in ``nb.results[name]``."""
        self._show(name, self.run(name, Progress()))

    def _show(self, name: str, res: SectionResult | None) -> None:
        self.shown.add(name)
        sec = registry.get(name)
        figures = () if sec.notebook_figures else sec.notebook_show
        show(res, figures=figures, text=sec.notebook_text, caption=f"{sec.paper_ref}, {sec.title}")

    def figure(self, name: str, key: str) -> None:
        """One figure of a section (and a link to the tables named like it), e.g. ``figure("dmat", "fig1.png")``."""
        res = self.results.get(name)
        if res is not None:
            stem = Path(key).stem
            caption = dict(registry.get(name).notebook_figures).get(key, "")
            show(res, figures=[key], tables=[t for t in res.tables if t.endswith(f"_{stem}_tensors")], text=False,
                 caption=caption)

    def summary(self) -> None:
        """Run and show what no cell has (under its heading), then write summary.json / summary.md (linked,
        not shown: every number is there) and show the verdict. Returns nothing, so the cell shows no
        repr; the file is ``nb.summary_path``."""
        for name in registry.names():  # stands in for the cells of a section the notebook has none for
            if name in self.shown:
                continue
            if name not in self.selected:
                self.run(name)  # says it is skipped, as its cell would
                continue
            sec = registry.get(name)
            markdown(f"## {sec.title}\n\n* Paper: **{sec.paper_ref}**\n\n{sec.static_prose.strip()}")
            ran = name in self.results or name in self.failed
            self._show(name, self.results.get(name) if ran else self.run(name))
        if self.disk_full:  # no summary of a run the disk cut short: the previous one stays
            raise NotebookDiskFull(str(next(iter(self.disk_full.values()))))
        try:
            self._write_summary()
        except DiskFull as exc:
            raise NotebookDiskFull(str(exc)) from None
        finally:
            self._release_bundle()

    def _unchanged_bundle(self) -> None:
        """The bundle is still the one the run read (a writer that took no lock, another user's say): a
        changed one fails the run in one line instead of mixing two bundles' numbers in one verdict."""
        try:
            now = open_bundle(self.bundle_root).identity.digest
        except NeutrinoAEError as exc:
            raise NotebookInputError(f"{exc} (it changed while this run read it; run again)") from None
        if now != self.bundle.identity.digest:
            raise NotebookInputError(f"{self.bundle_root}: the bundle changed while this run read it (digest "
                                     f"{self.bundle.identity.digest} at the start, {now} now: regenerated by "
                                     "another process?); run again")

    def _release_bundle(self) -> None:
        fd, self._read_lock = getattr(self, "_read_lock", None), None
        release_reading(fd, Path(self.bundle_root))

    def _write_summary(self) -> None:
        self._unchanged_bundle()
        rows = summary_rows(self.results, bundle_kind=self.kind)
        # A partial run's summary keeps the sections its verdict keeps (run/verdict.py): one set.
        keep = kept_sections(self.verdict_run, self.out_root, self.selected)
        all_rows = [*rows, *kept_rows(self.verdict_run, keep)]
        covered = [s for s in registry.names() if s in self.selected or s in keep]
        table = summary_table(all_rows, ground_truth=(self.kind == "sample"))
        note = " (SYNTHETIC sample data: values come from an execution model, not from a GPU)" \
            if self.kind == "sample" else ""
        prev_failed = (self.verdict_run.previous_summary or {}).get("failed_sections") if keep else None
        failed = {**{s: m for s, m in (prev_failed if isinstance(prev_failed, dict) else {}).items() if s in keep},
                  **self.failed}
        table_md = (f"Summary of {len(all_rows)} results, bundle kind: {self.kind}{note}\n\n"
                    f"{dataframe_to_markdown(table)}\n")
        if failed:
            table_md += "\nFailed sections (no results):\n\n" + "".join(f"* {md_text(n)}: {md_text(m)}\n"
                                                                        for n, m in failed.items())
        summary_json = write_summary(self.out_root / "summary.json", all_rows, notebook="static",
                                     bundle=self.bundle_choice, bundle_kind=self.kind,
                                     bundle_root=str(Path(self.bundle_root).resolve()), sections=covered,
                                     failed_sections=failed, run_id=self.verdict_run.run_id,
                                     bundle_digest=self.verdict_run.identity.digest, merged=bool(keep),
                                     runs=kept_runs(self.verdict_run, keep, self.selected))
        summary_md = write_text(self.out_root / "summary.md", table_md)
        log.info("wrote %s and %s", summary_json, summary_md)
        mark_reports_stale(self.out_root)
        # Every number is in the files; the notebook shows the verdict over them, not a 200-row table.
        failed = "".join(f"\n* {md_text(n)}: FAILED: {md_text(m)}" for n, m in self.failed.items())
        kept = f" (and {len(all_rows) - len(rows)} kept from an earlier run: {', '.join(keep)})" if keep else ""
        markdown(f"{len(rows)} numbers from {len(self.results)} section(s){kept}, bundle kind {self.kind}{note}: "
                 f"[summary.md]({link(summary_md)}) · [summary.json]({link(summary_json)})" + failed)
        skipped = {n: f"section failed: {m}" for n, m in self.failed.items()}
        write_verdict(self.out_root, rows, self.kind, self.selected, skipped,
                      trace_dirs=trace_dirs_read(self.results), run=self.verdict_run, failed=dict(self.failed))
        if self._verdict_top is not None and (headline := verdict_headline(self.out_root)) is not None:
            self._verdict_top.update(headline)
        if self.failed:
            problems = "; ".join(f"{n}: {m}" for n, m in self.failed.items())
            raise NotebookStop(f"{len(self.failed)} section(s) failed, the others are saved: {problems}")
        self.summary_path = summary_json



def mark_reports_stale(out_root: Path) -> None:
    """``make report``'s page of an earlier run in ``out_root`` says it is stale (run/report.py); a page
    that cannot be rewritten is a warning, not a failed run."""
    from neutrino_ae.run.report import mark_stale

    if public_dir(out_root) != Path(out_root):
        return  # a generation (run/publish.py): `neutrino-ae run` marks them once the set is published
    try:
        for page in mark_stale(out_root):
            log.warning("%s shows an earlier run: marked STALE (rebuild it with `make report`)", page)
    except OSError as exc:
        log.warning("could not mark the report in %s stale: %s", out_root, exc)


def _shown_path(path: str | os.PathLike[str]) -> str:
    """A folder as the notebook names it: relative to the results folder (``neutrino-ae run``) or the
    working directory (Jupyter), so the outputs name no folder of the machine that ran it."""
    shown = link(Path(path))
    return f"{public_dir(path).resolve().name}/ (this notebook's folder)" if shown == "." else shown
