"""The paper's claims as data, and the verdict of a run on them.

A section declares its claims (``Section.claims``); each is checked against the run's summary rows
(``summary.json``), never against internals, so the same claims judge a paper, sample or dynamic
run. Three kinds, each shown with its tolerance in the verdict:

* :class:`Truth` (``truth``): every summary row matching a key pattern against its own
  ``ground_truth`` (the sample generator's injected value), within ``rtol``/``atol`` -- a tolerance
  the execution model justifies (``why``). SKIPPED, with the reason, when no matching row has a
  ground truth (a paper or dynamic bundle)::

      Truth("slot-reuse", "The slot-reuse estimator recovers the injected gaps", "sample model",
            key="{trace}.mean_slot_reuse_cycles", rtol=0.02, why="clocks are whole cycles ...")

* :class:`Published` (``published``): rows matching a key pattern against a number the paper or
  the artifact prints, within ``rtol``; judged only on bundles that claim to reproduce that
  measurement (``kinds``: the paper's traces and the sample modelled on them), SKIPPED elsewhere.

* :class:`Claim` (``shape``): a direction or threshold, no reference number::

      Claim("neutrino-below-ncu", "Neutrino's exposed latency is below Nsight Compute's",
            source="Fig. 12", left="{w}.{p}.neutrino_ratio", op="<", right="{w}.{p}.ncu_ratio")

  ``{name}`` in ``left`` matches one dotted key part; every left row must satisfy ``op`` against
  ``right`` -- a number, or a pattern filled with the left row's parts (free parts left in
  ``right`` match every row, e.g. all probes of one kernel) -- times ``factor``.

The outcome is PASS when every comparison holds, DIFFERS (with the first failures: key, expected,
obtained) when one does not, and SKIPPED (with the reason) when nothing can be compared: a claim is
never silently dropped.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

PASS, DIFFERS, SKIPPED = "PASS", "DIFFERS", "SKIPPED"
SHAPE, TRUTH, PUBLISHED = "shape", "truth", "published"  # claim kinds (Outcome.kind)
VERDICT_NAME = "verdict.json"  # written in a run's output folder (neutrino_ae.run.verdict.write_verdict)
_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_PART = re.compile(r"\{(\w+)\}")
#: The bundle kinds whose traces are (or model) the authors' A100 runs: what a Published claim judges.
REPRODUCING_KINDS = ("paper", "sample")
#: What a Published claim checks on the SYNTHETIC sample bundle (Outcome.note): the model was built to the number.
CALIBRATION_NOTE = ("SYNTHETIC sample bundle: the execution model is calibrated to this published number, so this "
                    "checks the model's calibration, not the paper")


@dataclass(frozen=True)
class Claim:
    """A shape claim: a direction or a threshold on summary values (no reference number)."""

    id: str
    text: str  # the claim, in the paper's words where possible
    source: str  # where the expectation comes from (paper section, artifact notebook, published number)
    left: str  # summary key pattern
    op: str  # one of < <= > >=
    right: str | float  # a number, or a key pattern
    factor: float = 1.0  # right side is multiplied by this
    expected: str = ""  # the expectation shown to people; defaults to "left op factor x right"
    unmeasured: str = ""  # why a bundle may hold no result for ``left`` (said when one does not)

    kind = SHAPE

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"claim {self.id}: op must be one of {', '.join(_OPS)}, not {self.op!r}")

    @property
    def shown_expectation(self) -> str:
        rhs = self.right if isinstance(self.right, str) else f"{self.right:g}"
        scale = "" if self.factor == 1 else f"{self.factor:g} x "
        return self.expected or f"{self.left} {self.op} {scale}{rhs}"

    @property
    def tolerance(self) -> str:
        return "shape claim (no reference number)"


def tolerance_text(rtol: float, atol: float) -> str:
    """``exact``, ``±2 %``, ``±0.02`` or ``±(0.02 + 1 %)``."""
    rel = f"{rtol * 100:.3g} %" if rtol else ""
    if not atol and (not rtol or rtol < 1e-6):
        return "exact" + (" (to float rounding)" if rtol else "")
    if not atol:
        return f"±{rel}"
    return f"±{atol:g}" if not rtol else f"±({atol:g} + {rel})"


@dataclass(frozen=True)
class Truth:
    """Each summary row matching ``key`` against its own ``ground_truth``: ``|value - truth| <= atol +
    rtol * |truth|``. ``why`` justifies the tolerance from the execution model (docs/sample-model.md)."""

    id: str
    text: str
    source: str
    key: str | tuple[str, ...]  # summary key pattern(s) ({part} matches one dotted part)
    rtol: float = 0.0
    atol: float = 0.0
    why: str = ""
    expected: str = ""

    kind = TRUTH

    @property
    def shown_expectation(self) -> str:
        return self.expected or f"{', '.join(_patterns(self.key))} = the model's ground truth"

    @property
    def tolerance(self) -> str:
        return tolerance_text(self.rtol, self.atol)


@dataclass(frozen=True)
class Published:
    """Rows matching ``key`` against a number the paper or the artifact prints (``value``), within
    ``rtol``; judged on the bundle kinds in ``kinds`` only (the published number was measured on the
    authors' A100: a dynamic run on another GPU is held to the shape claims)."""

    id: str
    text: str
    source: str
    key: str
    value: float
    rtol: float
    why: str = ""
    expected: str = ""
    kinds: tuple[str, ...] = field(default=REPRODUCING_KINDS)

    kind = PUBLISHED

    @property
    def shown_expectation(self) -> str:
        return self.expected or f"{self.key} = {_fmt(self.value)}"

    @property
    def tolerance(self) -> str:
        return tolerance_text(self.rtol, 0.0)


AnyClaim = Claim | Truth | Published


@dataclass(frozen=True)
class Outcome:
    section: str
    claim: str
    text: str
    source: str
    expected: str
    obtained: str
    status: str
    reason: str = ""
    kind: str = SHAPE  # shape | truth | published
    tolerance: str = ""  # how close counts as the expected value ("exact", "±2 %"; shape claims say so)
    why: str = ""  # why that tolerance
    run_id: str = ""  # the run that judged it (run/verdict.py)
    bundle_digest: str = ""  # the bundle it was judged on (bundle/trust.py Identity.digest)
    note: str = ""  # what the result means on this bundle (a published claim on a sample: CALIBRATION_NOTE)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _regex(pattern: str) -> re.Pattern[str]:
    out, pos = "", 0
    for m in _PART.finditer(pattern):
        out += re.escape(pattern[pos:m.start()]) + f"(?P<{m.group(1)}>[^.]+)"
        pos = m.end()
    return re.compile(out + re.escape(pattern[pos:]) + r"\Z")


def _fmt(v: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:,.1f}" if abs(v) >= 10_000 else f"{v:.4g}"


def _base(section: str, claim: AnyClaim) -> dict[str, Any]:
    return dict(section=section, claim=claim.id, text=claim.text, source=claim.source,
                expected=claim.shown_expectation, kind=claim.kind, tolerance=claim.tolerance,
                why=getattr(claim, "why", ""))


def evaluate(section: str, claim: AnyClaim, values: Mapping[str, float | None],
             truths: Mapping[str, float | None] | None = None, kind: str | None = None) -> Outcome:
    """Judge ``claim`` on one section's summary values (key -> value); ``truths`` (key -> ground
    truth) for Truth claims, ``kind`` (the bundle kind of the rows) for Published claims."""
    if isinstance(claim, Truth):
        return _evaluate_truth(section, claim, values, truths or {})
    if isinstance(claim, Published):
        return _evaluate_published(section, claim, values, kind)
    return _evaluate_shape(section, claim, values)


def _judge_near(base: dict[str, Any], compared: list[tuple[str, float | None, float]], rtol: float, atol: float,
                what: str, note: str = "") -> Outcome:
    """PASS when every ``(key, value, expected)`` is within ``atol + rtol * |expected|``."""
    failures, worst = [], None
    for key, value, want in compared:
        if value is None or math.isnan(value):
            failures.append(f"{key}: no value ({what} {_fmt(want)})")
            continue
        dev, allowed = value - want, atol + rtol * abs(want)
        rel = dev / abs(want) if want else (0.0 if not dev else math.copysign(math.inf, dev))
        score = abs(dev) / allowed if allowed else abs(dev)  # how far out, in tolerances (exact: in units)
        if worst is None or score > worst[0]:
            worst = (score, key, value, want, dev, rel)
        if abs(dev) > allowed:
            failures.append(f"{key} = {_fmt(value)} vs {what} {_fmt(want)} ({_dev(dev, rel, atol)})")
    if len(compared) == 1:
        key, value, want = compared[0]
        obtained = f"{_fmt(value)} vs {what} {_fmt(want)}"
        if worst is not None:
            obtained += f" ({_dev(worst[4], worst[5], atol)})"
    else:
        obtained = f"{len(compared) - len(failures)}/{len(compared)} within tolerance"
        if worst is not None and not worst[4]:
            obtained = f"{len(compared) - len(failures)}/{len(compared)} equal to the {what}"
        elif worst is not None:
            obtained += (f"; farthest {worst[1]} = {_fmt(worst[2])} vs {_fmt(worst[3])} "
                         f"({_dev(worst[4], worst[5], atol)})")
    reason = "; ".join(failures[:3]) + (f" (+{len(failures) - 3} more)" if len(failures) > 3 else "")
    if note:
        obtained += f" [{note}]"
    return Outcome(**base, obtained=obtained, status=DIFFERS if failures else PASS, reason=reason)


def _dev(dev: float, rel: float, atol: float) -> str:
    if not dev:
        return "equal"
    if atol or not math.isfinite(rel):
        return f"{dev:+.3g}"
    return f"{rel * 100:+.3g} %"


def _patterns(key: str | tuple[str, ...]) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


def _matches(key: str | tuple[str, ...], values: Mapping[str, Any]) -> list[str]:
    rxs = [_regex(p) for p in _patterns(key)]
    return [k for k in values if any(rx.match(k) for rx in rxs)]


def _evaluate_truth(section: str, claim: Truth, values: Mapping[str, float | None],
                    truths: Mapping[str, float | None]) -> Outcome:
    base = _base(section, claim)
    keys = _matches(claim.key, values)
    if not keys:
        return Outcome(**base, obtained="", status=SKIPPED,
                       reason=f"no result matches {' or '.join(_patterns(claim.key))}")
    judged = [k for k in keys if truths.get(k) is not None]
    if not judged:
        return Outcome(**base, obtained="", status=SKIPPED,
                       reason="no ground truth in these results (only a sample bundle carries the model's values)")
    untruthed = len(keys) - len(judged)
    note = f"{untruthed} row(s) without ground truth not judged" if untruthed else ""
    compared = [(k, values[k], float(truths[k])) for k in judged]  # type: ignore[arg-type]
    return _judge_near(base, compared, claim.rtol, claim.atol, "truth", note)


def _evaluate_published(section: str, claim: Published, values: Mapping[str, float | None],
                        kind: str | None) -> Outcome:
    base = _base(section, claim)
    if kind is not None and kind not in claim.kinds:
        return Outcome(**base, obtained="", status=SKIPPED,
                       reason=f"a number published for the authors' A100 runs; a {kind} bundle is held to the "
                              "shape claims")
    keys = _matches(claim.key, values)
    if not keys:
        return Outcome(**base, obtained="", status=SKIPPED, reason=f"no result matches {claim.key}")
    judged = _judge_near(base, [(k, values[k], float(claim.value)) for k in keys], claim.rtol, 0.0, "published")
    return replace(judged, note=CALIBRATION_NOTE) if kind == "sample" else judged


def _evaluate_shape(section: str, claim: Claim, values: Mapping[str, float | None]) -> Outcome:
    base = _base(section, claim)
    left_re = _regex(claim.left)
    lefts = [(m, v) for k, v in values.items() if (m := left_re.match(k))]
    if not lefts:
        why = f"{claim.unmeasured}: " if claim.unmeasured else ""
        return Outcome(**base, obtained="", status=SKIPPED, reason=f"{why}no result matches {claim.left}")
    compare = _OPS[claim.op]
    checked, failures, missing, not_made = [], [], [], []
    used = {m.group(0) for m, _ in lefts}
    for m, lv in lefts:
        if isinstance(claim.right, str):
            parts = m.groupdict()
            filled = _PART.sub(lambda p, parts=parts: parts.get(p.group(1), p.group(0)), claim.right)
            rre = _regex(filled)
            rights = [(k, v) for k, v in values.items() if rre.match(k) and k != m.group(0)]
            used.update(k for k, _ in rights)
        else:
            rights = [(f"{claim.right:g}", float(claim.right))]
        if lv is None or not rights or any(v is None for _, v in rights):
            empty = [k for k, v in rights if v is None]
            missing.append(m.group(0))
            not_made.append(m.group(0) if lv is None or not empty else f"{m.group(0)} vs {', '.join(empty)}")
            continue
        for rk, rv in rights:
            ok = not (math.isnan(lv) or math.isnan(rv)) and compare(lv, claim.factor * rv)
            checked.append((m.group(0), lv, rk, rv))
            if not ok:
                failures.append(f"{m.group(0)} = {_fmt(lv)} vs {rk} = {_fmt(rv)}")
    # Rows of the right-hand pattern that no comparison took (their group has no left row, e.g. a probe
    # name that is not quite "block_sched"): named, never silently left out.
    unjudged = sorted(k for k in values if isinstance(claim.right, str) and _regex(claim.right).match(k)
                      and k not in used)
    if not checked:
        return Outcome(**base, obtained="", status=SKIPPED,
                       reason=f"no value to compare for {', '.join((missing or unjudged)[:3])}")
    if len(checked) == 1 and not missing and not unjudged:
        k, lv, rk, rv = checked[0]
        obtained = f"{_fmt(lv)}" + ("" if rk == f"{rv:g}" else f" vs {_fmt(rv)}")
    else:
        obtained = f"{len(checked) - len(failures)}/{len(checked)} comparisons hold"
    notes = []
    if not_made:
        notes.append(f"{len(not_made)} not made, a value missing (not measured): {_few(not_made)}")
    if unjudged:
        notes.append(f"{len(unjudged)} row(s) not judged, nothing to compare them with: {_few(unjudged)}")
    if notes:
        obtained += "; " + "; ".join(notes)
    shown = "; ".join(failures[:3]) + (f" (+{len(failures) - 3} more)" if len(failures) > 3 else "")
    reason = "; ".join([*([shown] if failures else []), *notes])
    return Outcome(**base, obtained=obtained, status=DIFFERS if failures else PASS, reason=reason)


def _few(items: list[str], n: int = 3) -> str:
    return ", ".join(items[:n]) + (f" (+{len(items) - n} more)" if len(items) > n else "")


def verdict(claims_by_section: Mapping[str, Iterable[AnyClaim]], rows: Iterable[Mapping[str, Any]],
            skipped_sections: Mapping[str, str] | None = None) -> list[Outcome]:
    """Every claim of every section judged on summary ``rows`` (their values, ground truths and bundle
    kind); sections in ``skipped_sections`` (name -> why: failed, not selected, nothing collected) report
    their claims SKIPPED with that reason."""
    values: dict[str, dict[str, float | None]] = {}
    truths: dict[str, dict[str, float | None]] = {}
    kinds: dict[str, Counter[str]] = {}
    for r in rows:
        section, key = str(r.get("section")), str(r.get("key"))
        v, t = r.get("value"), r.get("ground_truth")
        values.setdefault(section, {})[key] = None if v is None else float(v)
        truths.setdefault(section, {})[key] = None if t is None else float(t)
        if r.get("bundle_kind"):
            kinds.setdefault(section, Counter())[str(r["bundle_kind"])] += 1
    skipped = dict(skipped_sections or {})
    out = []
    for section, claims in claims_by_section.items():
        kind = kinds[section].most_common(1)[0][0] if kinds.get(section) else None
        for claim in claims:
            if section in skipped:
                out.append(Outcome(**_base(section, claim), obtained="", status=SKIPPED, reason=skipped[section]))
            else:
                out.append(evaluate(section, claim, values.get(section, {}), truths.get(section, {}), kind))
    return out


def short_digest(digest: str) -> str:
    """A bundle digest as a table shows it (its first 12 hex digits; the JSON has all 64)."""
    return digest[:12] if digest else "none"


def trace_dirs_lines(trace_dirs: Mapping[str, Iterable[str]]) -> list[str]:
    """``<section>: <dir>, <dir>`` per section: the trace directories its numbers came from (``verdict.json``
    ``trace_dirs``; where a folder holds several collections, the newest by the time in its name)."""
    return [f"{section}: {', '.join(map(str, dirs))}" for section, dirs in trace_dirs.items() if dirs]


def failed(outcomes: Iterable[Outcome]) -> list[Outcome]:
    return [o for o in outcomes if o.status == DIFFERS]


def counts_line(counts: Mapping[str, int]) -> str:
    """``3 PASS, 1 DIFFERS, 0 SKIPPED`` (a status missing from ``counts`` counts 0)."""
    return ", ".join(f"{counts.get(k, 0)} {k}" for k in (PASS, DIFFERS, SKIPPED))


def read_verdict(out_dir: Path) -> tuple[dict[str, Any], list[Outcome]] | None:
    """The ``verdict.json`` in ``out_dir`` and its claims as Outcomes; None when there is none.
    A damaged file raises (OSError, ValueError, TypeError)."""
    path = Path(out_dir) / VERDICT_NAME
    if not path.is_file():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    fields = set(Outcome.__dataclass_fields__)
    return doc, [Outcome(**{k: v for k, v in c.items() if k in fields}) for c in doc.get("claims", [])]
