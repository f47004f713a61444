"""The tables a per-figure script prints before pandas is imported are the text pandas printed (issue 24)."""

from __future__ import annotations

import pandas as pd
import pytest

from neutrino_ae.report.results.text_table import text_table


@pytest.mark.parametrize("names", [
    ["resnet-bs32", "a"], ["x" * 70, ""], ["tab\there", "line\nbreak", "cr\rhere"], ["ünï", "日本語"],
    [" lead", "trail "], ["1.5", "NaN", "None", "-"],
])
def test_text_table_is_pandas_to_string(names):
    rows = [(n, "p" * (i + 1), f"{i}.5 KiB") for i, n in enumerate(names)]
    df = pd.DataFrame(rows, columns=["model", "probe_name", "x"])
    assert text_table(["model", "probe_name", "x"], rows) == df.to_string(index=False)
