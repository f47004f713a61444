"""The section driver (issue 35): a section that supplies only load, compute and figures gets its command
line, its printed lines, results files, summary rows (from ``numbers``, ground truth by key), the runner's
cache and its figures from ``neutrino_ae/report/section/driver.py``. The section here is written as a folder, the way
a contributor would, and found by the registry through ``$NEUTRINO_AE_SECTIONS``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from neutrino_ae.bundle import manifest
from neutrino_ae.errors import InputError
from neutrino_ae.report.command.script import run_main
from neutrino_ae.report.section import driver, registry
from neutrino_ae.run import runner

REPO = Path(__file__).resolve().parents[2]

INIT = '''
"""Fig. 98: a section on the driver."""
from neutrino_ae.report.section import Section

SECTION = Section(name="drv", title="Driven result", paper_ref="Fig. 98", order=80, runtime="instant",
                  inputs=("drv/counts.txt",), load="inputs:load", compute="analysis:compute",
                  figures="analysis:figures", command="drv folder with counts.txt")
'''

INPUTS = '''
from pathlib import Path

from neutrino_ae.errors import InputError

LOADS = []


def load(source):
    LOADS.append(source)
    path = Path(source.paths[0]) / "counts.txt"
    if not path.is_file():
        raise InputError(path, "missing")
    counts = [int(x) for x in path.read_text().split()]
    return {"counts": counts, "path": path, "truth": source.bundle.ground_truth("drv") or {},
            "scale": source.options.get("scale", 1)}


def load_writing(source):
    # dmat's shape: a reader that writes a by-product into the results folder as it reads
    frames = load(source)
    source.out.mkdir(parents=True, exist_ok=True)
    frames["side"] = source.out / "side.txt"
    frames["side"].write_text("read")
    return frames
'''

ANALYSIS = '''
import pandas as pd

from neutrino_ae.report.section.driver import Figure, Number, Result, Table, value


def compute(frames):
    counts = [c * frames["scale"] for c in frames["counts"]]
    table = pd.DataFrame({"i": range(len(counts)), "count": counts})
    numbers = {"total.count": sum(counts), "mean.cycles": sum(counts) / len(counts), "first.count": counts[0]}
    truth = {"total.count": frames["truth"].get("total")}
    return Result(files={"page": ("drv.html", "<p>drv</p>"), "drv": Table(table, "\\nnote\\n")}, numbers=numbers,
                  truth=truth, units={"count": "n", "cycles": "cycles"},
                  data={"paper_ref": "Fig. 98", "summary": None, "after": 1}, lines=[f"drv total {sum(counts)}"],
                  done="wrote {figure}", input=frames["path"], plots={"counts": counts})


def figures(result):
    return [Figure("drv", "figures:bars", {"counts": __import__("numpy").array(result.plots["counts"])},
                   {"title": "drv"})]


def compute_parts(frames):
    """A figure's result of its own (warp_sched's Fig. 13a/b/cd beside warp_sched.json), then the section's, whose
    data holds no rows; a number with its own paper reference and one with its own bundle kind."""
    counts = [c * frames["scale"] for c in frames["counts"]]
    part = Result(files={"drv_part": lambda: pd.DataFrame({"x": [1, 2]})},
                  numbers={"part.count": Number(counts[0], ref="Fig. 98b")},
                  units={"count": "n"}, data={"figure": "part", "summary": None},
                  lines=[f"part {counts[0]}"], plots={"counts": counts, "stem": "drv_part"},
                  done="part figure {drv_part.png}")
    own = Result(numbers={**part.numbers, "total.count": sum(counts), "other.count": Number(1, kind="paper")},
                 units={"count": "n"}, data={"parts": [part.data]},
                 done="\\n".join([*part.lines, part.done,
                                   f"end {{json}} {{unknown}} {value(part.numbers['part.count'])}"]))
    return {"drv_part": part, "drv": own}


def compute_files(frames):
    result = compute(frames)
    result.files = {"side": frames["side"], **result.files}
    return result


def figures_parts(result):
    stem = result.plots.get("stem")
    return ([Figure(stem, "figures:bars", {"counts": __import__("numpy").array(result.plots["counts"])},
                    {"title": stem}, key="")] if stem else [])
'''

FIGURES = '''
from neutrino_ae.report.figures.style import new_figure


def bars(arrays, params):
    fig = new_figure(2.0, 1.5)
    ax = fig.add_subplot(1, 1, 1)
    ax.bar(range(len(arrays["counts"])), arrays["counts"])
    ax.set_title(params["title"])
    return fig
'''

SCRIPT = '''
from neutrino_ae.report.section.driver import run_script

if __name__ == "__main__":
    raise SystemExit(run_script(__file__))
'''


@pytest.fixture
def drv(tmp_path, monkeypatch):
    """The section folder and a sample bundle holding its input (counts 3, 4, 5; ground truth total 12)."""
    folder = tmp_path / "sections" / "drv"
    folder.mkdir(parents=True)
    for name, text in (("__init__", INIT), ("inputs", INPUTS), ("analysis", ANALYSIS), ("figures", FIGURES),
                       ("drv", SCRIPT)):
        (folder / f"{name}.py").write_text(textwrap.dedent(text))
    monkeypatch.setenv(registry.EXTRA_ROOTS_ENV, str(tmp_path / "sections"))
    root = tmp_path / "bundle"
    (root / "drv").mkdir(parents=True)
    (root / "drv" / "counts.txt").write_text("3 4 5\n")
    manifest.write_manifest(root, manifest.SAMPLE, ground_truth={"drv": {"total": 12}})
    yield root
    for name in [m for m in sys.modules if m == "drv" or m.startswith("drv.")]:
        del sys.modules[name]


def test_summary_rows_come_from_numbers_with_units_by_suffix_and_truth_by_key(drv, tmp_path):
    res = runner.run_section("drv", drv, tmp_path / "out")
    rows = {r["key"]: r for r in res.summary}
    assert list(rows) == ["total.count", "mean.cycles", "first.count"]  # numbers' order
    assert rows["total.count"]["value"] == 12 and rows["total.count"]["ground_truth"] == 12
    assert rows["total.count"]["unit"] == "n" and rows["mean.cycles"]["unit"] == "cycles"
    assert rows["mean.cycles"]["value"] == 4.0 and rows["mean.cycles"]["ground_truth"] is None
    assert {r["section"] for r in res.summary} == {"drv"} and {r["paper_ref"] for r in res.summary} == {"Fig. 98"}
    assert {r["bundle_kind"] for r in res.summary} == {"sample"}


def test_results_files_json_order_notes_documents_and_text(drv, tmp_path):
    out = tmp_path / "out"
    res = runner.run_section("drv", drv, out)
    doc = json.loads((out / "drv" / "drv.json").read_text())
    # "summary" stays where the section put its place, before what follows it
    assert list(doc)[:3] == ["paper_ref", "summary", "after"] and doc["summary"] == res.summary
    assert doc["provenance"]["input"].endswith("drv/counts.txt") and doc["bundle_kind"] == "sample"
    assert (out / "drv" / "drv.csv").read_text() == "i,count\n0,3\n1,4\n2,5\n"
    assert (out / "drv" / "drv.md").read_text().endswith("\nnote\n")
    assert (out / "drv" / "drv.html").read_text() == "<p>drv</p>"
    assert list(res.files)[:3] == ["figure", "figure.svg", "page"]
    assert res.files["figure"] == out / "drv" / "drv.png" and res.files["figure"].stat().st_size > 1000
    assert res.text == f"drv total 12\nwrote {out / 'drv' / 'drv.png'}"


def test_the_runner_caches_a_driven_section(drv, tmp_path):
    out = tmp_path / "out"
    first = runner.run_section("drv", drv, out)
    loads = sys.modules["drv.inputs"].LOADS
    assert first.data["cached"] is False and len(loads) == 1
    assert loads[0].paths == (drv / "drv",) and loads[0].bundle.kind == "sample"  # the run's bundle, its folder
    again = runner.run_section("drv", drv, out)
    assert again.data["cached"] is True and len(loads) == 1 and again.summary == first.summary


def test_command_line_prints_the_lines_first_then_the_rest(drv, tmp_path, capsys):
    section = registry.get("drv")
    out = tmp_path / "cli"
    assert run_main(driver.command(section), [str(drv / "drv"), "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"drv total 12\nwrote {out / 'drv.png'}\n"
    assert run_main(driver.command(section), [str(drv / "drv"), "--out", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["files"]["figure"] == str(out / "drv.png") and doc["summary"][0]["ground_truth"] == 12
    # Options a script fixes reach load (kernel_overhead's per-group scripts use them).
    assert run_main(driver.partial(driver.main, section, options={"scale": 2}), [str(drv / "drv"), "--out",
                                                                                 str(out)]) == 0
    assert capsys.readouterr().out.startswith("drv total 24\n")


def test_command_line_errors_are_one_line(drv, tmp_path, capsys):
    main = driver.command(registry.get("drv"))
    assert run_main(main, [str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path / 'nowhere' / 'counts.txt'}: missing\n"
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(InputError, match="symbolic link loop"):
        driver.source_of([loop])


def test_the_folders_script_runs_the_driver(drv, tmp_path):
    script = registry.get("drv").folder / "drv.py"
    out = tmp_path / "script"
    proc = subprocess.run([sys.executable, str(script), str(drv / "drv"), "--out", str(out)], capture_output=True,
                          text=True, cwd=tmp_path, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[0] == "drv total 12" and (out / "drv.png").is_file()


def test_several_results_numbers_of_their_own_flags_and_closing_lines(drv, tmp_path, capsys):
    # warp_sched's shape: each figure written as a result with its own document and paper ref, then the section's.
    import dataclasses

    section = dataclasses.replace(registry.get("drv"), compute="analysis:compute_parts",
                                  figures="analysis:figures_parts")
    out = tmp_path / "parts"
    flags = {"--scale": {"type": int, "default": 1}}
    assert run_main(driver.partial(driver.main, section, flags=flags), [str(drv / "drv"), "--scale", "3", "--out",
                                                                         str(out)]) == 0
    png = out / "drv_part.png"
    # no lines first: all at the end; "{key}" of a written file is its path, any other brace text is kept
    assert capsys.readouterr().out == f"part 9\npart figure {png}\nend {out / 'drv.json'} {{unknown}} 9\n"
    part_doc = json.loads((out / "drv_part.json").read_text())
    top_doc = json.loads((out / "drv.json").read_text())
    assert [(r["key"], r["value"], r["paper_ref"], r["unit"]) for r in part_doc["summary"]] == [
        ("part.count", 9, "Fig. 98b", "n")]
    assert top_doc["parts"][0]["summary"] == part_doc["summary"]  # the part's data, rows filled in place
    assert "summary" not in top_doc  # no "summary" place in its data: no rows in it
    assert (out / "drv_part.csv").read_text() == "x\n1\n2\n"
    res = driver.analyze_paths(section, [drv / "drv"], tmp_path / "again", {"scale": 2})
    assert [(r["key"], r["value"], r["paper_ref"], r["bundle_kind"]) for r in res.summary] == [
        ("part.count", 6, "Fig. 98b", "sample"), ("total.count", 24, "Fig. 98", "sample"),
        ("other.count", 1, "Fig. 98", "paper")]
    # A part's figure (key "": its own file names) and files come before the section's own results.
    assert list(res.files)[:4] == ["drv_part.png", "drv_part.svg", "drv_part.csv", "drv_part.md"]
    assert res.files["json"] == tmp_path / "again" / "drv.json" and set(res.tables) == {"drv_part"}


def test_a_required_input_a_positive_flag_and_the_files_load_wrote(drv, tmp_path, capsys):
    # dmat's shape: no default input, a flag refused below 1 with the script's message, a file written by load.
    import dataclasses

    section = dataclasses.replace(registry.get("drv"), load="inputs:load_writing", compute="analysis:compute_files",
                                  command_default=False)
    flags = {"--scale": {"type": int, "action": driver.positive("--scale must be positive")}}
    main = driver.partial(driver.main, section, flags=flags)
    out = tmp_path / "w"
    with pytest.raises(SystemExit, match="2"):  # argparse's usage error
        main(["--out", str(out)])
    assert capsys.readouterr().err.strip().endswith("error: the following arguments are required: root")
    with pytest.raises(SystemExit, match="2"):
        main([str(drv / "drv"), "--scale", "0", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("usage: ") and err[-1].endswith("error: --scale must be positive")
    assert not out.exists()
    assert run_main(main, [str(drv / "drv"), "--scale", "2", "--out", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc["files"])[:3] == ["figure", "figure.svg", "side"]  # after the figures, before the results
    assert doc["files"]["side"] == str(out / "side.txt") and (out / "side.txt").read_text() == "read"
    assert doc["summary"][0]["value"] == 24


def test_each_input_is_given_its_own_bundle_at_the_edge(drv, tmp_path):
    # block_sched's command line reads traces of several bundles: the driver finds each one's bundle, once,
    # so no section finds one from a path (issue 49: no path-or-Bundle fallback left in a section).
    other = tmp_path / "other"
    (other / "drv").mkdir(parents=True)
    (other / "drv" / "counts.txt").write_text("1\n")
    manifest.write_manifest(other, manifest.DYNAMIC)
    loose = tmp_path / "loose.txt"
    loose.write_text("2\n")
    source = driver.source_of([drv / "drv", other / "drv", loose])
    pairs = source.inputs()
    assert [p for p, _ in pairs] == [drv / "drv", other / "drv", loose]
    assert [(b.kind, b.root) for _, b in pairs] == [("sample", drv.resolve()), ("dynamic", other.resolve()),
                                                   ("unknown", None)]
    assert source.bundle is pairs[0][1]
    notebook = driver.Source(pairs[1][1], (other / "drv",), notebook=True)
    assert notebook.inputs() == [(other / "drv", pairs[1][1])]  # the run's bundle for its own folder
