"""Block scheduling cost (paper Sec. 4.5): `python block_sched/block_sched.py <trace.bin | tracedir> [more ...]
[--section N] [--out DIR] [--json]`.

The artifact-compatible command line: this folder's ``SECTION`` on the section driver. Its first stdout
lines, one per trace, are exactly the artifact's ``No.block:<grid> Running:<cycles> Scheduling:<cycles>(cycle)``.
"""

from neutrino_ae.report.section.driver import run_script

SECTION_INDEX = {"--section": {"type": int, "default": 0, "help": "section index of the block_sched probe (default 0)"}}

if __name__ == "__main__":
    raise SystemExit(run_script(__file__, flags=SECTION_INDEX))
