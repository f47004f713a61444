"""The benchmark harness must not rot: a smoke run covers every case; helpers are checked directly.

No timing is asserted (the machine is shared and noisy): only that every case produced numbers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from shared_build import build_once

from benchmarks import bench, harness
from benchmarks.cases import CASES, Target, expand_only


@pytest.fixture(scope="module")
def smoke_doc(tmp_path_factory: pytest.TempPathFactory) -> dict:
    def build(tmp: Path) -> None:  # once per test run, by whichever xdist worker asks first (tests/shared_build.py)
        out = tmp / "bench.json"
        code = bench.main(["--smoke", "--repeat", "1", "--cache", str(tmp / "cache"), "--json", str(out)])
        (tmp / "exit_code").write_text(str(code))

    tmp = build_once(tmp_path_factory, "bench-smoke", build)
    doc = json.loads((tmp / "bench.json").read_text())
    assert (tmp / "exit_code").read_text() == "0", doc["failures"]
    return doc


def test_smoke_run_has_every_case_with_numbers(smoke_doc: dict) -> None:
    assert smoke_doc["smoke"] is True
    assert smoke_doc["failures"] == []
    by_name = {c["case"]: c for c in smoke_doc["cases"]}
    assert set(by_name) == {c.name for c in CASES}
    for name, row in by_name.items():
        for key in ("seconds", "mb_per_s", "ratio", "peak_rss_bytes"):
            value = row[key]
            assert isinstance(value, (int, float)) and math.isfinite(value) and value > 0, (name, key, value)
        assert row["raw_read"]["seconds"] > 0
        assert row["input"]["bytes"] > 0
        assert len(row["seconds_runs"]) == 1
        assert row["targets"], name
        for t in row["targets"]:
            assert isinstance(t["pass"], bool)
            assert isinstance(t["measured"], (int, float))
        # The child's own peak, not the parent's: at least an interpreter with numpy, far below all RAM.
        assert 20e6 < row["peak_rss_bytes"] < smoke_doc["machine"]["mem_total_bytes"]


def test_smoke_json_describes_the_machine(smoke_doc: dict) -> None:
    m = smoke_doc["machine"]
    assert m["cpu_count"] >= 1 and m["mem_total_bytes"] > 0
    assert m["versions"]["numpy"] == np.__version__
    assert "python" in m["versions"]


def test_second_run_reuses_cached_inputs(smoke_doc: dict, tmp_path) -> None:
    # One more run against the smoke run's cache: the input made there is found, not made again. On
    # warp_sched, the trace case whose measuring children cost least (the cache is the same for every case).
    first = next(c for c in smoke_doc["cases"] if c["case"] == "warp_sched")["input"]
    cache = Path(first["path"]).parent
    args = ["--smoke", "--repeat", "1", "--only", "warp_sched", "--cache", str(cache)]
    assert bench.main([*args, "--json", str(tmp_path / "b.json")]) == 0
    second = json.loads((tmp_path / "b.json").read_text())["cases"][0]["input"]
    assert first["cached"] is False and second["cached"] is True
    assert first["path"] == second["path"]


def test_raw_read_sums_every_byte(tmp_path) -> None:
    data = np.random.default_rng(1).integers(0, 256, 8 * 1000 + 5, dtype=np.uint8)
    path = tmp_path / "x.bin"
    data.tofile(path)
    words = data[: 8000].view("<u8").sum(dtype=np.uint64)
    expected = (int(words) + int(data[8000:].sum())) & 0xFFFF_FFFF_FFFF_FFFF
    assert bench.raw_read([path]) == expected


def test_only_selects_cases_and_groups() -> None:
    assert [c.name for c in expand_only("static")] == ["static_small", "static_paper"]
    assert [c.name for c in expand_only("dmat,block_sched")] == ["block_sched", "dmat"]
    assert len(expand_only(None)) == len(CASES)
    with pytest.raises(KeyError):
        expand_only("nope")


def test_target_verdicts() -> None:
    hit = harness.target_row(Target("ratio", ">=", 0.25, "r"), {"ratio": 0.5})
    miss = harness.target_row(Target("ratio", ">=", 0.25, "r"), {"ratio": 0.05})
    low = harness.target_row(Target("seconds", "<=", 60.0, "s"), {"seconds": 120.0})
    assert hit["pass"] and hit["miss_factor"] is None
    assert not miss["pass"] and miss["miss_factor"] == pytest.approx(5.0)
    assert not low["pass"] and low["miss_factor"] == pytest.approx(2.0)


def test_bad_only_is_a_usage_error(capsys) -> None:
    assert bench.main(["--only", "nope"]) == 2
    assert "unknown case" in capsys.readouterr().err
