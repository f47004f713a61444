"""Fig. 13a-d on the section driver: ``compute`` and ``figures`` (``inputs.load`` reads the inputs).

The section (``warp_sched.py``, the notebooks): Fig. 13a and 13b on one x range, so exclusive and shared
scheduling can be compared by eye, and Fig. 13c/d when a tail input exists; each figure's results are
written as a result of its own (``fig13a.json`` ...), then the section's, with the summary (``warp_sched.json``).
A per-figure script (``fig13a.py``, ``fig13b.py``, ``fig13cd.py``) computes its figure alone.
"""

from __future__ import annotations

from neutrino_ae.report.section.driver import Figure, Number, Result, value

from .analysis import pick_timeline_sms
from .inputs import PAPER_REF, SECTION, Frames, chosen_line
from .tailing import tail_figures, tail_numbers, tail_result
from .timelines import timeline_extent, timeline_figure, timeline_numbers, timeline_result

RATIO = "shared_vs_exclusive_makespan"


def compute(frames: Frames) -> dict[str, Result]:
    """One figure's result (a per-figure script), or each figure's and the section's, by stem."""
    if frames.figure in ("fig13a", "fig13b"):
        key = frames.figure
        return {key: timeline_result(timeline_numbers(frames.paths[key], key, frames.recs[key], frames.bundle,
                                                      frames.sms))}
    if frames.figure == "fig13cd":
        return {"fig13cd": tail_result(tail_numbers(frames.paths["tail"], frames.recs["tail"], frames.bundle,
                                                    frames.threshold, frames.align))}
    return section_results(frames)


def section_results(frames: Frames) -> dict[str, Result]:
    """Fig. 13a, 13b, and 13c/d (when a tail input exists) from a bundle's ``warp_sched/`` folder, then the
    section's own result (``warp_sched.json``: their documents, every number and the ratio)."""
    inputs, skipped, recs, bundle = frames.paths, frames.skipped, frames.recs, frames.bundle
    sms = {k: pick_timeline_sms(recs[k]) for k in ("exclusive", "shared")}  # picked once: the figures show these
    x_max = max(timeline_extent(recs[k], sms[k]) for k in sms)
    a, b = (timeline_result(timeline_numbers(inputs[k], stem, recs[k], bundle, sms[k], x_max=x_max))
            for k, stem in (("exclusive", "fig13a"), ("shared", "fig13b")))
    cd = (tail_result(tail_numbers(inputs["tail"], recs["tail"], bundle, frames.threshold, frames.align))
          if "tail" in inputs else None)
    parts = {"fig13a": a, "fig13b": b, **({"fig13cd": cd} if cd else {})}
    data = {"section": SECTION, "paper_ref": PAPER_REF, "inputs": {k: str(v) for k, v in inputs.items()},
            "trace_dirs": [bundle.relative(v) for v in inputs.values()],
            "fig13a": a.data, "fig13b": b.data, "fig13cd": cd.data if cd else {"skipped": skipped["fig13cd"]},
            "skipped": skipped, "summary": None}
    ma, mb = value(a.numbers["fig13a.makespan_cycles"]), value(b.numbers["fig13b.makespan_cycles"])
    ratio = mb / ma if ma else None
    truth = bundle.ground_truth(SECTION)
    tail_parts = [cd] if cd else []

    text = [_text(a), _text(b), f"shared/exclusive makespan: {ratio:.3f}" if ratio else ""]
    text.append(_text(cd) if cd else f"Fig. 13c/d skipped: {skipped['fig13cd']}")
    text.extend(chosen_line(k, v, bundle) for k, v in inputs.items())
    return {**parts, SECTION: Result(
        numbers={**a.numbers, **b.numbers, RATIO: Number(ratio, ref=f"{PAPER_REF}a/b"),
                 **{k: v for p in tail_parts for k, v in p.numbers.items()}},
        truth={**a.truth, **b.truth, RATIO: truth.get(RATIO) if isinstance(truth, dict) else None,
               **{k: v for p in tail_parts for k, v in p.truth.items()}},
        units={**{k: v for p in parts.values() for k, v in p.units.items()}, RATIO: "ratio"},
        data=data, done="\n".join(text), input=inputs["exclusive"])}


def _text(part: Result) -> str:
    """A figure's lines and closing lines, as its own command prints them."""
    return "\n".join([*part.lines, part.done])


def figures(result: Result) -> list[Figure]:
    """A figure's result's: its timeline, or the tail's three figures (none for the section's own result)."""
    tail = result.plots.get("tail")
    return [*(timeline_figure(n) for n in result.plots.get("timelines", ())), *(tail_figures(tail) if tail else ())]
