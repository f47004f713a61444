"""Claims judged on summary rows: PASS, DIFFERS with the failing comparison, SKIPPED with a reason."""

from __future__ import annotations

import re

import pytest

from neutrino_ae.report.claims import DIFFERS, PASS, SKIPPED, Claim, Published, Truth, evaluate, verdict
from neutrino_ae.report.claims.view import verdict_html as verdict_table


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
    # One row per claim, verdict first; the reason in the row, the claim's words in its section's detail.
    rows = re.findall(r'<tr class="neutrino-ae-claim">(.*?)</tr>', table)
    assert [re.findall(r"<td[^>]*>(.*?)</td>", r)[0] for r in rows] == [
        '<b style="color:#1a7f37">PASS</b>', '<b style="color:#6e6e6e">SKIPPED</b>']
    assert "section failed: boom" in rows[1] and "text | with bar" in table.split("<details>")[1]
    assert "\n\n" not in table  # raw HTML in Markdown ends at a blank line


def test_bad_operator_is_refused():
    with pytest.raises(ValueError, match="op must be one of"):
        Claim("c", "c", "src", left="v", op="==", right=0)


def test_truth_claims_judge_each_row_against_its_ground_truth_within_the_tolerance():
    rows = [{"section": "s", "key": "a.x", "value": 101.0, "ground_truth": 100.0, "bundle_kind": "sample"},
            {"section": "s", "key": "b.x", "value": 90.0, "ground_truth": 100.0, "bundle_kind": "sample"},
            {"section": "s", "key": "c.x", "value": 5.0, "ground_truth": None, "bundle_kind": "sample"}]
    loose = Truth("t", "t", "model", key="{k}.x", rtol=0.2, why="noise")
    tight = Truth("u", "u", "model", key="{k}.x", rtol=0.02, why="rounding")
    out = {o.claim: o for o in verdict({"s": (loose, tight)}, rows)}
    assert out["t"].status == PASS and out["t"].tolerance == "±20 %" and out["t"].why == "noise"
    assert "1 row(s) without ground truth" in out["t"].obtained and out["t"].kind == "truth"
    assert out["u"].status == DIFFERS and out["u"].reason == "b.x = 90 vs truth 100 (-10 %)"
    assert out["u"].obtained.startswith("1/2 within tolerance")
    exact = Truth("e", "e", "model", key="a.x")
    assert evaluate("s", exact, {"a.x": 100.0}, {"a.x": 100.0}).obtained == "100 vs truth 100 (equal)"
    assert evaluate("s", exact, {"a.x": 100.0}, {"a.x": 100.0}).tolerance == "exact"
    assert Truth("p", "p", "m", key="x", atol=0.02).tolerance == "±0.02"
    # No ground truth at all (a paper bundle): SKIPPED, saying why; a missing value is never a pass.
    skipped = evaluate("s", exact, {"a.x": 100.0}, {"a.x": None})
    assert skipped.status == SKIPPED and "no ground truth" in skipped.reason
    assert evaluate("s", exact, {"a.x": None}, {"a.x": 100.0}).status == DIFFERS


def test_published_claims_are_judged_on_the_bundles_that_reproduce_the_published_run():
    claim = Published("p", "as published", "README", key="raw.r", value=100.0, rtol=0.1, why="similar")
    for kind, value, status in (("paper", 105.0, PASS), ("sample", 80.0, DIFFERS), ("dynamic", 80.0, SKIPPED)):
        (o,) = verdict({"s": (claim,)}, [{"section": "s", "key": "raw.r", "value": value, "bundle_kind": kind}])
        assert (o.status, o.kind, o.tolerance) == (status, "published", "±10 %"), (kind, o)
    assert "dynamic bundle" in o.reason
    table = verdict_table([o])
    # The tolerance and why are in the section's folded detail, not in the row.
    row, detail = table.split('<tr class="neutrino-ae-claim">')[1].split("<details>")
    assert "±10 %" not in row and "similar" not in row
    assert "<i>Tolerance:</i> ±10 % (similar)" in detail and "published" in detail


def test_each_section_states_a_direction_on_a_quantity_once_in_the_units_it_compares():
    """A reviewer reading the verdict sees one row per question: no section asks the same direction
    of the same quantity twice, and a threshold is shown in the units of the value it is compared
    with (a fraction is not shown against '5 %')."""
    from neutrino_ae.report.section import registry

    for section in registry.sections():
        directions = [c for c in section.claims if type(c) is Claim]
        lefts = [c.left for c in directions]
        assert len(lefts) == len(set(lefts)), (section.name, sorted(lefts))
        for c in directions:
            if isinstance(c.right, (int, float)):
                assert f"{c.right * c.factor:g}" in c.shown_expectation, (section.name, c.id, c.shown_expectation)


