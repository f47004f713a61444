"""Warp scheduling and the tailing effect (paper Fig. 13a-d, Sec. 7): the whole section.

From a bundle's ``warp_sched/`` folder (``inputs.py``: where the inputs are and how they are read),
Fig. 13a/13b, the per-SM warp timelines of exclusive and shared scheduling on one x range
(``timelines.py``), and Fig. 13c/13d, the tailing effect, when a tail input exists (``tailing.py``);
the computations are in ``analysis.py``, the drawing helpers in ``figures.py``.
"""

from __future__ import annotations

import os

from neutrino_ae.bundle.context import Bundle, bundle_of
from neutrino_ae.report.results import SectionResult, write_results
from neutrino_ae.report.summary import summary_row

from .analysis import DEFAULT_TAIL_THRESHOLD, pick_timeline_sms
from .fast import timeline_extent
from .inputs import PAPER_REF, SECTION, chosen_line, find_inputs, load_warp_records
from .tailing import fig13cd
from .timelines import fig13a, fig13b


def warp_sched(root: str | os.PathLike[str], out_dir: str | os.PathLike[str],
               threshold: float = DEFAULT_TAIL_THRESHOLD, bundle: Bundle | None = None) -> SectionResult:
    """Fig. 13a, 13b, and 13c/d (when a tail input exists) from a bundle's ``warp_sched/`` folder;
    ``bundle``: the run's bundle (default: the one holding ``root``, found from it)."""
    inputs, skipped = find_inputs(root)
    bundle = bundle or bundle_of(inputs["exclusive"])
    # One x range for 13a and 13b, so exclusive and shared scheduling can be compared by eye.
    recs = {k: load_warp_records(inputs[k]) for k in ("exclusive", "shared")}
    sms = {k: pick_timeline_sms(rec) for k, rec in recs.items()}  # picked once: the figures show these
    x_max = max(timeline_extent(recs[k], sms[k]) for k in recs)
    a = fig13a(inputs["exclusive"], out_dir, x_max=x_max, rec=recs["exclusive"], sms=sms["exclusive"], bundle=bundle)
    b = fig13b(inputs["shared"], out_dir, x_max=x_max, rec=recs["shared"], sms=sms["shared"], bundle=bundle)
    cd = fig13cd(inputs["tail"], out_dir, threshold, bundle=bundle) if "tail" in inputs else None
    parts = [a, b] if cd is None else [a, b, cd]
    files = {k: v for r in parts for k, v in r.files.items()}
    data = {"section": SECTION, "paper_ref": PAPER_REF, "inputs": {k: str(v) for k, v in inputs.items()},
            "trace_dirs": [bundle.relative(v) for v in inputs.values()],
            "fig13a": a.data, "fig13b": b.data, "fig13cd": cd.data if cd else {"skipped": skipped["fig13cd"]},
            "skipped": skipped}
    ratio = b.data["makespan_cycles"] / a.data["makespan_cycles"] if a.data["makespan_cycles"] else None
    truth = bundle.ground_truth(SECTION)
    extra = summary_row(SECTION, "shared_vs_exclusive_makespan", ratio, "ratio", f"{PAPER_REF}a/b", bundle.kind,
                        truth.get("shared_vs_exclusive_makespan") if isinstance(truth, dict) else None)
    summary = [*a.summary, *b.summary, extra, *(cd.summary if cd else [])]
    data["summary"] = summary
    files.update(write_results(out_dir, SECTION, data, input_path=inputs["exclusive"], bundle=bundle))
    lines = [a.text, b.text, f"shared/exclusive makespan: {ratio:.3f}" if ratio else ""]
    lines.append(cd.text if cd else f"Fig. 13c/d skipped: {skipped['fig13cd']}")
    lines.extend(chosen_line(k, v, bundle) for k, v in inputs.items())
    tables = {k: v for r in parts for k, v in r.tables.items()}
    return SectionResult(SECTION, data, files, tables, summary, "\n".join(lines))


def analyze(root: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> SectionResult:
    """Section entry point (sections registry): same as :func:`warp_sched` with the default threshold."""
    return warp_sched(root, out_dir)


def analyze_bundle(bundle: Bundle, out_dir: str | os.PathLike[str]) -> SectionResult:
    """The section entry point: Fig. 13a-d from the run's bundle."""
    return warp_sched(bundle.path("warp_sched"), out_dir, bundle=bundle)
