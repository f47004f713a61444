"""The layers are true: every import of the package and the section folders (module level, inside
functions, relative) goes down the layers of ``tools/module_map.py``, with no exception; and
``docs/modules.md``, the picture drawn from those imports, is the one the code gives now."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def module_map():
    spec = importlib.util.spec_from_file_location("module_map", REPO / "tools" / "module_map.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["module_map"] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules["module_map"]


def test_no_import_breaks_the_layers(module_map):
    assert module_map.violations() == []


def test_every_group_of_the_package_is_in_a_layer(module_map):
    groups = {p.name for p in (REPO / "neutrino_ae").iterdir() if (p / "__init__.py").is_file()}
    groups |= {module_map.TOP_MODULES[p.stem] for p in (REPO / "neutrino_ae").glob("*.py")}
    assert groups <= set(module_map.LAYER_OF), groups - set(module_map.LAYER_OF)
    assert set(module_map.section_folders()) >= {"block_sched", "dmat", "warp_sched"}


def test_docs_modules_md_is_what_the_imports_give(module_map):
    committed = (REPO / "docs" / "modules.md").read_text(encoding="utf-8")
    assert committed == module_map.render(), "docs/modules.md is out of date: run python tools/module_map.py"


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def test_the_rule_catches_each_kind_of_wrong_import(module_map, tmp_path):
    for pkg in ("", "formats/", "bundle/", "report/", "sample/", "workloads/", "run/"):
        _write(tmp_path, f"neutrino_ae/{pkg}__init__.py", "")
    _write(tmp_path, "neutrino_ae/errors.py", "")
    _write(tmp_path, "neutrino_ae/run/runner.py", "from neutrino_ae.report import results\n")
    _write(tmp_path, "neutrino_ae/report/results/__init__.py", """
        from neutrino_ae.bundle import manifest   # down: fine
        def later():
            from neutrino_ae.run import runner    # up, inside a function
    """)
    _write(tmp_path, "neutrino_ae/bundle/manifest.py", "from ..sample import gen\n")  # up, relative
    _write(tmp_path, "neutrino_ae/sample/gen.py", "from neutrino_ae.workloads import gpu\n")  # beside
    _write(tmp_path, "neutrino_ae/workloads/gpu.py", "import neutrino_ae.errors\n")
    _write(tmp_path, "alpha/__init__.py", "SECTION = None\nfrom . import pipeline\n")
    _write(tmp_path, "alpha/pipeline.py", """
        from neutrino_ae.report import results  # the report layer: fine for a section
        from neutrino_ae.run import runner      # the runner calls sections, never the other way
    """)
    _write(tmp_path, "beta/__init__.py", "SECTION = None\n")
    _write(tmp_path, "beta/pipeline.py", "from alpha import pipeline\n")
    _write(tmp_path, "neutrino_ae/formats/x.py", "import beta.pipeline\n")
    found = sorted(v.split(" (")[0] for v in module_map.violations(tmp_path))
    assert found == [
        "alpha/pipeline.py:3: imports neutrino_ae.run.runner",
        "beta/pipeline.py:1: imports alpha.pipeline",
        "neutrino_ae/bundle/manifest.py:1: imports neutrino_ae.sample.gen",
        "neutrino_ae/formats/x.py:1: imports beta.pipeline",
        "neutrino_ae/report/results/__init__.py:4: imports neutrino_ae.run.runner",
        "neutrino_ae/sample/gen.py:1: imports neutrino_ae.workloads.gpu",
    ]


def test_no_module_imports_one_that_imports_it_back(module_map):
    """Issue 35: no import cycle in the package or a section folder, not even through an import inside a
    function (an annotation's ``if TYPE_CHECKING:`` import never runs and does not count)."""
    assert module_map.cycles() == []


def test_the_cycle_finder_sees_a_cycle_closed_inside_a_function(module_map, tmp_path):
    for pkg in ("", "report/"):
        _write(tmp_path, f"neutrino_ae/{pkg}__init__.py", "")
    _write(tmp_path, "neutrino_ae/report/claims/__init__.py", """
        def table():
            from neutrino_ae.report.view import html   # closes the circle
    """)
    _write(tmp_path, "neutrino_ae/report/view.py", "from neutrino_ae.report.claims import PASS\n")
    _write(tmp_path, "neutrino_ae/report/typed.py", """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from neutrino_ae.report.hints import Hint   # annotations only
    """)
    _write(tmp_path, "neutrino_ae/report/hints.py", "from neutrino_ae.report import typed\n")
    assert module_map.cycles(tmp_path) == [["neutrino_ae.report.claims", "neutrino_ae.report.view"]]
