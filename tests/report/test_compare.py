"""summary.json schema (write/read) and compare: tolerance rule, missing rows, exit codes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from neutrino_ae.cli import main
from neutrino_ae.errors import InputError
from neutrino_ae.report.results import compare
from neutrino_ae.report.results.summary import SCHEMA, read_summary, summary_row, write_summary

BASE = [
    summary_row("block_sched", "mean_running_cycles", 602241, "cycles", "Sec. 4.5", "sample", 600000),
    summary_row("block_sched", "mean_scheduling_cycles", 87713, "cycles", "Sec. 4.5", "sample"),
    summary_row("max_mem", "llama8b-bs32/dmat", 0.0, "ratio", "Fig. 11", "sample"),
]


def write(dir_: Path, rows: list[dict], **meta) -> Path:
    dir_.mkdir(parents=True, exist_ok=True)
    return write_summary(dir_, rows, notebook="static", **meta)


def test_write_summary_normalises_and_round_trips(tmp_path: Path) -> None:
    path = write_summary(tmp_path / "s.json", [
        {"section": "dmat", "key": "pages", "value": np.int64(7), "extra": "kept"},
        {"section": "dmat", "key": "nan", "value": float("nan"), "ground_truth": np.float32(1.5)},
    ], bundle_kind="sample")
    doc = read_summary(path)
    assert doc["schema"] == SCHEMA and doc["bundle_kind"] == "sample"
    first, second = doc["results"]
    assert first == {"section": "dmat", "key": "pages", "paper_ref": None, "value": 7.0, "unit": None,
                     "bundle_kind": "unknown", "ground_truth": None, "extra": "kept"}
    assert second["value"] is None and second["ground_truth"] == 1.5
    assert "NaN" not in path.read_text()


def test_write_summary_rejects_duplicates_and_non_numbers(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="duplicate summary row dmat/a"):
        write_summary(tmp_path, [{"section": "dmat", "key": "a", "value": 1}] * 2)
    with pytest.raises(ValueError, match="must be a number"):
        write_summary(tmp_path, [{"section": "dmat", "key": "a", "value": "1"}])
    with pytest.raises(ValueError, match="lacks value"):
        write_summary(tmp_path, [{"section": "dmat", "key": "a"}])
    assert not (tmp_path / "summary.json").exists()


def test_identical_runs_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a", BASE)
    b = write(tmp_path / "b", BASE)
    assert main(["compare", str(a), str(b.parent)]) == 0
    assert "3 values compared; none moved" in capsys.readouterr().out


def test_tolerance_is_symmetric_and_respects_atol() -> None:
    assert not compare.moved(100, 109, rtol=0.1, atol=0)
    assert compare.moved(100, 112, rtol=0.1, atol=0)
    assert compare.moved(100, 112, 0.1, 0) == compare.moved(112, 100, 0.1, 0)
    assert not compare.moved(0.0, 0.5, rtol=0.1, atol=1.0)
    assert compare.moved(0.0, 0.5, rtol=0.1, atol=0.0)
    assert not compare.moved(None, None, 0.1, 0) and compare.moved(None, 1.0, 0.1, 0)


def test_moved_and_missing_values_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a", BASE)
    changed = [dict(BASE[0], value=602241 * 1.05), dict(BASE[1], value=87713 * 1.5),
               summary_row("dmat", "fig1_pages", 42, "pages", "Fig. 1", "sample")]
    b = write(tmp_path / "b", changed)
    assert main(["compare", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "block_sched/mean_scheduling_cycles" in out and "+50.0%" in out and "moved" in out
    assert "block_sched/mean_running_cycles" not in out  # within 10 %
    assert "max_mem/llama8b-bs32/dmat" in out and "only in A" in out
    assert "dmat/fig1_pages" in out and "only in B" in out
    assert "3 of 4 values moved" in out
    # A looser tolerance lets the 50 % change through but not the missing rows.
    assert main(["compare", str(a), str(b), "--rtol", "0.6"]) == 1
    assert "2 of 4 values moved" in capsys.readouterr().out


def test_different_bundle_kinds_are_noted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "a", BASE, bundle_kind="sample")
    b = write(tmp_path / "b", BASE, bundle_kind="paper")
    assert main(["compare", str(a), str(b)]) == 0
    said = capsys.readouterr().out
    assert "warning: the runs read different bundles: A sample (no digest), B paper (no digest)" in said


@pytest.mark.parametrize("content, problem", [
    ("{not json", "is not valid JSON"),
    ('{"rows": []}', "has no 'results' list"),
    ('{"results": [{"section": "a", "key": "b", "value": "x"}]}', "value 'x' is not a number"),
    ('{"results": [{"section": "a", "key": "b"}]}', "lacks section/key/value"),
    ('{"schema": "other/1", "results": []}', "unknown schema"),
])
def test_bad_input_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         content: str, problem: str) -> None:
    good = write(tmp_path / "good", BASE)
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert main(["compare", str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: ") and problem in err and err.count("\n") == 1


def test_missing_run_dir_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["compare", str(tmp_path / "empty"), str(tmp_path / "nope.json")]) == 2
    assert "summary.json: not found; is this a run output directory?" in capsys.readouterr().err


def test_read_summary_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"results": [
        {"section": "a", "key": "b", "value": 1}, {"section": "a", "key": "b", "value": 2}]}))
    with pytest.raises(InputError, match="duplicate result a/b") as err:
        read_summary(tmp_path)
    assert err.value.path == str(tmp_path / "summary.json")


def test_rel_change_of_zero_baseline() -> None:
    assert math.isinf(compare.Diff("s", "k", 0.0, 1.0, None, compare.MOVED).rel_change)
    assert compare.Diff("s", "k", 0.0, 0.0, None, compare.OK).rel_change == 0.0


# ------------------------------------------------------------------------- non-finite and hostile input


def raw_summary(path: Path, values: list[str]) -> Path:
    """A summary.json written by hand, so NaN/Infinity/huge literals reach compare verbatim."""
    rows = ", ".join(f'{{"section": "s", "key": "k{i}", "value": {v}}}' for i, v in enumerate(values))
    path.write_text(f'{{"schema": "{SCHEMA}", "results": [{rows}]}}')
    return path


@pytest.mark.parametrize("a, b, expect_moved", [
    (math.nan, 1.0, True), (1.0, math.nan, True), (math.inf, 1.0, True), (1.0, -math.inf, True),
    (math.inf, -math.inf, True), (math.nan, math.inf, True), (math.nan, None, True),
    (math.nan, math.nan, False), (math.inf, math.inf, False), (-math.inf, -math.inf, False),
])
def test_non_finite_values_move_unless_identical(a: float, b: float | None, expect_moved: bool) -> None:
    assert compare.moved(a, b, rtol=0.1, atol=0.0) is expect_moved
    assert compare.moved(b, a, rtol=0.1, atol=0.0) is expect_moved
    assert compare.moved(a, b, rtol=1e300, atol=1e300) is expect_moved  # no tolerance hides them


def test_nan_in_a_summary_is_reported_as_moved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = raw_summary(tmp_path / "a.json", ["1.0", "2.0", "Infinity", "NaN"])
    b = raw_summary(tmp_path / "b.json", ["NaN", "Infinity", "Infinity", "NaN"])
    assert main(["compare", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "s/k0" in out and "s/k1" in out and "s/k2" not in out and "s/k3" not in out
    assert "2 of 4 values moved" in out


@pytest.mark.parametrize("flag, value", [("--rtol", "nan"), ("--rtol", "inf"), ("--atol", "nan"),
                                         ("--atol", "-inf"), ("--rtol", "-0.1")])
def test_bad_tolerance_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        flag: str, value: str) -> None:
    a = write(tmp_path / "a", BASE)
    # --flag=value: argparse would read a bare "-inf" as an option name.
    assert main(["compare", str(a), str(a), f"{flag}={value}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and flag.lstrip("-") in err


@pytest.mark.parametrize("content, problem", [
    ('{"results": [{"section": "s", "key": "k", "value": 1' + "0" * 400 + "}]}", "too large"),
    ('{"results": [{"section": "s", "key": "k", "value": 1' + "0" * 5000 + "}]}", "too large"),
    ('{"results": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ('{"results": [{"section": "s", "key": "k", "value": ' + "[" * 100_000 + "]" * 100_000 + "}]}",
     "nested too deeply"),
])
def test_hostile_numbers_and_nesting_give_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    content: str, problem: str) -> None:
    good = write(tmp_path / "good", BASE)
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    for args in ([str(good), str(bad)], [str(bad), str(good)]):
        assert main(["compare", *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {bad}: ") and problem in err and err.count("\n") == 1
        assert len(err) < 400


def test_odd_field_types_do_not_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """unit and bundle_kind are free-form in a foreign file: a list there is shown, not a crash."""
    rows = [{"section": "s", "key": "k", "value": 1.0, "unit": ["ms"], "bundle_kind": {"x": 1}}]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"bundle_kind": ["paper"], "results": rows}))
    b.write_text(json.dumps({"results": [dict(rows[0], value=2.0)]}))
    assert main(["compare", str(a), str(b)]) == 1
    assert "['ms']" in capsys.readouterr().out
