"""Fig. 11 (maximum probe memory) on hand-made max_mem trees with known maxima and missing files."""

from __future__ import annotations

import json
from functools import partial

import pytest
from undrawn_analysis import leave_figures_undrawn

from max_mem.analysis import human_bytes
from max_mem.inputs import measure_entry, read_max_memory
from neutrino_ae.bundle import manifest as bundle
from neutrino_ae.report.command.script import run_main
from neutrino_ae.report.section import driver, registry

SECTION = registry.get("max_mem")
cli_main = partial(driver.main, SECTION)


def analyze(root, out):
    """The command line's analysis of one max_mem folder, figures drawn in this process."""
    return driver.analyze_paths(SECTION, [root], out)


def _event_log(probe_mems) -> str:
    text = "[pid] 77\n"
    for i, mem in enumerate(probe_mems):
        text += (f"[exec] {1000 + i} param 7f0000000000\n"
                 "[exec] grid 8 1 1 block 64 1 1 shared 0\n"
                 "[exec] grid 8 warp 2 probe 16 total 256\n")
        if mem is not None:
            text += f"[exec] probe-mem {mem} (bytes)\n"
    return text


def _sub(root, model, probe, sub, stdout=None, traces=()):
    d = root / model / probe / sub
    d.mkdir(parents=True)
    if stdout is not None:
        (d / "stdout.log").write_text(stdout)
    for name, mems in traces:
        (d / name).mkdir()
        if mems is not None:
            (d / name / "event.log").write_text(_event_log(mems))
    return d


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "max_mem"
    # s1 prints two "max memory" lines: the first is used (as the artifact's loop), the output says so
    _sub(root, "resnet-bs32", "block_sched", "s1", "warmup\nmax memory: 1000\nstep\nmax memory: 5000\n",
         [("Apr24_1", [100, 300]), ("Apr24_2", [250, None])])
    _sub(root, "resnet-bs32", "block_sched", "s2", "max memory: 4000\n", [("Apr24_3", [700])])
    _sub(root, "resnet-bs32", "dmat", "s1", None, [("Apr24_4", [9000, 8000])])       # stdout.log missing
    _sub(root, "resnet-bs32", "dmat", "s2", "max memory: 3000\n", [("Apr24_5", None)])  # event.log missing
    _sub(root, "sd-bs1", "block_sched", "s1", "max memory: lots\n", [("Apr24_6", [None])])
    (root / "mamba-bs32").mkdir()
    return root


def test_maxima_over_all_launches_traces_and_subs(tree, tmp_path, monkeypatch):
    leave_figures_undrawn(monkeypatch)  # entries, summary, text and documents are read, not the figure
    res = analyze(tree, tmp_path / "out")
    e = {(x["model"], x["probe"]): x for x in res.data["entries"]}
    bs = e[("resnet-bs32", "block_sched")]
    assert bs["probe_mem_max"] == 700 and bs["probe_mem_source"].endswith("s2/Apr24_3/event.log")
    assert bs["workload_max"] == 4000 and bs["workload_source"].endswith("s2/stdout.log")
    assert bs["ratio"] == pytest.approx(700 / 4000)
    assert bs["launches"] == 5 and bs["trace_dirs"] == 3 and bs["problems"] == []

    dm = e[("resnet-bs32", "dmat")]
    assert dm["probe_mem_max"] == 9000 and dm["workload_max"] == 3000
    assert dm["ratio"] == pytest.approx(3.0)

    sd = e[("sd-bs1", "block_sched")]
    assert sd["probe_mem_max"] is None and sd["workload_max"] is None and sd["ratio"] is None

    problems = res.data["problems_by_model"]
    assert sorted(problems) == ["mamba-bs32", "resnet-bs32", "sd-bs1"]
    assert problems["resnet-bs32"] == [
        f"{tree}/resnet-bs32/dmat/s1/stdout.log: missing, workload memory of this sub-module unknown",
        f"{tree}/resnet-bs32/dmat/s2/Apr24_5/event.log: missing",
    ]
    assert problems["sd-bs1"] == [
        f"{tree}/sd-bs1/block_sched/s1/stdout.log: line 1: 'max memory: lots' is not a byte count",
        f"{tree}/sd-bs1/block_sched: no '[exec] probe-mem' line in any event.log",
    ]
    assert problems["mamba-bs32"] == [f"{tree}/mamba-bs32: no <probe>/ folders, model not measured"]
    assert "resnet-bs32: 2" in res.text and "stdout.log: missing" in res.text
    assert res.data["workload_peaks"] == {"resnet-bs32": 4000, "sd-bs1": None}
    assert res.data["workload_memory_notes"] == [
        f"{tree}/resnet-bs32/block_sched/s1/stdout.log: 2 'max memory:' lines, the first (1000) is used; later: 5000"]
    assert "several: the first" in res.data["workload_memory_rule"]
    assert "2 'max memory:' lines, the first (1000) is used" in res.text


