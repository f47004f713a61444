"""Fig. 13a-d from a bundle's warp_sched/ folder: `python warp_sched/warp_sched.py <root> [--out DIR] [--json]`.

The artifact-compatible command line: this folder's ``SECTION`` on the section driver.
"""

from neutrino_ae.report.section.driver import run_script

THRESHOLD = {"--tail-threshold": {"type": float, "default": 0.9,
                                  "help": "tail = fewer than this share of SMs busy until the end (default 0.9)"}}



def main(argv: list[str] | None = None) -> int:
    return run_script(__file__, argv, flags=THRESHOLD)


if __name__ == "__main__":
    raise SystemExit(main())
