"""What dynamic.ipynb's cells call: one :class:`DynamicNotebook` per notebook run, one call per cell
(environment check, then per section: collect with ``neutrino`` when possible and analyse; a tour of
a trace directory; summary and verdict). The same shape as static.ipynb's ``StaticNotebook``
(``run/notebook.py``), with the same runner, display and verdict."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from neutrino_ae.bundle.context import open_bundle
from neutrino_ae.bundle.manifest import DYNAMIC
from neutrino_ae.bundle.trust import identity
from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.escape import md_text
from neutrino_ae.report.claims import TRUTH, AnyClaim, Outcome
from neutrino_ae.report.command.layout import DYNAMIC_RESULTS, DYNAMIC_TRACES, TRACE_ROOTS, default_trace_root
from neutrino_ae.report.results import SectionResult
from neutrino_ae.report.results.summary import summary_rows, write_summary
from neutrino_ae.report.section import NotebookStop, registry
from neutrino_ae.run.display import Placeholder, in_kernel, link, markdown, show
from neutrino_ae.run.dynamic_view import applies, env_markdown, not_run_markdown, provenance, shown, unabsolute
from neutrino_ae.run.lock import parent_hold
from neutrino_ae.run.notebook import mark_reports_stale
from neutrino_ae.run.notebook_setup import check, check_types, flag, prepare_output, section_names, separate
from neutrino_ae.run.runner import collect_section, run_section
from neutrino_ae.run.verdict import VerdictRun, trace_dirs_read, verdict_headline, write_verdict


class DynamicNotebook:
    """dynamic.ipynb: check the environment, collect each section with ``neutrino`` when possible,
    and analyse what was collected (or traces from an earlier run) with the static analyses."""

    def __init__(self, sections: Any = None, output_dir: str = DYNAMIC_RESULTS,
                 trace_root: str = DYNAMIC_TRACES, neutrino: str = "neutrino", repeats: int = 1,
                 collect: bool = True, timeout: float = 3600, collect_args: dict[str, list[str]] | None = None,
                 strict: bool = False, workloads: str = "auto", bundle: str = "") -> None:
        from neutrino_ae.workloads import envcheck
        from neutrino_ae.workloads.neutrino import CollectContext, collection_blocker

        sys.dont_write_bytecode = True  # keep the section folders free of __pycache__
        # types and ranges: the rules `neutrino-ae run -p` checks with (run/parameters.py)
        check_types("dynamic", output_dir=output_dir, trace_root=trace_root, neutrino=neutrino, repeats=repeats,
                    collect=collect, timeout=timeout, collect_args=collect_args, strict=strict, workloads=workloads,
                    bundle=bundle)
        collect, self.strict = flag("collect", collect), flag("strict", strict)
        self.selected = section_names(sections)
        # bundle: analyse a tree this run does not collect (the sample, the paper's, a folder), said so.
        check(isinstance(bundle, str | os.PathLike),
              f'bundle must be "", "sample", "paper" or a folder, not {bundle!r}')
        self.bundle = os.fspath(bundle)
        if self.bundle:
            own = self.bundle in TRACE_ROOTS and Path(trace_root) == Path(DYNAMIC_TRACES)
            trace_root = default_trace_root(self.bundle) if own else (
                trace_root if self.bundle in TRACE_ROOTS else self.bundle)
            check(Path(trace_root).is_dir(), f"bundle {self.bundle!r}: no bundle at {shown(trace_root)}; make it first "
                                             "(neutrino-ae sample, neutrino-ae fetch) or name a folder of traces")
            collect = False
        self.trace_root = Path(trace_root)
        self.out_root = Path(output_dir)
        separate(self.out_root, self.trace_root)
        # Collected traces carry no digests: a partial run's verdict says which sections it covers.
        self.verdict_run = VerdictRun.begin("dynamic", identity(DYNAMIC, {}), *prepare_output(self.out_root))
        self.env_report = envcheck.run_checks(neutrino=neutrino, workloads=workloads)
        # tools/real_neutrino's stub nvidia-smi names the emulated driver; results are then labelled EMULATED
        self.emulated = any("emucuda" in g.name for g in self.env_report.gpus)
        if self.emulated:
            print("\nEMULATED GPU: the real Neutrino over tools/real_neutrino/emucuda.c; every number below is "
                  "the emulator's model, not a measurement")
        self.blocker = None if collect else f"bundle={self.bundle!r}: analysing it" if self.bundle else "collect=False"
        if self.blocker is None:
            self.blocker = collection_blocker(neutrino)
        # What is missing first (issue 37 item 4): one compact table, then where things go.
        print(f"collection: {'enabled' if self.blocker is None else 'off (' + self.blocker + ')'}")
        markdown(env_markdown(self.env_report))
        print(f"traces: {shown(self.trace_root)}; outputs: {shown(self.out_root)}; "
              f"sections: {', '.join(self.selected)}")
        # Run interactively, the verdict also appears up here once the last cell has run (as in static.ipynb)
        self._verdict_top = Placeholder("*The verdict appears here once the last cell has run.*") \
            if in_kernel() and parent_hold() is None else None
        self.collected: list[str] = []  # sections collected by this run
        self.earlier: list[str] = []  # sections analysed from traces this run did not collect
        self.kind = DYNAMIC  # the bundle kind of what was analysed (trace_root's, once a section ran)
        self.results: dict[str, SectionResult] = {}
        self.shown: set[str] = set()  # the sections a cell has shown (the summary shows the others)
        self.problems: list[str] = []
        self.summary_path: Path | None = None
        self.ctx = CollectContext(neutrino=neutrino, repeats=int(repeats), timeout=float(timeout),
                           extra_args={k: list(v) for k, v in dict(collect_args or {}).items()},
                           workloads=self.env_report.family, emulated=self.emulated)

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
        fresh = False
        if self.blocker is not None:
            where = shown(earlier)
            tail = f"analysing earlier traces in {where}" if have_earlier else f"no earlier traces in {where}"
            if self.bundle:  # nothing to collect: the bundle named is what is analysed
                print(f"{name}: analysing {where} (bundle {self.bundle!r}; nothing collected)" if have_earlier
                      else f"{name}: skipped: no traces in {where} (bundle {self.bundle!r})")
            else:
                print(f"{name}: skipped: {self.blocker}; {tail}")
            if not have_earlier:
                return None
        else:
            start = time.perf_counter()
            print(f"{name}: collecting ...")
            try:
                collect_section(name, self.trace_root, self.ctx)
                fresh = True
                print(f"{name}: collected in {time.perf_counter() - start:.1f} s -> {shown(earlier)}")
            except NeutrinoAEError as exc:
                self._report(f"{name}: collection failed: {unabsolute(str(exc))}")
                if not (earlier.is_dir() and any(earlier.iterdir())):
                    return None
                print(f"{name}: analysing the earlier traces in {shown(earlier)}")
        try:
            # The same runner as static.ipynb's, on the tree as collected (its bundle.json just rewritten).
            bundle = open_bundle(self.trace_root)
            res = run_section(name, bundle, self.out_root, collected=True)
        except NeutrinoAEError as exc:
            self._report(f"{name}: analysis failed: {unabsolute(str(exc))}")
            return None
        self.kind = bundle.kind
        (self.collected if fresh else self.earlier).append(name)
        self.results[name] = res
        return res

    def section(self, name: str) -> None:
        """Collect and analyse a section, then show it as static.ipynb does (``nb.results[name]``)."""
        self.shown.add(name)
        res = self.run(name)
        sec = registry.get(name)
        if res is not None and self.ctx.workloads == "ptx" and sec.ptx_workloads:
            markdown(f"**Workloads: ptx** (PTX through the CUDA driver API): {sec.ptx_workloads}")
        show(res, figures=sec.notebook_show, text=sec.notebook_text)

    def internals(self) -> None:
        """Sec. 7: a tour of a block_sched trace directory and of Neutrino's probes (``run/dynamic_tour.py``)."""
        from neutrino_ae.run.dynamic_tour import tour

        tour(self.trace_root)

    def summary(self) -> None:
        """Collect, analyse and show what no cell has (a section folder added since the notebook was built,
        under its heading), then write summary.json and the verdict (``nb.summary_path``); no repr in the cell."""
        for name in registry.names():  # stands in for the cells of a section the notebook has none for
            if name in self.shown:
                continue
            if name not in self.selected:
                self.run(name)  # says it is not selected, as its cell would
                continue
            sec = registry.get(name)
            markdown(f"## {sec.title} ({sec.paper_ref})\n\n{sec.dynamic_prose.strip()}")
            self.section(name)
        rows = summary_rows(self.results, bundle_kind="dynamic")
        gpu = [f"{g.name} (sm_{g.compute_cap.replace('.', '')}, {g.sm_count} SMs)" for g in self.env_report.gpus]
        path = write_summary(self.out_root / "summary.json", rows, notebook="dynamic", bundle_kind="dynamic",
                             trace_root=str(self.trace_root.resolve()), gpu=gpu, collected=self.blocker is None,
                             sections=self.selected, problems=self.problems, run_id=self.verdict_run.run_id)
        print(f"wrote {shown(path)} ({len(rows)} rows)")
        mark_reports_stale(self.out_root)  # `make report`'s page of an earlier run here says so
        if rows:
            markdown(f"{len(rows)} numbers from {len(self.results)} section(s): [summary.json]({link(path)})")
        for p in self.problems:
            print(f"problem: {p}")
        label, scope = provenance(self.collected, self.earlier, self.kind, self.blocker, str(self.trace_root))
        nothing = not self.results
        skipped = {n: "not run: " + ("nothing collected" if nothing else "no traces collected or analysed")
                   for n in self.selected if n not in self.results}
        # Only the claims that can apply to the data analysed: never the sample model's ground truth on
        # GPU data, nor the authors' A100 numbers on another GPU (issue 37 item 4). The summary rows are
        # labelled dynamic whatever tree was analysed, so a published number is held to that kind.
        def judge(claim: AnyClaim) -> bool:
            return applies(claim, self.kind if claim.kind == TRUTH else DYNAMIC)

        doc = write_verdict(self.out_root, rows, "dynamic", self.selected, skipped, nothing_collected=nothing,
                            trace_dirs=trace_dirs_read(self.results), run=self.verdict_run, emulated=self.emulated,
                            scope=scope, source=label, judge=judge, show=not nothing)
        if self._verdict_top is not None and (headline := verdict_headline(self.out_root)) is not None:
            self._verdict_top.update(headline)
        if nothing:
            fields = set(Outcome.__dataclass_fields__)
            outcomes = [Outcome(**{k: v for k, v in c.items() if k in fields}) for c in doc["claims"]]
            markdown(f"### Verdict: {md_text(doc['overall'])}\n\n{md_text(scope[0].upper() + scope[1:])}.\n\n"
                     + not_run_markdown(outcomes, "nothing collected on this machine"))
        self.summary_path = path
