"""What the notebooks' cells call: one object per notebook run, one call per cell.

``static.ipynb``::

    nb = StaticNotebook(bundle=bundle, trace_root=trace_root, ...)   # set-up cell
    nb.section("block_sched")                                       # one cell per section
    nb.figure("dmat", "fig1.png")                                   # a section's figures, one cell each
    nb.summary()                                                    # summary.json / summary.md

``dynamic.ipynb`` has the same shape with :class:`DynamicNotebook` (collect, then analyse).
The display goes through IPython when it is there, else to stdout, so the same code runs in tests.
"""

from __future__ import annotations

import difflib
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_json, write_text
from neutrino_ae.bundle import fetch
from neutrino_ae.bundle.context import open_bundle
from neutrino_ae.errors import NeutrinoAEError
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
from neutrino_ae.report.layout import (
    DYNAMIC_RESULTS,
    DYNAMIC_TRACES,
    STATIC_RESULTS,
    default_trace_root,
)
from neutrino_ae.report.results import SectionResult, dataframe_to_markdown
from neutrino_ae.report.script import os_error_line
from neutrino_ae.report.section import NotebookInputError, NotebookStop
from neutrino_ae.report.summary import summary_rows, summary_table, write_summary
from neutrino_ae.run.ahead import Ahead, default_workers
from neutrino_ae.run.lock import hold_output_lock, parent_hold
from neutrino_ae.run.runner import collect_section, run_section
from neutrino_ae.sample import generate_bundle


def _display(obj: Any, **kwargs: Any) -> None:
    try:
        from IPython.display import display
    except ImportError:  # pragma: no cover - the suite installs IPython (ipykernel)
        print(obj)
        return
    display(obj, **kwargs)


def _markdown(text: str) -> None:
    from IPython.display import Markdown

    _display(Markdown(text))


def _html(html: str, plain: str) -> None:
    """HTML for the notebook (and its nbconvert rendering), ``plain`` for a text-only front end."""
    _display({"text/html": html, "text/plain": plain}, raw=True)


# On screen a row of figures is at most ROW_MAX_WIDTH_PX wide and a figure alone SINGLE_MAX_WIDTH_PX,
# about a printed page's width (the PNGs are kept at full resolution; each image links its file).
ROW_MAX_WIDTH_PX = 1100
SINGLE_MAX_WIDTH_PX = 800
FIGURES_PER_ROW = 2


def _link_base() -> Path:
    """Where links in the outputs are relative to: the folder of the saved executed notebook under
    ``neutrino-ae run`` (it is saved in output_dir), else the kernel's working directory (the
    notebook's folder in Jupyter)."""
    held = parent_hold()
    return held[1] if held is not None else Path.cwd()


def _rel(path: Path) -> str:
    try:
        return Path(os.path.relpath(Path(path).resolve(), _link_base().resolve())).as_posix()
    except ValueError:  # another drive (Windows)
        return Path(path).resolve().as_posix()


def show_figures(paths: list[Path]) -> None:
    """Figures side by side, ``FIGURES_PER_ROW`` per row, each scaled to its share of the row: a
    pair such as Fig. 13a/13b can be compared at a glance and the page stays short."""
    import base64
    import html

    if not paths:
        return
    share = 100 // min(FIGURES_PER_ROW, len(paths))
    imgs = []
    for path in paths:
        data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
        imgs.append(f'<a href="{html.escape(_rel(path))}"><img src="data:image/png;base64,{data}" '
                    f'alt="{html.escape(Path(path).name)}" style="width:100%"></a>')
    cells = "".join(f'<div style="flex:0 0 {share}%;max-width:{share}%;padding:2px;box-sizing:border-box">{i}</div>'
                    for i in imgs)
    width = SINGLE_MAX_WIDTH_PX if len(paths) == 1 else ROW_MAX_WIDTH_PX
    _html(f'<div style="display:flex;flex-wrap:wrap;max-width:{width}px">{cells}</div>',
          "\n".join(f"[figure] {p}" for p in paths))


