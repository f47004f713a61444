"""Claims judged on summary rows: PASS, DIFFERS with the failing comparison, SKIPPED with a reason."""

from __future__ import annotations

import pytest

from neutrino_ae.report.claims import DIFFERS, PASS, SKIPPED, Claim, evaluate, verdict, verdict_table


def _rows(section, **values):
    return [{"section": section, "key": k.replace("__", "."), "value": v} for k, v in values.items()]


def test_threshold_and_pairwise_claims():
    values = {"a.x.ratio": 1.0, "a.x.ncu": 2.0, "b.x.ratio": 3.0, "b.x.ncu": 2.5, "raw.r": 0.1}
    below = Claim("below", "below ncu", "Fig. 12", left="{w}.{p}.ratio", op="<", right="{w}.{p}.ncu")
    out = evaluate("s", below, values)
    assert out.status == DIFFERS and "b.x.ratio = 3 vs b.x.ncu = 2.5" in out.reason
    assert out.obtained == "1/2 comparisons hold"
    assert evaluate("s", Claim("t", "t", "src", left="raw.r", op=">", right=0.05), values).status == PASS
    half = Claim("h", "h", "src", left="a.x.ratio", op="<", right="a.x.ncu", factor=0.5)
    assert evaluate("s", half, values).status == DIFFERS  # 1.0 < 0.5 x 2.0 is false


def test_free_parts_on_the_right_compare_against_every_match():
    values = {"k1.dmat.slow": 3.0, "k1.gmem.slow": 1.2, "k1.block.slow": 1.1, "k2.dmat.slow": 1.0,
              "k2.gmem.slow": 1.5}
    c = Claim("max", "dmat costliest", "Table 2", left="{k}.dmat.slow", op=">=", right="{k}.{p}.slow")
    out = evaluate("s", c, values)
    assert out.status == DIFFERS and out.obtained == "2/3 comparisons hold" and "k2.gmem.slow" in out.reason


def test_missing_rows_and_nan_are_never_a_pass():
    c = Claim("c", "c", "src", left="x.ratio", op=">", right=0)
    assert evaluate("s", c, {}).status == SKIPPED and "no result matches x.ratio" in evaluate("s", c, {}).reason
    assert evaluate("s", c, {"x.ratio": None}).status == SKIPPED
    assert evaluate("s", c, {"x.ratio": float("nan")}).status == DIFFERS


def test_verdict_skips_failed_sections_with_their_reason_and_renders_a_table():
    claims = {"s": (Claim("c", "text | with bar", "src", left="v", op=">", right=0),),
              "t": (Claim("d", "t", "src", left="v", op=">", right=0),)}
    out = verdict(claims, _rows("s", v=1.0), skipped_sections={"t": "section failed: boom"})
    assert [(o.section, o.status, o.reason) for o in out] == [("s", PASS, ""), ("t", SKIPPED, "section failed: boom")]
    table = verdict_table(out)
    assert "text \\| with bar" in table and "**SKIPPED** (section failed: boom)" in table


def test_bad_operator_is_refused():
    with pytest.raises(ValueError, match="op must be one of"):
        Claim("c", "c", "src", left="v", op="==", right=0)
