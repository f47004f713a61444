"""The artifact's table first (issue 24, on the section driver since issue 35): ``python
exposed_latency/exposed_latency.py <csv>`` prints it once the CSVs are read (pandas imported), before
matplotlib is imported in the command; the figures (drawn by a figure process) and the results follow. The
reader takes the spellings of a CSV that pandas reads."""

from __future__ import annotations

import numpy as np
import pytest
from line_first import assert_line_first, printed, run_script

HEADER = "probe,original,ncu,neutrino,prologue,kernel,epilogue\n"
GEMM = HEADER + ("block_sched,2.0,50.0,2.5,0.1,2.0,0.4\ndmat,4.0,8.0,10.0,0.5,3.5,6.0\n"
                 "gmem_bytes,1.0,3.0,2.0,0.0,1.0,0.5\n")

# By hand: ncu / original, neutrino / original, then epilogue, kernel, prologue over neutrino; each column
# right-aligned to its widest cell (pandas' to_string).
EXPECTED = [
    "Fig. 12: exposed latency (time / original)",
    "workload       probe    ncu neutrino epilogue share kernel share prologue share",
    "    gemm block_sched 25.00x    1.25x          16.0%        80.0%           4.0%",
    "    gemm        dmat  2.00x    2.50x          60.0%        35.0%           5.0%",
    "    gemm  gmem_bytes  3.00x    2.00x          25.0%        50.0%           0.0%",
]


@pytest.mark.parametrize("watched", [False, True])
def test_table_is_printed_before_matplotlib_is_imported(tmp_path, watched):
    csv = tmp_path / "gemm.csv"
    csv.write_text(GEMM)
    out = tmp_path / "out"
    lines = run_script(["exposed_latency/exposed_latency.py", str(csv), "--out", str(out)], watched)
    # Watched: the figure process drew the figures, the command never imported matplotlib.
    assert_line_first(lines, EXPECTED, watched, pandas_first=True)
    assert printed(lines).count(EXPECTED[2]) == 1
    assert f"wrote {out / 'exposed_latency.png'} and one figure per workload" in printed(lines)
    for stem in ("exposed_latency", "exposed_latency_gemm"):
        assert (out / f"{stem}.png").stat().st_size > 10_000 and (out / f"{stem}.svg").is_file()


@pytest.mark.parametrize("text, probes, neutrino", [
    (GEMM, ["block_sched", "dmat", "gmem_bytes"], [2.5, 10.0, 2.0]),
    (GEMM.replace("probe,original", "probe, original").replace("2.0,50.0", " 2.0, 50.0"),  # spaces after commas
     ["block_sched", "dmat", "gmem_bytes"], [2.5, 10.0, 2.0]),
    (HEADER + "a,1,,2,0.5,1,0.5\nb,3e0,+6,.4E1,1.,2,1\n", ["a", "b"], [2.0, 4.0]),  # ncu not measured; spellings
    ("kernel,epilogue,probe,original,ncu,neutrino,prologue,extra\n2,0.4,p,2,50,2.5,0.1,x\n", ["p"], [2.5]),
    (GEMM.replace("dmat", '"dmat"'), ["block_sched", "dmat", "gmem_bytes"], [2.5, 10.0, 2.0]),  # quoted
    (GEMM.rstrip("\n"), ["block_sched", "dmat", "gmem_bytes"], [2.5, 10.0, 2.0]),  # no newline at the end
])
def test_the_reader_reads_each_spelling(tmp_path, text, probes, neutrino):
    from exposed_latency.inputs import read_workload_csv

    csv = tmp_path / "w.csv"
    csv.write_text(text)
    df = read_workload_csv(csv)
    assert df["probe"].tolist() == probes
    np.testing.assert_array_equal(df["neutrino"].to_numpy(dtype=float), neutrino)