def show_files(res: SectionResult, tables: Iterable[str] | None = None) -> None:
    """One line linking the result's full tables (CSV) and other files; nothing is printed inline."""
    names = None if tables is None else set(tables)
    links = []
    for tname in res.tables:
        if names is not None and tname not in names:
            continue
        csv = _table_file(res, tname)
        links.append(f"[{tname}.csv]({_rel(csv)})" if csv is not None else tname)
    if names is None:
        shown = {".png", ".csv", ".md", ".svg"}
        links += [f"[{Path(p).name}]({_rel(Path(p))})" for p in res.files.values() if Path(p).suffix not in shown]
    if links:
        _markdown("Full tables and files: " + " · ".join(links))


def _table_file(res: SectionResult, tname: str) -> Path | None:
    folders = {Path(p).parent for p in res.files.values()}
    for folder in sorted(folders):
        if (folder / f"{tname}.csv").is_file():
            return folder / f"{tname}.csv"
    return None


def show_text(text: str, how: str = "open") -> None:
    """The result's summary text: printed (``open``), collapsed (``folded``) or not at all."""
    import html

    if not text or how == "hidden":
        return
    # Never wrapped: a text table keeps its columns (a line too wide scrolls instead).
    style = ("white-space:pre;overflow-x:auto;font-family:var(--jp-code-font-family,monospace);"
             "font-size:12px;line-height:1.3")
    pre = f'<pre style="{style}">{html.escape(text.rstrip())}</pre>'
    if how == "folded":
        lines = text.rstrip().splitlines()
        _html(f"<details><summary>the same numbers as text ({len(lines)} lines)</summary>{pre}</details>", text)
        return
    _html(pre, text)


def show(res: SectionResult | None, figures: Iterable[str] | None = None, tables: Iterable[str] | bool | None = None,
         text: bool | str = True) -> None:
    """Show a result in the paper's form: its figures (all, or those named by file name or key),
    side by side; a line linking its full tables and files (never the tables inline); its summary
    text (``text``: True/``"open"``, ``"folded"``, False/``"hidden"``)."""
    if res is None:
        return
    wanted = None if figures is None else set(figures)
    show_figures([Path(p) for key, p in res.files.items() if Path(p).suffix == ".png"
                  and (wanted is None or key in wanted or Path(p).name in wanted)])
    if tables is not False:
        show_files(res, None if tables is None or tables is True else tables)
    show_text(res.text, "open" if text is True else "hidden" if text is False else text)


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise NotebookInputError(message)


def _check_count(name: str, value: Any) -> None:
    _check(isinstance(value, int) and not isinstance(value, bool) and value >= 0,
           f"{name} must be a non-negative integer, not {value!r}")


def _flag(name: str, value: Any) -> bool:
    _check(isinstance(value, bool), f"{name} must be True or False, not {value!r}")
    return bool(value)


def _sections(value: Any) -> list[str]:
    _check(value is None or isinstance(value, str) or (isinstance(value, list | tuple)
                                                         and all(isinstance(v, str) for v in value)),
           f"sections must be a list of section names or a comma-separated string, not {value!r}")
    try:
        names = registry.parse_names(value)
    except NeutrinoAEError as exc:
        raise NotebookInputError(str(exc)) from None
    _check(bool(names), f"sections names no section ({value!r}); valid: {', '.join(registry.names())}")
    return names


def _separate(output_dir: Path, trace_root: Path) -> None:
    out, traces = output_dir.resolve(), trace_root.resolve()
    _check(not out.is_relative_to(traces),
           f"output_dir {output_dir} is inside trace_root {trace_root}: results would mix with the traces; "
           "choose an output_dir outside it")