def _mixed_outcomes():
    """Two sections: a published claim, a long-keyed truth claim that fails, a shape claim, a skipped one."""
    from neutrino_ae.report.claims import verdict as judge

    long_key = "{group}.{kernel}.{probe}.a_rather_long_quantity_name_per_kernel_and_probe"
    claims = {"sec_one": (Published("published-number", "as printed", "README", key="raw.r", value=100.0, rtol=0.1,
                                    why="similar"),
                          Truth("long-truth", "every row is its truth", "model", key=long_key, rtol=0.01, why="x")),
              "sec_two": (Claim("direction", "a above b", "Fig. 9", left="a", op=">", right="b"),
                          Claim("unmeasured", "c above 0", "Fig. 9", left="c", op=">", right=0))}
    rows = [{"section": "sec_one", "key": "raw.r", "value": 104.0, "bundle_kind": "sample"}]
    rows += [{"section": "sec_one", "key": f"g.k{i}.p.a_rather_long_quantity_name_per_kernel_and_probe",
              "value": 1.0 + (i == 3), "ground_truth": 1.0, "bundle_kind": "sample"} for i in range(6)]
    rows += [{"section": "sec_two", "key": k, "value": v, "bundle_kind": "sample"} for k, v in (("a", 2.0), ("b", 1.0))]
    return judge(claims, rows)


@pytest.mark.parametrize("width", [60, 72, 100, 160])
def test_the_terminal_verdict_is_one_line_per_claim_verdict_first_within_the_width(width, monkeypatch):
    from neutrino_ae.report.claims.view import verdict_text

    out = _mixed_outcomes()
    monkeypatch.setenv("COLUMNS", str(width))
    text = verdict_text(out)  # $COLUMNS when no width is given
    lines = text.splitlines()
    assert max(map(len, lines)) <= width, text
    assert lines[0].split() == ["verdict", "claim", "expected", "obtained"]
    rows = [ln.split()[:2] for ln in lines if ln.split()[:1] in (["PASS"], ["DIFFERS"], ["SKIPPED"])]
    assert rows == [[o.status, o.claim] for o in out] == [["PASS", "published-number"], ["DIFFERS", "long-truth"],
                                                           ["PASS", "direction"], ["SKIPPED", "unmeasured"]]
    assert any(ln.startswith("sec_one") for ln in lines) and any(ln.startswith("sec_two") for ln in lines)
    # Why a claim did not pass, and what the published number means here, are whole in the notes under the table.
    notes = " ".join(" ".join(lines[lines.index(""):]).split())
    (failing,) = [o for o in out if o.status == DIFFERS]
    assert " ".join(failing.reason.split()) in notes and "no result matches c" in notes
    assert "checks the model's calibration, not the paper" in notes
    assert text == verdict_text(out, width)  # the same with the width given


def test_the_terminal_verdict_defaults_to_100_columns_and_never_goes_below_60(monkeypatch):
    from neutrino_ae.report.claims.view import verdict_text

    out = _mixed_outcomes()
    monkeypatch.delenv("COLUMNS", raising=False)
    wide = verdict_text(out)  # no terminal under pytest's capture: 100 columns
    assert max(map(len, wide.splitlines())) == 100
    assert max(map(len, verdict_text(out, 20).splitlines())) <= 60


def test_a_published_claim_on_the_sample_bundle_says_it_checks_the_models_calibration():
    from neutrino_ae.report.claims import CALIBRATION_NOTE
    from neutrino_ae.report.claims.view import verdict_text

    claim = Published("p", "as published", "README", key="raw.r", value=100.0, rtol=0.1, why="similar")
    notes = {}
    for kind in ("sample", "paper"):
        (o,) = verdict({"s": (claim,)}, [{"section": "s", "key": "raw.r", "value": 101.0, "bundle_kind": kind}])
        notes[kind] = o.note
        text, html = verdict_text([o], 100), verdict_table([o])
        assert ("calibration:" in text.splitlines()[3]) == (kind == "sample"), text
        assert ("<i>calibration:</i>" in html) == (kind == "sample")
    assert notes == {"sample": CALIBRATION_NOTE, "paper": ""}
    assert "calibration, not the paper" in CALIBRATION_NOTE


def test_a_section_skipped_for_one_reason_says_it_once_in_html():
    claims = {"s": (Claim("a", "a", "src", left="x", op=">", right=0),
                    Claim("b", "b", "src", left="y", op=">", right=0)),
              "t": (Claim("c", "c", "src", left="z", op=">", right=0),)}
    out = verdict(claims, _rows("t", z=1.0), skipped_sections={"s": "no traces collected or analysed"})
    table = verdict_table(out)
    assert table.count("no traces collected or analysed") == 1
    assert table.index("no traces collected or analysed") < table.index('<tr class="neutrino-ae-claim">')
    assert len(re.findall(r'<tr class="neutrino-ae-claim">', table)) == 3
