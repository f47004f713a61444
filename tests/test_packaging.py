"""``pip install .`` puts only ``neutrino_ae`` into site-packages: the section folders and the
notebooks travel inside it (setup.py), and an install without a checkout runs the sample, a section
through ``neutrino-ae run`` and the per-figure script from the checkout. ``pip install -e .`` maps
only ``neutrino_ae`` too and runs the sections from the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from shared_build import build_once

from neutrino_ae.report.section import registry

REPO = Path(__file__).resolve().parents[1]


def _pip(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def _copy_tree(dest: Path) -> Path:
    """The working tree as git sees it (tracked and new files, nothing ignored), copied to ``dest``: a build
    writes build/ and *.egg-info next to the sources."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A copy of the working tree of this module's own (:func:`_copy_tree`)."""
    return _copy_tree(tmp_path_factory.mktemp("src") / "neutrino-ae")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """``pip wheel`` of a copy of the working tree, built once per test run (the first xdist worker that asks
    builds it, tests/shared_build.py); read only."""
    def build(folder: Path) -> None:
        _pip("wheel", "--no-deps", "-q", "-w", str(folder / "wheel"), str(_copy_tree(folder / "neutrino-ae")))

    (found,) = (build_once(tmp_path_factory, "packaging-wheel", build) / "wheel").glob("neutrino_ae-*.whl")
    return found


def test_the_wheel_holds_only_neutrino_ae(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"neutrino_ae", f"{wheel.name.split('-py3')[0]}.dist-info"}
    for section in registry.sections():  # every module of every section folder, as data of the package
        for module in sorted(section.folder.glob("*.py")):
            assert f"neutrino_ae/_sections/{section.name}/{module.name}" in names
    assert "neutrino_ae/_sections/max_mem/claims.py" in names
    assert {"neutrino_ae/_notebooks/static.ipynb", "neutrino_ae/_notebooks/dynamic.ipynb"} <= set(names)
    assert not [n for n in names if "__pycache__" in n or n.startswith(("tests/", "tools/"))]


def test_an_install_without_a_checkout_runs_a_section(wheel, source, tmp_path):
    site = tmp_path / "site"
    _pip("install", "--no-deps", "-q", "--target", str(site), str(wheel))
    assert sorted(p.name for p in site.iterdir() if not p.name.endswith(".dist-info")) == ["bin", "neutrino_ae"]
    user = tmp_path / "user"  # somewhere that is not a checkout
    user.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "MPLBACKEND": "Agg"}

    def run(*argv: str, cwd: Path = user) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc

    where = run("-c", "import neutrino_ae; from neutrino_ae.report.section import registry; "
                      "print(neutrino_ae.__file__); print(registry.REPO_ROOT); print(','.join(registry.names()))")
    pkg, sections_root, names = where.stdout.split()
    assert Path(pkg).is_relative_to(site) and Path(sections_root) == site / "neutrino_ae" / "_sections"
    assert names.split(",") == list(registry.names())
    run("-m", "neutrino_ae.sample", "--out", "traces/tiny", "--scale", "tiny", "--quiet")
    run("-m", "neutrino_ae", "-q", "run", "static", "--sections", "block_sched", "--trace-root", "traces/tiny",
        "--report-only")
    out = user / "results" / "static"  # the user's folder: the shipped notebook does not run in site-packages
    assert (out / "static.executed.ipynb").is_file() and (out / "block_sched" / "block_sched_compare.png").is_file()
    written = [p for name in ("results", "traces") for p in (site / "neutrino_ae").rglob(name)
               if not (p / "__init__.py").is_file()]  # report/results/ is a package of ours, not output
    assert not written
    # The checkout's per-figure script, with the installed package.
    trace = next((user / "traces" / "tiny" / "block_sched").glob("Jan_*/result/*.bin"))
    line = run(str(source / "block_sched" / "block_sched.py"), str(trace), "--out", str(tmp_path / "cli"),
               cwd=source).stdout
    assert "No.block:" in line


def test_an_editable_install_maps_only_neutrino_ae(source, tmp_path):
    venv = tmp_path / "venv"
    # A bare venv (no pip of its own: ensurepip would cost more than the install), installed into by this
    # pip running the venv's interpreter (``pip --python``), as the venv's own pip would.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "-q", "-e",
                           str(source)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    probe = ("import importlib.util as u; "
             "print(u.find_spec('neutrino_ae').origin); print([m for m in ('block_sched', 'dmat', 'warp_sched') "
             "if u.find_spec(m)])")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # what the venv itself imports
    found = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env,
                           timeout=120)
    origin, others = found.stdout.splitlines()
    assert Path(origin) == source / "neutrino_ae" / "__init__.py" and others == "[]"
