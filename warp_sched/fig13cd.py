"""Fig. 13c/d: active warps, busy SMs and the tail. `python warp_sched/fig13cd.py <trace> [--out DIR]`.

The artifact-compatible command line: this folder's ``SECTION`` on the section driver, for Fig. 13c/d alone.
"""

from neutrino_ae.report.section.driver import run_script

FLAGS = {
    "--clock-align": {"choices": ("sm", "global"), "default": "sm",
                      "help": "align each SM's clock on its first warp (default; SM clocks are not synchronised) "
                              "or keep raw differences"},
    "--tail-threshold": {"type": float, "default": 0.9,
                         "help": "tail = fewer than this share of SMs busy until the end (default 0.9)"},
}



def main(argv: list[str] | None = None) -> int:
    return run_script(__file__, argv, options={"figure": "fig13cd"}, flags=FLAGS)


if __name__ == "__main__":
    raise SystemExit(main())