def _prepare_output(output_dir: Path) -> None:
    """Lock the output folder for this run and drop a summary a previous run left: a new run's
    results must never sit beside an old summary that looks complete."""
    try:
        hold_output_lock(output_dir)
    except OSError as exc:
        raise NotebookInputError(f"output_dir {output_dir}: {exc.strerror or exc}") from None
    except NeutrinoAEError as exc:
        raise NotebookInputError(str(exc)) from None
    for name in ("summary.json", "summary.md"):
        (output_dir / name).unlink(missing_ok=True)


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
    _markdown(f"### Verdict: {overall}\n\n{scope}. {counts_line(counts)}.{dirs}\n\n{verdict_table(outcomes)}\n")
    return doc


class StaticNotebook:
    """static.ipynb: resolve the bundle, then compute (or reuse) each section on it."""

    def __init__(self, bundle: str = "auto", trace_root: str = "", bundle_url: str = fetch.PAPER_BUNDLE_URL,
                 bundle_sha256: str = "", sections: Any = None, output_dir: str = STATIC_RESULTS,
                 sample_scale: str = "small", seed: int = 0, force: bool = False,
                 workers: int | None = None) -> None:
        # run_section imports the section folders; keep their bytecode caches out of the source tree.
        sys.dont_write_bytecode = True
        _check(bundle in ("auto", "paper", "sample"), f'bundle must be "auto", "paper" or "sample", not {bundle!r}')
        _check(sample_scale in ("small", "paper"), f'sample_scale must be "small" or "paper", not {sample_scale!r}')
        _check_count("seed", seed)
        workers = default_workers() if workers is None else workers
        _check_count("workers", workers)
        for name, value in (("trace_root", trace_root), ("output_dir", output_dir), ("bundle_url", bundle_url),
                            ("bundle_sha256", bundle_sha256)):
            _check(isinstance(value, str | os.PathLike), f"{name} must be a path or string, not {value!r}")
        _check(bool(str(output_dir).strip()), "output_dir must not be empty")
        self.bundle_choice, self.force = bundle, _flag("force", force)
        self.selected = _sections(sections)
        self.out_root = Path(output_dir)
        trace_root = default_trace_root(bundle) if not str(trace_root).strip() else trace_root
        _separate(self.out_root, Path(trace_root))
        _prepare_output(self.out_root)
        try:
            # The sample's generator prints a line per section; a download keeps its progress bar.
            self.bundle_root = fetch.ensure_bundle(trace_root, bundle=bundle, url=bundle_url,
                                                   sha256=bundle_sha256 or None, sample_scale=sample_scale,
                                                   seed=int(seed), progress=bundle != "sample",
                                                   generator=generate_bundle)
        except (NeutrinoAEError, OSError, ValueError) as exc:
            message = f"trace_root {os_error_line(exc)}" if isinstance(exc, OSError) else str(exc)
            if 'bundle="sample"' not in message and bundle != "sample":
                message += f"; {fetch.SAMPLE_HINT}"
            raise NotebookInputError(message) from None
        self.bundle = open_bundle(self.bundle_root)  # read once: every section and the report use it
        self.kind = self.bundle.kind
        self.results: dict[str, SectionResult] = {}
        self.failed: dict[str, str] = {}
        self.summary_path: Path | None = None
        self._print_header()
        self._ahead = Ahead(self.selected, self.bundle, self.out_root, self.force, workers)

    def _print_header(self) -> None:
        manifest = self.bundle.manifest
        print(f"bundle: {self.kind} at {Path(self.bundle_root).resolve()}")
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
            print(f"paper traces from {manifest.get('url', 'a hand-extracted trace.zip')} "
                  f"(sha256 {manifest.get('sha256', 'not recorded')})")
        print(f"sections: {', '.join(self.selected)}")
        print(f"outputs:  {self.out_root.resolve()}")

    def run(self, name: str) -> SectionResult | None:
        """Compute (or reuse) one section's results; None when it is not selected or its input is unusable.

        A section with bad input reports one line and lets the others run; :meth:`summary` then
        stops the notebook with the list of failed sections (after saving what did work).
        """
        if name not in self.selected:
            print(f"{name}: skipped (not in sections)")
            return None
        start = time.perf_counter()
        worker_seconds = self._ahead.wait(name)
        try:
            # Computed ahead by a worker: its cache record is current, so this only reads it back.
            res = run_section(name, self.bundle, self.out_root,
                              force=self.force and worker_seconds is None)
        except (NeutrinoAEError, OSError) as exc:
            self.failed[name] = os_error_line(exc) if isinstance(exc, OSError) else str(exc)
            print(f"{name}: FAILED: {self.failed[name]}", file=sys.stderr)
            return None
        except Exception as exc:  # a bug in an analysis: the other sections still run, the summary says so
            self.failed[name] = f"{type(exc).__name__}: {exc}"
            print(f"{name}: FAILED ({type(exc).__name__}): {exc}", file=sys.stderr)
            return None
        self.failed.pop(name, None)
        self.results[name] = res
        elapsed = time.perf_counter() - start
        if worker_seconds:
            how = f"computed in {worker_seconds:.1f} s in a worker process, beside other sections"
        else:
            how = "reused cached results" if res.data.get("cached") else f"computed in {elapsed:.1f} s"
        print(f"{name}: {how} -> {self.out_root / name}")
        return res

    def section(self, name: str) -> None:
        """Run a section and show it once, in the paper's form (``Section.notebook_show`` and
        ``notebook_text``); a section with its own figure cells shows only its text here. Returns
        nothing, so the cell shows no repr; the result is in ``nb.results[name]``."""
        res = self.run(name)
        sec = registry.get(name)
        figures = () if sec.notebook_figures else sec.notebook_show
        show(res, figures=figures, text=sec.notebook_text)

    def figure(self, name: str, key: str) -> None:
        """One figure of a section (and a link to the tables named like it), e.g. ``figure("dmat", "fig1.png")``."""
        res = self.results.get(name)
        if res is not None:
            stem = Path(key).stem
            show(res, figures=[key], tables=[t for t in res.tables if t.endswith(f"_{stem}_tensors")], text=False)

    def summary(self) -> None:
        """Run what has not run yet, then write summary.json / summary.md (linked, not shown: every
        number is there) and show the verdict. Returns nothing, so the cell shows no repr; the
        file is ``nb.summary_path``."""
        for name in self.selected:
            if name not in self.results and name not in self.failed:
                self.run(name)
        rows = summary_rows(self.results, bundle_kind=self.kind)
        table = summary_table(rows, ground_truth=(self.kind == "sample"))
        note = " (SYNTHETIC sample data: values come from an execution model, not from a GPU)" \
            if self.kind == "sample" else ""
        table_md = f"Summary of {len(rows)} results, bundle kind: {self.kind}{note}\n\n{dataframe_to_markdown(table)}\n"
        if self.failed:
            table_md += "\nFailed sections (no results):\n\n" + "".join(f"* {n}: {m}\n" for n, m in self.failed.items())
        summary_json = write_summary(self.out_root / "summary.json", rows, notebook="static", bundle=self.bundle_choice,
                                     bundle_kind=self.kind, bundle_root=str(Path(self.bundle_root).resolve()),
                                     sections=self.selected, failed_sections=dict(self.failed))
        summary_md = write_text(self.out_root / "summary.md", table_md)
        print(f"wrote {summary_json} and {summary_md}")
        # Every number is in the files; the notebook shows the verdict over them, not a 200-row table.
        failed = "".join(f"\n* {n}: FAILED: {m}" for n, m in self.failed.items())
        _markdown(f"{len(rows)} numbers from {len(self.results)} section(s), bundle kind {self.kind}{note}: "
                  f"[summary.md]({_rel(summary_md)}) · [summary.json]({_rel(summary_json)})" + failed)
        skipped = {n: f"section failed: {m}" for n, m in self.failed.items()}
        write_verdict(self.out_root, rows, self.kind, self.selected, skipped,
                      trace_dirs=trace_dirs_read(self.results))
        if self.failed:
            problems = "; ".join(f"{n}: {m}" for n, m in self.failed.items())
            raise NotebookStop(f"{len(self.failed)} section(s) failed, the others are saved: {problems}")
        self.summary_path = summary_json


