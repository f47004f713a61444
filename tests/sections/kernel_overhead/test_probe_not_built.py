"""A Table 2 cell whose probe the real engine could not build is said to be so, never a silent blank.

The fixture is what the REAL Neutrino (main branch, 4a82cd2: CLI, hook driver, probe engine, ptxas of
CUDA 13) wrote over the emulated driver for the suite's Triton gmm kernel (sm_80 PTX with cp.async)
under ``--benchmark -p gmem_bytes`` and ``-p block_sched``: main's gmem_bytes probe leaves a literal
``BYTES`` after every cp.async, ptxas refuses the probed build and the hook runs the kernel unprobed
(``tools/real_neutrino/emulated.py --branch main``; text files only, the source path as /opt/neutrino).
"""

from __future__ import annotations

from pathlib import Path

from neutrino_ae.formats.tracedir import engine_errors, no_result_reasons

REPO = Path(__file__).resolve().parents[3]
TREE = REPO / "tests" / "data" / "genuine" / "main" / "table2-not-built" / "kernel_overhead"
CELL = TREE / "triton_op" / "gmm" / "gmem_bytes" / "trace"


def test_the_engines_ptxas_failure_is_read_as_such():
    (reason,) = engine_errors(CELL)
    assert "ptxas exited 255 on the probed build (probed.ptx)" in reason and "BYTES" in reason
    assert no_result_reasons(CELL) == [reason]
    assert engine_errors(TREE / "triton_op" / "gmm" / "block_sched" / "trace") == []


def test_table2_marks_the_cell_not_built_in_every_output(tmp_path, capsys, monkeypatch):
    """``python kernel_overhead/kernel_overhead.py <tree> --out <tmp>``: the script's body (``run_script``) in
    this process; the command as a process is test_kernel_overhead_line_first.py's."""
    from neutrino_ae.report.section.driver import run_script

    monkeypatch.setenv("NEUTRINO_AE_NO_FORK", "1")  # drawn here, not in a fork that imports matplotlib anew
    assert run_script(str(REPO / "kernel_overhead" / "kernel_overhead.py"), [str(TREE), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "gmem_bytes/trace: probe not built: the probe engine failed" in out
    assert "no 'ptxas info" not in out  # not the register reader's guess
    md = (tmp_path / "kernel_overhead.md").read_text()
    assert "| 1.5 | 14 |  |  | gmem_bytes: probe not built, the probe engine failed" in md
    html = (tmp_path / "kernel_overhead.html").read_text()
    assert "<td class='na' colspan='2'" in html and ">not built</td>" in html
    long = (tmp_path / "kernel_overhead_long.csv").read_text().splitlines()
    (row,) = [r for r in long if ",gmem_bytes," in r]
    assert "ptxas exited 255" in row
