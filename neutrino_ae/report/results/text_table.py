"""Tables printed as pandas prints them, without pandas: a per-figure script's first lines come before pandas
is imported (issue 24), in the text its ``DataFrame.to_string(index=False)`` gave."""

from __future__ import annotations

from collections.abc import Sequence


def text_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table of strings as pandas' ``DataFrame.to_string(index=False)`` prints it: each column right-aligned
    to its widest cell or header, one space between columns, tab and line breaks shown escaped."""
    def cell(v: str) -> str:
        return v.replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")

    cols = [[cell(c), *(cell(r[k]) for r in rows)] for k, c in enumerate(columns)]
    widths = [max(len(v) for v in col) for col in cols]
    return "\n".join(" ".join(col[i].rjust(w) for col, w in zip(cols, widths, strict=True))
                     for i in range(len(rows) + 1))