def test_table_and_files(tree, tmp_path):
    out = tmp_path / "out"
    res = analyze(tree, out)
    df = res.tables["max_mem"]
    assert list(df["model"]) == ["resnet-bs32", "resnet-bs32", "sd-bs1"]   # paper model order
    assert list(df["probe"]) == ["block_sched", "dmat", "block_sched"]
    row = df.iloc[1]
    assert row["probe_mem_bytes"] == 9000 and row["probe_mem"] == "8.79 KiB"
    assert row["workload"] == "2.93 KiB" and row["probe_over_workload"] == pytest.approx(3.0)
    for name in ("max_mem.png", "max_mem.svg", "max_mem.json", "max_mem.csv", "max_mem.md"):
        assert (out / name).stat().st_size > 0, name
    csv = (out / "max_mem.csv").read_text().splitlines()
    assert csv[0].startswith("model,probe,probe_mem_bytes,probe_mem,workload_bytes,workload,probe_over_workload")
    assert csv[3].startswith("sd-bs1,block_sched,,-,,-,")
    summary = {s["key"]: s["value"] for s in res.summary}
    assert summary["resnet-bs32.block_sched.probe_mem_max"] == 700
    assert summary["resnet-bs32.block_sched.workload_max"] == 4000
    assert "the first 'max memory:' line of each stdout.log" in (out / "max_mem.md").read_text()


@pytest.mark.parametrize("n, text", [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (3 * 1024 ** 3, "3 GiB"),
                                     (None, "-")])
def test_human_bytes(n, text):
    assert human_bytes(n) == text


def test_sample_bundle_truth_and_mark(tree, tmp_path, monkeypatch):
    leave_figures_undrawn(monkeypatch)  # entries, summary, text and documents are read, not the figure
    bundle.write_manifest(tree.parent, "sample", ground_truth={"max_mem": {"resnet-bs32": {
        "block_sched": {"max_probe_mem": 700, "max_memory": 4000, "subs": {}}}}})  # the generator's keys
    res = analyze(tree, tmp_path / "out")
    truth = {s["key"]: s["ground_truth"] for s in res.summary}
    assert truth["resnet-bs32.block_sched.probe_mem_max"] == 700
    assert truth["resnet-bs32.block_sched.workload_max"] == 4000
    assert truth["resnet-bs32.dmat.probe_mem_max"] is None
    assert json.loads((tmp_path / "out" / "max_mem.json").read_text())["synthetic"] is True
    assert "1/1 probe-memory peaks equal the injected value" in res.text
    assert "1/1 workload peaks equal the injected value" in res.text


def test_cli(tree, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NEUTRINO_AE_NO_FORK", "1")  # drawn here, not in a fork that imports matplotlib anew
    assert run_main(cli_main, [str(tree), "--out", str(tmp_path / "o"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["files"]["figure"].endswith("max_mem.png") and len(doc["entries"]) == 3
    assert run_main(cli_main, [str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'missing'}: no such folder")


def test_a_cut_last_line_is_not_read_as_a_value(tmp_path):
    log = tmp_path / "stdout.log"
    log.write_text("step 1\nmax memory: 1610612736\nmax memory: 23")  # killed while printing a later value
    value, problems = read_max_memory(log)
    assert value == 1610612736
    assert problems == [f"{log}: last line 'max memory: 23' has no newline (output cut short); excluded"]


def test_an_event_log_cut_mid_launch_leaves_that_launch_out(tmp_path):
    from neutrino_ae.formats.eventlog.write import EventLogWriter

    sub = tmp_path / "m" / "dmat" / "layer"
    tdir = sub / "Nov23_000000_1"
    tdir.mkdir(parents=True)
    text = (EventLogWriter().pid(1).launch(1, [1], (4, 1, 1), (64, 1, 1), probe_bytes=16, probe_mem=1000)
            .launch(2, [1], (4, 1, 1), (64, 1, 1), probe_bytes=16, probe_mem=999999).text())
    (tdir / "event.log").write_text(text[: text.rindex("probe-mem") + 12])  # killed while writing launch 1
    (sub / "stdout.log").write_text("max memory: 5000\n")
    entry = measure_entry("m", "dmat", tmp_path / "m" / "dmat")
    assert entry.probe_mem_max == 1000
    assert any("ends mid-line" in p and "launch 1 left out" in p for p in entry.problems)


@pytest.mark.parametrize("text, value, problem", [
    # several lines: the first readable one (the artifact's loop breaks after the first)
    ("max memory: 1000\nmax memory: 5000\n", 1000, None),
    ("max memory: 12 MiB\nmax memory: 5000\n", 5000, "line 1: 'max memory: 12 MiB' is not a byte count"),
    # a line counts only when it starts with the tag, as in the artifact (startswith on the raw line)
    ("  max memory: 99\nmax memory: 7\n", 7, None),
    ("  max memory: 99\n", None, "no 'max memory: <bytes>' line"),
    # lines end at a newline only (the artifact: text-mode read, split on "\n"), not at \x0c or \u2028
    ("step\x0cmax memory: 99\nmax memory: 7\n", 7, None),
    ("step\u2028max memory: 99\nmax memory: 7\r\n", 7, None),
    # the value is one number (bytes, optionally followed by "bytes"); anything else is not a byte count
    ("max memory: 1024 MiB\n", None, "line 1: 'max memory: 1024 MiB' is not a byte count"),
    ("max memory: 5 7\n", None, "line 1: 'max memory: 5 7' is not a byte count"),
    ("max memory:  42\t\n", 42, None),
    ("max memory: 42 bytes\n", 42, None),
])
def test_which_max_memory_line_is_read(tmp_path, text, value, problem):
    log = tmp_path / "stdout.log"
    log.write_bytes(text.encode())
    got, problems = read_max_memory(log)
    assert got == value
    assert problems == ([] if problem is None else [f"{log}: {problem}"])