class DynamicNotebook:
    """dynamic.ipynb: check the environment, collect each section with ``neutrino`` when possible,
    and analyse what was collected (or traces from an earlier run) with the static analyses."""

    def __init__(self, sections: Any = None, output_dir: str = DYNAMIC_RESULTS,
                 trace_root: str = DYNAMIC_TRACES, neutrino: str = "neutrino", repeats: int = 1,
                 collect: bool = True, timeout: float = 3600, collect_args: dict[str, list[str]] | None = None,
                 strict: bool = False) -> None:
        from neutrino_ae.workloads import envcheck
        from neutrino_ae.workloads.neutrino import CollectContext, collection_blocker

        sys.dont_write_bytecode = True  # keep the section folders free of __pycache__
        _check(isinstance(repeats, int) and not isinstance(repeats, bool) and repeats >= 1,
               f"repeats must be a positive integer, not {repeats!r}")
        _check(isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0,
               f"timeout must be a positive number of seconds, not {timeout!r}")
        _check(collect_args is None or (isinstance(collect_args, dict) and all(
            isinstance(v, list | tuple) and all(isinstance(a, str) for a in v) for v in collect_args.values())),
            f'collect_args must map section names to lists of strings, e.g. {{"max_mem": ["--models", "x"]}}, '
            f"not {collect_args!r}")
        collect, self.strict = _flag("collect", collect), _flag("strict", strict)
        self.selected = _sections(sections)
        self.trace_root = Path(trace_root)
        self.out_root = Path(output_dir)
        _separate(self.out_root, self.trace_root)
        _prepare_output(self.out_root)
        self.env_report = envcheck.run_checks(neutrino=neutrino)
        print(self.env_report.table())
        self.blocker = None if collect else "collect=False"
        if self.blocker is None:
            self.blocker = collection_blocker(neutrino)
        print()
        print(f"collection: {'enabled' if self.blocker is None else 'off (' + self.blocker + ')'}")
        print(f"traces:     {self.trace_root.resolve()}")
        print(f"outputs:    {self.out_root.resolve()}")
        print(f"sections:   {', '.join(self.selected)}")
        self.results: dict[str, SectionResult] = {}
        self.problems: list[str] = []
        self.summary_path: Path | None = None
        self.ctx = CollectContext(neutrino=neutrino, repeats=int(repeats), timeout=float(timeout),
                           extra_args={k: list(v) for k, v in dict(collect_args or {}).items()})

    def _report(self, message: str) -> None:
        if self.strict:
            raise NotebookStop(message)
        self.problems.append(message)
        print(message)

    def run(self, name: str) -> SectionResult | None:
        """Collect (when possible) and analyse one section; None when there is nothing to show."""
        if name not in self.selected:
            print(f"{name}: not selected")
            return None
        earlier = self.trace_root / name
        have_earlier = earlier.is_dir() and any(earlier.iterdir())
        if self.blocker is not None:
            tail = f"analysing earlier traces in {earlier}" if have_earlier else f"no earlier traces in {earlier}"
            print(f"{name}: skipped: {self.blocker}; {tail}")
            if not have_earlier:
                return None
        else:
            start = time.perf_counter()
            print(f"{name}: collecting ...")
            try:
                collect_section(name, self.trace_root, self.ctx)
                print(f"{name}: collected in {time.perf_counter() - start:.1f} s -> {earlier}")
            except NeutrinoAEError as exc:
                self._report(f"{name}: collection failed: {exc}")
                if not (earlier.is_dir() and any(earlier.iterdir())):
                    return None
                print(f"{name}: analysing the earlier traces in {earlier}")
        try:
            # The same runner as static.ipynb's, on the tree as collected (its bundle.json just rewritten).
            res = run_section(name, open_bundle(self.trace_root), self.out_root, collected=True)
        except NeutrinoAEError as exc:
            self._report(f"{name}: analysis failed: {exc}")
            return None
        self.results[name] = res
        return res

    def section(self, name: str) -> None:
        """Collect and analyse a section, then show it as static.ipynb does (``nb.results[name]``)."""
        res = self.run(name)
        sec = registry.get(name)
        show(res, figures=sec.notebook_show, text=sec.notebook_text)

    def internals(self) -> None:
        """A tour of the newest trace directory under ``trace_root``: what Neutrino writes."""
        from neutrino_ae.formats.tracedir import TraceDir

        def head(path: Path, n: int = 40) -> str:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            return "\n".join(lines[:n] + ([f"... ({len(lines) - n} more lines)"] if len(lines) > n else []))

        # The one rule (formats/tracedir.py: the time in the folder's name); a folder holding a result is
        # preferred, Table 2's --benchmark runs write none.
        dirs = open_bundle(self.trace_root).trace_dirs(recursive=True) if self.trace_root.is_dir() else []
        with_results = [d for d in dirs if TraceDir(d).results()]
        if not dirs:
            print(f"internals: skipped: no trace directory under {self.trace_root} yet")
            return
        newest = (with_results or dirs)[-1]
        print(f"newest trace directory: {newest}{'' if with_results else ' (none here holds a result file)'}\n")
        for path in sorted(newest.rglob("*")):
            rel = path.relative_to(newest)
            print("  " * (len(rel.parts) - 1) + rel.name + ("/" if path.is_dir() else f"  ({path.stat().st_size} B)"))
        for name in ("probe.toml", "event.log"):
            if (newest / name).is_file():
                print(f"\n--- {name}\n" + head(newest / name))
        try:
            kdirs = TraceDir(newest).kernels()  # by the index in kernel/<idx>_<sha1>
        except NeutrinoAEError as exc:
            print(f"\n(kernel/ not shown: {exc})")
            kdirs = []
        if kdirs:
            kdir = kdirs[-1].path
            for name in ("kernel.info", "process.log"):
                if (kdir / name).is_file():
                    print(f"\n--- kernel/{kdir.name}/{name}\n" + head(kdir / name))
            pruned, probed = kdir / "pruned.ptx", kdir / "probed.ptx"
            if pruned.is_file() and probed.is_file():
                diff = difflib.unified_diff(
                    pruned.read_text(errors="replace").splitlines(), probed.read_text(errors="replace").splitlines(),
                    "pruned.ptx", "probed.ptx", lineterm="", n=1)
                print("\n--- pruned.ptx vs probed.ptx (what the probe engine added)\n" + "\n".join(list(diff)[:80]))
        print(f"\nresult files in launch order: {[p.name for p in TraceDir(newest).results()]}")

    def summary(self) -> None:
        """Write summary.json and the verdict (``nb.summary_path``); no repr in the cell."""
        rows = summary_rows(self.results, bundle_kind="dynamic")
        gpu = [f"{g.name} (sm_{g.compute_cap.replace('.', '')}, {g.sm_count} SMs)" for g in self.env_report.gpus]
        path = write_summary(self.out_root / "summary.json", rows, notebook="dynamic", bundle_kind="dynamic",
                             trace_root=str(self.trace_root.resolve()), gpu=gpu, collected=self.blocker is None,
                             sections=self.selected, problems=self.problems)
        print(f"wrote {path} ({len(rows)} rows)")
        if rows:
            _markdown(f"{len(rows)} numbers from {len(self.results)} section(s): [summary.json]({_rel(path)})")
        for p in self.problems:
            print(f"problem: {p}")
        skipped = {n: "no traces collected or analysed" for n in self.selected if n not in self.results}
        write_verdict(self.out_root, rows, "dynamic", self.selected, skipped, nothing_collected=not self.results,
                      trace_dirs=trace_dirs_read(self.results))
        self.summary_path = path
