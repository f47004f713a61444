"""Fig. 99: a toy seventh section, the template a test copies into a checkout as a real folder (beside
``max_mem/``) to show that a new section is one folder: nothing outside it is edited
(tests/report/test_seventh_section.py). It is every file of the recipe in docs/DESIGN.md, at its smallest."""

from neutrino_ae.report.section import Section

from .claims import CLAIMS

SECTION = Section(
    name="toy",
    title="Toy result",
    paper_ref="Fig. 99",
    order=99,
    runtime="instant",
    inputs=("toy/counts.txt",),
    load="inputs:load",
    compute="analysis:compute",
    figures="analysis:figures",
    command="toy folder with counts.txt",
    collect="collect:collect",
    sample="sample:build",
    static_prose="The toy section sums a few counts.",
    dynamic_prose="The toy collects its counts with the collection's Python.",
    claims=CLAIMS,
)
