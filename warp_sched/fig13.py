"""Fig. 13a-d on the section driver: ``compute`` and ``figures`` (``inputs.load`` reads the inputs).

The section (``warp_sched.py``, the notebooks): Fig. 13a and 13b on one x range, so exclusive and shared
scheduling can be compared by eye, and Fig. 13c/d when a tail input exists; each figure's results are
written as a part of the section's (``fig13a.json`` ...), the section's summary in ``warp_sched.json``.
A per-figure script (``fig13a.py``, ``fig13b.py``, ``fig13cd.py``) computes its figure alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from neutrino_ae.report.section.driver import Figure, Result

from .analysis import pick_timeline_sms
from .inputs import PAPER_REF, SECTION, Frames, chosen_line
from .tailing import tail_figures, tail_numbers, tail_result
from .timelines import timeline_extent, timeline_figure, timeline_numbers, timeline_result

RATIO = "shared_vs_exclusive_makespan"


def compute(frames: Frames) -> Result:
    """One figure's result (a per-figure script), or the section's (its figures as parts)."""
    if frames.figure in ("fig13a", "fig13b"):
        key = frames.figure
        return timeline_result(timeline_numbers(frames.paths[key], key, frames.recs[key], frames.bundle, frames.sms))
    if frames.figure == "fig13cd":
        return tail_result(tail_numbers(frames.paths["tail"], frames.recs["tail"], frames.bundle, frames.threshold,
                                        frames.align))
    return section_result(frames)


def section_result(frames: Frames) -> Result:
    """Fig. 13a, 13b, and 13c/d (when a tail input exists) from a bundle's ``warp_sched/`` folder."""
    inputs, skipped, recs, bundle = frames.paths, frames.skipped, frames.recs, frames.bundle
    sms = {k: pick_timeline_sms(recs[k]) for k in ("exclusive", "shared")}  # picked once: the figures show these
    x_max = max(timeline_extent(recs[k], sms[k]) for k in sms)
    a, b = (timeline_result(timeline_numbers(inputs[k], stem, recs[k], bundle, sms[k], x_max=x_max))
            for k, stem in (("exclusive", "fig13a"), ("shared", "fig13b")))
    cd = (tail_result(tail_numbers(inputs["tail"], recs["tail"], bundle, frames.threshold, frames.align))
          if "tail" in inputs else None)
    parts = [a, b] if cd is None else [a, b, cd]
    data = {"section": SECTION, "paper_ref": PAPER_REF, "inputs": {k: str(v) for k, v in inputs.items()},
            "trace_dirs": [bundle.relative(v) for v in inputs.values()],
            "fig13a": a.data, "fig13b": b.data, "fig13cd": cd.data if cd else {"skipped": skipped["fig13cd"]},
            "skipped": skipped}
    ma, mb = a.numbers["fig13a.makespan_cycles"], b.numbers["fig13b.makespan_cycles"]
    ratio = mb / ma if ma else None
    truth = bundle.ground_truth(SECTION)
    tail_parts = [cd] if cd else []

    def text(files: Mapping[str, Path]) -> str:
        lines = [_text(a, files), _text(b, files), f"shared/exclusive makespan: {ratio:.3f}" if ratio else ""]
        lines.append(_text(cd, files) if cd else f"Fig. 13c/d skipped: {skipped['fig13cd']}")
        lines.extend(chosen_line(k, v, bundle) for k, v in inputs.items())
        return "\n".join(lines)

    return Result(
        numbers={**a.numbers, **b.numbers, RATIO: ratio, **{k: v for p in tail_parts for k, v in p.numbers.items()}},
        truth={**a.truth, **b.truth, RATIO: truth.get(RATIO) if isinstance(truth, dict) else None,
               **{k: v for p in tail_parts for k, v in p.truth.items()}},
        units={**{k: v for p in parts for k, v in p.units.items()}, RATIO: "ratio"},
        refs={**a.refs, **b.refs, RATIO: f"{PAPER_REF}a/b", **{k: v for p in tail_parts for k, v in p.refs.items()}},
        data=data, done=text, input=inputs["exclusive"], parts=parts)


def _text(part: Result, files: Mapping[str, Path]) -> str:
    """A part's lines and closing lines, as its own command prints them."""
    done = part.done(files) if callable(part.done) else part.done
    return "\n".join([*part.lines, done])


def figures(result: Result) -> list[Figure]:
    """A figure's result's: its timeline, or the tail's three figures (the section's are its parts')."""
    tail = result.plots.get("tail")
    return [*(timeline_figure(n) for n in result.plots.get("timelines", ())), *(tail_figures(tail) if tail else ())]
