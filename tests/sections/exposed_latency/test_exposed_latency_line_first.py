"""The artifact's table first (issue 24): ``python exposed_latency/exposed_latency.py <csv>`` prints it before
pandas or matplotlib is imported, once; the figures (drawn by a figure process) and the results follow. A CSV
out of the plain form is still read by the pandas reader, with the same numbers and the same complaints."""

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
def test_table_is_printed_before_pandas_or_matplotlib_is_imported(tmp_path, watched):
    csv = tmp_path / "gemm.csv"
    csv.write_text(GEMM)
    out = tmp_path / "out"
    lines = run_script(["exposed_latency/exposed_latency.py", str(csv), "--out", str(out)], watched)
    # Watched: the figure process drew the figures, the command never imported matplotlib.
    assert_line_first(lines, EXPECTED, watched)
    assert printed(lines).count(EXPECTED[2]) == 1
    assert f"wrote {out / 'exposed_latency.png'} and one figure per workload" in printed(lines)
    for stem in ("exposed_latency", "exposed_latency_gemm"):
        assert (out / f"{stem}.png").stat().st_size > 10_000 and (out / f"{stem}.svg").is_file()


@pytest.mark.parametrize("text", [
    GEMM,
    GEMM.replace("probe,original", "probe, original").replace("2.0,50.0", " 2.0, 50.0"),  # spaces after commas
    HEADER + "a,1,,2,0.5,1,0.5\nb,3e0,+6,.4E1,1.,2,1\n",  # ncu not measured; other spellings of numbers
    "kernel,epilogue,probe,original,ncu,neutrino,prologue,extra\n2,0.4,p,2,50,2.5,0.1,x\n",  # other column order
])
def test_the_plain_reader_reads_what_pandas_reads(tmp_path, text):
    from exposed_latency import fast
    from exposed_latency import pipeline as el

    csv = tmp_path / "w.csv"
    csv.write_text(text)
    plain = fast.read_plain_csv(csv)
    assert plain is not None
    df = el.read_workload_csv(csv)
    assert plain[0] == df["probe"].tolist()
    for col, values in plain[1].items():
        np.testing.assert_array_equal(values, df[col].to_numpy(dtype=float))


@pytest.mark.parametrize("text", [
    GEMM.replace("dmat", '"dmat"'),  # quoted
    GEMM + "\n",  # a blank line
    GEMM.replace("8.0,10.0", "8.0,inf"),  # not finite
    GEMM.replace("4.0,8.0", "-4.0,8.0"),  # not positive
    GEMM.replace("dmat", "block_sched"),  # one row per probe
    GEMM.rstrip("\n"),  # no newline at the end
])
def test_anything_else_goes_to_the_pandas_reader(tmp_path, text):
    from exposed_latency import fast

    csv = tmp_path / "w.csv"
    csv.write_text(text)
    assert fast.read_plain_csv(csv) is None
