"""Fig. 13b: per-SM warp timeline. `python warp_sched/fig13b.py <trace.bin | tracedir | table> [--sm N] [--out DIR]`."""

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repo root must win over this folder on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neutrino_ae.report.script import run_main  # noqa: E402
from warp_sched.warp_sched import timeline_main  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    return timeline_main("fig13b", argv)


if __name__ == "__main__":
    raise SystemExit(run_main(main))
