"""Fig. 13c/13d: tailing effect. `python warp_sched/fig13cd.py <trace.bin | tracedir | .npz | .csv> [--out DIR]`.

A legacy ``tmp.pkl`` is refused (unpickling a download runs arbitrary code); see warp_sched.py.
"""

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the repo root must win over this folder on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from neutrino_ae.report.script import run_main  # noqa: E402
from warp_sched.warp_sched import tail_main  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    return tail_main(argv)


if __name__ == "__main__":
    raise SystemExit(run_main(main))
