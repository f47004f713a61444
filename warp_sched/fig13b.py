"""Fig. 13b: per-SM warp timeline. `python warp_sched/fig13b.py <trace.bin | tracedir | table> [--sm N] [--out DIR]`.

The artifact-compatible command line: this folder's ``SECTION`` on the section driver, for Fig. 13b alone.
"""

from neutrino_ae.report.section.driver import run_script

SM = {"--sm": {"type": int, "action": "append", "help": "SM id to draw (repeatable; default: picked)"}}



def main(argv: list[str] | None = None) -> int:
    return run_script(__file__, argv, options={"figure": "fig13b"}, flags=SM)


if __name__ == "__main__":
    raise SystemExit(main())
