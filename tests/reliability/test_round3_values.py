"""Issue 36, hostile values read as data: every input value is a value or a refusal, and a claim never
judges fewer rows than the input has without saying which and why. Fig. 12 (exposed_latency) through the
public commands: an empty ``ncu`` cell means "not measured" (the figure says n/a), so the claims that
need it say that comparison was not made; a NUL byte in a probe name is refused in one line. The script runs
as a process for the NUL byte; its other cases run it in this process (the script file as ``__main__``,
tests/script_here.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bundle_edit import reseal
from faultkit import REPO, cli_env, run_cli
from figures_preloaded import preload_figures
from script_here import script_here

from neutrino_ae.report.claims import Claim, evaluate

SCRIPT = REPO / "exposed_latency" / "exposed_latency.py"


@pytest.fixture(scope="module", autouse=True)
def _figures_preloaded():
    """The scripts run in this process fork their figure process from it: it finds matplotlib loaded."""
    preload_figures()


def _bundle(tiny_bundle: Path, tmp_path: Path, edit) -> Path:
    root = tmp_path / "traces"
    shutil.copytree(tiny_bundle, root)
    csv = root / "exposed_latency" / "attn.csv"
    lines = csv.read_text().splitlines(keepends=True)
    lines[1] = edit(lines[1])
    csv.write_text("".join(lines))
    return reseal(root)


def _empty_ncu(line: str) -> str:
    cells = line.split(",")
    cells[2] = ""
    return ",".join(cells)


def _run(root: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "out"
    proc = run_cli(["run", "static", "-q", "--trace-root", str(root), "--output-dir", str(out),
                    "--sections", "exposed_latency"], tmp_path)
    verdict = json.loads((out / "verdict.json").read_text()) if (out / "verdict.json").is_file() else {}
    return proc, {o["claim"]: o for o in verdict.get("outcomes", verdict.get("claims", []))}


def test_an_empty_ncu_cell_is_not_counted_as_a_comparison_that_holds(tiny_bundle, tmp_path):
    root = _bundle(tiny_bundle, tmp_path, _empty_ncu)
    proc, claims = _run(root, tmp_path)
    assert "Traceback" not in proc.stderr and "TypeError" not in proc.stderr, proc.stderr[-3000:]
    below = claims["below-ncu"]
    assert below["obtained"].startswith("11/11 comparisons hold; 1 not made"), below
    assert "attn.block_sched" in below["obtained"] and "not measured" in below["obtained"], below
    truth = claims["ncu-ratio-truth"]
    assert truth["status"] == "DIFFERS" and "attn.block_sched.ncu_ratio: no value" in truth["reason"], truth
    text = (tmp_path / "out" / "exposed_latency" / "exposed_latency.json").read_text()
    assert "attn" in text


def test_the_per_figure_script_says_n_a_for_an_empty_ncu_cell(tiny_bundle, tmp_path):
    root = _bundle(tiny_bundle, tmp_path, _empty_ncu)
    proc = script_here(SCRIPT, [root / "exposed_latency", "--out", tmp_path / "o"])
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "n/a" in proc.stdout
    assert "1 ratio(s) without a value (not measured): attn.block_sched.ncu_ratio" in proc.stdout, proc.stdout


@pytest.mark.parametrize("bad", ["\x00", "\x1b[31m", "\x7f"])
def test_a_control_character_in_a_probe_name_is_refused_in_one_line(tiny_bundle, tmp_path, bad):
    root = _bundle(tiny_bundle, tmp_path, lambda line: bad + line)
    argv = [str(root / "exposed_latency"), "--out", str(tmp_path / "o")]
    if bad == "\x00":  # the script as a process once; the other characters in this process
        proc = subprocess.run([sys.executable, str(SCRIPT), *argv], cwd=tmp_path, env=cli_env(), text=True,
                              errors="backslashreplace", capture_output=True, timeout=300, check=False)
    else:
        proc = script_here(SCRIPT, argv)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-3000:]
    assert lines[0].startswith(f"error: {root / 'exposed_latency' / 'attn.csv'}: column 'probe' row 2: "), lines[0]
    assert "control character" in lines[0]
    assert not (tmp_path / "o").exists()


def test_a_run_refuses_a_nul_byte_before_a_probe_name_instead_of_judging_fewer_rows(tiny_bundle, tmp_path):
    root = _bundle(tiny_bundle, tmp_path, lambda line: "\x00" + line)
    proc, claims = _run(root, tmp_path)
    assert proc.returncode != 0
    assert "column 'probe' row 2" in proc.stderr and "control character" in proc.stderr, proc.stderr[-3000:]
    assert claims.get("block-sched-cheapest", {}).get("status") != "PASS"


def test_a_shape_claim_names_the_rows_it_did_not_judge():
    """A row a pattern claim leaves out (its workload has no left row to compare it with) is named."""
    claim = Claim("cheapest", "block_sched is cheapest", "Fig. 12", left="{w}.block_sched.r", op="<",
                  right="{w}.{p}.r")
    values = {"a.block_sched.r": 1.0, "a.x.r": 2.0, "a.y.r": 3.0, "b.\x00block_sched.r": 1.0, "b.x.r": 2.0}
    out = evaluate("s", claim, values)
    assert out.obtained.startswith("2/2 comparisons hold; 2 row(s) not judged"), out
    assert "b.x.r" in out.obtained and "no a.block_sched.r-like row" not in out.obtained
    assert "b.x.r" in out.reason and "nothing to compare them with" in out.reason, out
