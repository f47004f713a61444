"""The end-to-end benchmark harness must not rot: a ``--smoke`` run covers every case and size.

No timing is asserted (the machine is shared and noisy): only that every case produced a row with
numbers, and that the artifact's own scripts ran where the artifact snapshot is available.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from shared_build import build_once

from benchmarks import e2e, e2e_artifact, e2e_cases, e2e_measure


def _positive(value: object) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


@pytest.fixture(scope="module")
def smoke_doc(tmp_path_factory: pytest.TempPathFactory) -> dict:
    def build(tmp: Path) -> None:  # once per test run, by whichever xdist worker asks first (tests/shared_build.py)
        out = tmp / "e2e.json"
        code = e2e.main(["--smoke", "--cache", str(tmp / "cache"), "--json", str(out)])
        (tmp / "exit_code").write_text(str(code))

    tmp = build_once(tmp_path_factory, "e2e-smoke", build)
    doc = json.loads((tmp / "e2e.json").read_text())
    assert (tmp / "exit_code").read_text() == "0", doc["failures"]
    return doc


def test_every_case_and_size_has_a_row_with_numbers(smoke_doc: dict) -> None:
    assert smoke_doc["smoke"] is True
    assert smoke_doc["failures"] == []
    by_name = {c["case"]: c for c in smoke_doc["cases"]}
    assert set(by_name) == {c.name for c in e2e_cases.E2E_CASES}
    for name, case in by_name.items():
        assert [r["size_mult"] for r in case["sizes"]] == list(e2e.SMOKE_SIZES), name
        for row in case["sizes"]:
            ours = row["ours"]
            assert _positive(ours["seconds"]) and _positive(ours["peak_rss_bytes"]), (name, row["size_mult"])
            # the process's own peak: at least an interpreter, far below all RAM
            assert 10e6 < ours["peak_rss_bytes"] < smoke_doc["machine"]["mem_total_bytes"]
            assert ours["outputs"]["pngs"] >= 1
            assert row["input"]["bytes"] > 0
        # the largest size was profiled: the render function was found and took some time
        prof = case["sizes"][-1]["render"]
        assert prof is not None and prof["render_calls"] >= 1 and _positive(prof["render_seconds"]), name
        assert case["exponent_ours"] is not None and math.isfinite(case["exponent_ours"])
        assert any(t["metric"] == "exponent" for t in case["targets"])


def test_artifact_side_ran_where_the_snapshot_exists(smoke_doc: dict) -> None:
    by_name = {c["case"]: c for c in smoke_doc["cases"]}
    if not e2e_artifact.DEFAULT_ARTIFACT.is_file():
        assert smoke_doc["artifact"]["note"], "a missing artifact must be said"
        for case in by_name.values():
            assert all(r["artifact"] is None and r["artifact_note"] for r in case["sizes"])
        pytest.skip(f"{e2e_artifact.DEFAULT_ARTIFACT} absent: the artifact side was skipped (and said so)")
    for case in e2e_cases.E2E_CASES:
        rows = by_name[case.name]["sizes"]
        if case.artifact is None:
            assert all(r["artifact"] is None for r in rows)
            continue
        first = rows[0]
        assert first["artifact"] is not None, (case.name, first["artifact_note"])
        assert _positive(first["artifact"]["seconds"]) and _positive(first["artifact"]["peak_rss_bytes"])
        assert _positive(first["ratio"])
        assert {t["metric"] for t in first["targets"]} >= {"speedup", "rss_vs_artifact"}
    block = by_name["block_sched"]["sizes"][0]["artifact"]["outputs"]
    assert block["line"].startswith("No.block:")
    dmat = by_name["dmat"]["sizes"][0]["artifact"]["outputs"]
    assert dmat["png_bytes"] > 0 and dmat["dmat_bytes"] > 0
    assert smoke_doc["artifact"]["dmat_build_seconds"] > 0


def test_missing_artifact_is_skipped_with_a_note(tmp_path) -> None:
    art = e2e_artifact.prepare_artifact(tmp_path / "absent.tar.gz", tmp_path, need_dmat=True)
    assert art.tree is None and "not found" in art.note


def test_growth_exponent_fits_log_log() -> None:
    assert e2e_measure.growth_exponent([(1, 2.0), (10, 20.0), (30, 60.0)]) == pytest.approx(1.0)
    assert e2e_measure.growth_exponent([(1, 3.0), (10, 3.0)]) == pytest.approx(0.0)
    assert e2e_measure.growth_exponent([(1, 1.0), (10, 100.0)]) == pytest.approx(2.0)
    assert e2e_measure.growth_exponent([(5, 1.0)]) is None


def test_a_run_that_would_not_fit_is_not_started() -> None:
    import argparse

    args = argparse.Namespace(timeout=100.0)
    assert e2e_measure.skip_reason("x", {"peak_rss_bytes": 1e6, "seconds": 1.0}, 3.0, args) is None
    assert "timeout" in e2e_measure.skip_reason("x", {"peak_rss_bytes": 1e6, "seconds": 40.0}, 3.0, args)
    assert "RSS" in e2e_measure.skip_reason("x", {"peak_rss_bytes": 1e18, "seconds": 1.0}, 3.0, args)


def test_only_and_sizes_usage(capsys) -> None:
    assert [c.name for c in e2e_cases.expand_only("warp_sched")] == ["fig13a", "fig13cd"]
    assert [c.name for c in e2e_cases.expand_only("dmat,block_sched")] == ["block_sched", "dmat"]
    assert e2e.main(["--only", "nope"]) == 2
    assert "unknown case" in capsys.readouterr().err
    assert e2e.main(["--sizes", "0"]) == 2
