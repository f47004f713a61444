"""The artifact's table first (issue 24): ``python kernel_overhead/<group>/overhead.py <root>`` (and
``kernel_overhead.py``) print it before pandas or matplotlib is imported, once; the heatmap (drawn by a figure
process), the HTML and the results follow."""

from __future__ import annotations

import pytest
from line_first import assert_line_first, printed, run_script


def _run(root, kernel, probe, impacts, regs):
    trace = root / kernel / probe / "trace"
    (trace / "kernel" / f"0_{'ab' * 20}").mkdir(parents=True)
    (trace / "event.log").write_text("[pid] 4242\n" + "".join(
        f"[exec] {1000 + i} param 7f0000000000\n[exec] grid 64 1 1 block 128 1 1 shared 0\n"
        f"[benchmark] prologue 0.010000 kernel {x:.6f} epilogue 0.020000 original 1.000000 impact {x:.6f} 0\n"
        for i, x in enumerate(impacts)))
    kdir = trace / "kernel" / f"0_{'ab' * 20}"
    (kdir / "kernel.info").write_text("kern0\n3\n1\n1 16\n")
    (kdir / "process.log").write_text("".join(
        f"ptxas -arch=sm_80 -m64 --verbose ./k/{b}.ptx -o ./k/{b}.bin\nptxas info    : Used {n} registers\n\n"
        for b, n in (("probed", regs[1]), ("pruned", regs[0]))))


def _tree(root):
    _run(root, "gemm", "block_sched", [1.2, 1.5, 1.1], (40, 46))  # median 1.2, 6 more registers
    _run(root, "gemm", "dmat", [2.0, 3.0, 5.0, 4.0], (40, 46))  # median 3.5
    _run(root, "conv", "block_sched", [1.05, 1.07], (40, 43))  # median 1.06; no dmat run
    return root


# By hand, each column right-aligned to its widest cell (pandas' to_string); GEMM before Conv2D (the paper's order).
EXPECTED = [
    "Table 2: kernel slowdown (median probed/pruned) and extra registers (probed - pruned)",
    "  group kernel block_sched slowdown block_sched +regs dmat slowdown dmat +regs",
    f"CUTLASS   GEMM {'1.20x':>20} {'+6':>17} {'3.50x':>13} {'+6':>10}",
    f"CUTLASS Conv2D {'1.06x':>20} {'+3':>17} {'-':>13} {'-':>10}",
]


@pytest.mark.parametrize("watched", [False, True])
def test_table_is_printed_before_pandas_or_matplotlib_is_imported(tmp_path, watched):
    root = _tree(tmp_path / "cutlass_op")
    out = tmp_path / "out"
    lines = run_script(["kernel_overhead/cutlass_op/overhead.py", str(root), "--out", str(out)], watched)
    # Watched: the figure process drew the figures, the command never imported matplotlib.
    assert_line_first(lines, EXPECTED, watched)
    assert printed(lines).count(EXPECTED[2]) == 1
    stem = out / "kernel_overhead_cutlass_op"
    assert f"wrote {stem}.png and {stem}.html" in printed(lines)
    assert stem.with_suffix(".png").stat().st_size > 10_000 and stem.with_suffix(".html").is_file()
