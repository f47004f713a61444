"""The artifact's table first (issue 24): ``python max_mem/max_mem.py <root>`` prints it before pandas or
matplotlib is imported, once; the figure (drawn by a figure process) and the results follow."""

from __future__ import annotations

from pathlib import Path

import pytest
from line_first import assert_line_first, printed, run_script

from max_mem.analysis import WORKLOAD_MEMORY_RULE


def _tree(root: Path) -> Path:
    for probe, stdout, mems in (("block_sched", "max memory: 4000\n", (100, 700)),
                                ("dmat", "max memory: 3000\n", (9000,))):
        sub = root / "resnet-bs32" / probe / "s1"
        (sub / "Apr24_1").mkdir(parents=True)
        (sub / "stdout.log").write_text(stdout)
        (sub / "Apr24_1" / "event.log").write_text("".join(
            f"[exec] {1000 + i} param 7f0000000000\n[exec] grid 8 1 1 block 64 1 1 shared 0\n"
            f"[exec] probe-mem {m} (bytes)\n" for i, m in enumerate(mems)))
    return root


# By hand: 700 B of 4000 B (3.91 KiB) = 0.175, 9000 B (8.79 KiB) of 3000 B (2.93 KiB) = 3; each column right-aligned.
EXPECTED = [
    "Fig. 11: maximum probe memory vs. workload peak",
    "      model       probe probe_mem workload probe_over_workload",
    "resnet-bs32 block_sched     700 B 3.91 KiB               0.175",
    "resnet-bs32        dmat  8.79 KiB 2.93 KiB                   3",
    f"{WORKLOAD_MEMORY_RULE}.",
]


@pytest.mark.parametrize("watched", [False, True])
def test_table_is_printed_before_pandas_or_matplotlib_is_imported(tmp_path, watched):
    root = _tree(tmp_path / "max_mem")
    out = tmp_path / "out"
    lines = run_script(["max_mem/max_mem.py", str(root), "--out", str(out)], watched)
    # Watched: the figure process drew the figures, the command never imported matplotlib.
    assert_line_first(lines, EXPECTED, watched)
    assert printed(lines).count(EXPECTED[2]) == 1
    assert f"wrote {out / 'max_mem.png'}" in printed(lines)[len(EXPECTED):]
    assert (out / "max_mem.png").stat().st_size > 10_000 and (out / "max_mem.svg").is_file()
