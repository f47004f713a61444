"""The toy's numbers (total and mean count) and its one figure."""

from __future__ import annotations

from typing import Any

import pandas as pd

from neutrino_ae.report.section.driver import Figure, Result


def compute(frames: dict[str, Any]) -> Result:
    counts = frames["counts"]
    total, mean = int(counts.sum()), float(counts.mean())
    return Result(files={"toy": pd.DataFrame({"i": range(counts.size), "count": counts})},
                  numbers={"total.count": total, "mean.count": mean},
                  truth={"total.count": frames["truth"].get("total")}, units={"count": "n"},
                  data={"total": total, "mean": mean, "summary": None}, lines=[f"toy total {total}"],
                  done="wrote {figure}",
                  input=frames["path"], plots={"counts": counts})


def figures(result: Result) -> list[Figure]:
    return [Figure("toy", "figures:bars", {"counts": result.plots["counts"]}, {"title": "Fig. 99: toy counts"})]
