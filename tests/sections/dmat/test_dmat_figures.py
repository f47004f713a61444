"""The DMAT figure list has one definition, ``dmat.FIGURES``: inputs, notebook cells, collection, the
sample model and the sample writer follow it, and no other source file spells the list."""

from __future__ import annotations

import re
from pathlib import Path

from dmat import FIGURES, SECTION, analysis, sample, sample_model

REPO = Path(__file__).resolve().parents[3]


def test_everything_in_the_folder_follows_dmat_figures():
    keys = tuple(FIGURES)
    assert keys == ("fig1", "fig10a", "fig10b", "fig10c")  # the paper's order
    assert SECTION.inputs == tuple(f"dmat/{k}.dmat" for k in keys)
    assert [png for png, _ in SECTION.notebook_figures] == [f"{k}.png" for k in keys]
    assert [caption.split(":")[0] for _, caption in SECTION.notebook_figures] == [f.paper_ref for f in FIGURES.values()]
    assert tuple(sample_model.KERNELS) == keys and tuple(sample.TRACE_DIRS) == keys
    for key, fig in FIGURES.items():
        assert sample_model.KERNELS[key].fig == key and sample_model.KERNELS[key].keyword == fig.keyword
        # The workload the collector runs says how it is collected, with the same -k keyword.
        assert f"neutrino -p dmat -k {fig.keyword} python dmat/{key}.py" in (REPO / "dmat" / f"{key}.py").read_text()
    assert analysis.FIGURES is FIGURES


def test_no_other_source_file_spells_the_figure_list():
    quoted = re.compile(r"""["']fig10[abc]["']""")
    tops = [d for d in REPO.iterdir() if d.is_dir() and not d.name.startswith((".", "_")) and d.name != "tests"]
    sources = [*REPO.glob("*.py"), *(p for d in tops for p in d.rglob("*.py"))]
    spelled = sorted(p.relative_to(REPO).as_posix() for p in sources if quoted.search(p.read_text()))
    assert set(spelled) <= {"dmat/__init__.py"}, spelled
