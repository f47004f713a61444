"""Tables without pandas (neutrino_ae/report/results/columns.py): the CSV and Markdown files written from
:class:`Columns` are byte for byte the ones ``write_results`` writes from the DataFrame pandas makes of the
same values, and a result's :class:`FrameMap` gives that DataFrame."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from neutrino_ae.report.results import MARKDOWN_MAX_ROWS, write_results
from neutrino_ae.report.results.columns import Columns, FrameMap, as_column

TRICKY_FLOATS = [0.1, 1 / 3, 1e16, 1e-5, 123456789.0, 5e-324, -0.0, float("inf"), -float("inf"), 2.5e15,
                 12345678901234567.0, 0.30000000000000004, 602241.0, -7.25]

TABLES = {
    "ints and floats": {"smid": np.arange(14, dtype=np.int64) * 3, "x": np.array(TRICKY_FLOATS)},
    "whole floats with NaN (written as integers)": {"peak": np.array([3.0, np.nan, 12.0, -4.0]),
                                                    "ratio": np.array([0.5, np.nan, 1.0, 2.0])},
    "lists: ints, numbers with None, all None": {"grid": [32768, 4096, 1], "gt": [602241.0, None, 12.5],
                                                "gt_whole": [602241.0, None, 7.0], "none": [None, None, None]},
    "text that needs quoting and escaping": {"label": ["raw", "a,b", 'say "hi"', "pipe | here\nand a newline"],
                                            "n": [1, 2, 3, 4]},
    "bools": {"ok": [True, False, True], "arr": np.array([False, True, True])},
    "one column, missing values": {"x": np.array([np.nan, 1.5, np.nan])},
    "no rows": {"a": np.zeros(0, np.int64), "b": np.zeros(0)},
    "more rows than the Markdown copy": {"i": np.arange(MARKDOWN_MAX_ROWS + 7),
                                         "f": np.linspace(0, 1, MARKDOWN_MAX_ROWS + 7)},
}


@pytest.mark.parametrize("name", list(TABLES))
def test_columns_are_written_as_pandas_writes_the_same_values(tmp_path, name):
    values = TABLES[name]
    ours = write_results(tmp_path / "ours", "s", {}, tables={"t": Columns(values)})
    theirs = write_results(tmp_path / "pandas", "s", {}, tables={"t": pd.DataFrame(values)})
    for f in ("t.csv", "t.md"):
        assert ours[f].read_bytes() == theirs[f].read_bytes(), f


def test_concat_promotes_columns_as_pandas_does(tmp_path):
    a = {"trace": ["raw", "raw"], "n": np.array([1, 2]), "peak": np.array([4, 5])}
    b = {"trace": ["memset"], "n": np.array([3]), "peak": np.array([np.nan])}  # ints with a missing value
    ours = write_results(tmp_path / "ours", "s", {}, tables={"t": Columns.concat([Columns(a), Columns(b)])})
    frame = pd.concat([pd.DataFrame(a), pd.DataFrame(b)], ignore_index=True)
    theirs = write_results(tmp_path / "pandas", "s", {}, tables={"t": frame})
    assert ours["t.csv"].read_text() == theirs["t.csv"].read_text() == "trace,n,peak\nraw,1,4\nraw,2,5\nmemset,3,\n"
    with pytest.raises(ValueError, match="different columns"):
        Columns.concat([Columns(a), Columns({"n": [1]})])


def test_a_frame_map_gives_each_table_as_the_dataframe_of_its_values():
    values = TABLES["lists: ints, numbers with None, all None"]
    tables = FrameMap({"cols": Columns(values), "frame": pd.DataFrame({"a": [1]})})
    assert list(tables) == ["cols", "frame"] and len(tables) == 2
    pd.testing.assert_frame_equal(tables["cols"], pd.DataFrame(values))
    assert tables["cols"] is tables["cols"]  # converted once
    assert dict(tables.items())["frame"].equals(pd.DataFrame({"a": [1]}))


def test_columns_refuse_ragged_or_2d_columns():
    with pytest.raises(ValueError, match="differ in length"):
        Columns({"a": [1, 2], "b": [1]})
    with pytest.raises(ValueError, match="1-D"):
        as_column(np.zeros((2, 2)))
