"""What many tests share, built once per test run (tests/shared_build.py): the tiny and the small sample
bundles and one executed static notebook on the small one (read them; copy them to change them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import process_guard
import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.database import DirectoryBasedExampleDatabase
from process_tests import ALL, PROCESS
from shared_build import build_once, load_process, save_process

REPO = Path(__file__).resolve().parents[1]

# `make test` (= CI, `--hypothesis-profile ci`) judges a submission once: the properties draw the same
# examples every run, each within its own fixed max_examples, and keep no database. A developer's plain
# `pytest` explores new examples and keeps what failed in a database outside the tree (a checkout stays
# clean; $NEUTRINO_AE_HYPOTHESIS_DB moves it).
_HOME = Path(os.environ.get("NEUTRINO_AE_HYPOTHESIS_DB") or
             Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "neutrino-ae" / "hypothesis")
set_hypothesis_home_dir(_HOME)  # its other caches (constants/) too, not .hypothesis/ in the checkout
settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("dev", database=DirectoryBasedExampleDatabase(_HOME / "examples"))
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# The suite starts about 800 Python processes (command lines, kernels, section workers, scripts): they share
# the bytecode the first one compiles (__pycache__, git-ignored), where PYTHONDONTWRITEBYTECODE (set on the CI
# machine) would have each compile the package and the tests' helpers again (7 % more CPU in tests/run's
# command-line tests). A notebook's kernel still keeps the section folders free of it (run/notebook.py).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


@pytest.fixture(scope="session")
def tiny_bundle(tmp_path_factory) -> Path:
    """The sample generator's smallest bundle (seed 0), made once per test run; tests must not modify it."""
    from neutrino_ae.sample.generate import generate_bundle

    def build(folder: Path) -> None:
        generate_bundle(folder / "traces", scale="tiny", progress=False)

    return build_once(tmp_path_factory, "tiny-bundle", build) / "traces"


@pytest.fixture(scope="session")
def small_bundle(tmp_path_factory) -> Path:
    """The default sample bundle (``scale="small"``, seed 0), made once per test run; tests must not modify it."""
    from neutrino_ae.sample.generate import generate_bundle

    def build(folder: Path) -> None:
        generate_bundle(folder / "traces", scale="small", seed=0, progress=False)

    return build_once(tmp_path_factory, "small-bundle", build) / "traces"


@pytest.fixture(scope="session")
def sample_run(small_bundle, tmp_path_factory) -> SimpleNamespace:
    """One run of the public command on a copy of ``small_bundle``, made once per test run and read by
    every test about what a whole run writes (the executed notebook, summary, verdict, figures):

        cd <empty cwd> && neutrino-ae run static -p bundle sample --trace-root <traces> --output-dir <out>

    ``.proc`` is the finished process (its return code, stdout and stderr). Tests must not modify
    ``.out`` or ``.traces``; copy them to change them or to run again into them."""

    def build(folder: Path) -> None:
        traces, out, cwd = folder / "traces", folder / "results", folder / "cwd"
        shutil.copytree(small_bundle, traces)
        cwd.mkdir()
        env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}
        argv = [sys.executable, "-m", "neutrino_ae", "run", "static", "-p", "bundle", "sample",
                "--trace-root", str(traces), "--output-dir", str(out)]
        save_process(folder / "proc.json", subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd,
                                                          timeout=600, check=False))

    folder = build_once(tmp_path_factory, "sample-run", build)
    proc = load_process(folder / "proc.json")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return SimpleNamespace(dir=folder, traces=folder / "traces", out=folder / "results", cwd=folder / "cwd", proc=proc)


@pytest.fixture(scope="session")
def timeline_runs(tiny_bundle, tmp_path_factory) -> SimpleNamespace:
    """Two quiet runs of the public command into one output folder, on a copy of ``tiny_bundle``, of the
    two sections with Perfetto timelines, made once per test run (read by the logging and timeline tests):

        neutrino-ae -q run static --sections block_sched,warp_sched --trace-root <traces> \\
            --output-dir <out> --report-only -p workers 2        # .first
        the same again without ``-p workers``: every result reused  # .second

    with progress bars forced on (``NEUTRINO_AE_PROGRESS=1``), so that "-q draws none" means something.
    ``.first_notebook`` is the executed notebook as the first run left it, ``.first_mtimes`` every output
    file's ``st_mtime_ns`` then (by path relative to ``.out``). Tests must not modify the folder."""

    def run(folder: Path, name: str, *extra: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg", "NEUTRINO_AE_PROGRESS": "1"}
        argv = [sys.executable, "-m", "neutrino_ae", "-q", "run", "static", "--sections", "block_sched,warp_sched",
                "--trace-root", str(folder / "traces"), "--output-dir", str(folder / "results"), "--report-only",
                *extra]
        save_process(folder / f"{name}.json", subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO,
                                                             timeout=600, check=False))

    def build(folder: Path) -> None:
        from neutrino_ae.run.publish import published_set

        shutil.copytree(tiny_bundle, folder / "traces")
        run(folder, "first", "-p", "workers", "2")
        out = folder / "results"
        shutil.copy2(out / "static.executed.ipynb", folder / "first.ipynb")
        published = published_set(out)  # the names in ``out`` are links into it (run/publish.py)
        (folder / "first-mtimes.json").write_text(json.dumps(
            {str(p.relative_to(published)): p.stat().st_mtime_ns for p in published.rglob("*") if p.is_file()}))
        run(folder, "second")

    folder = build_once(tmp_path_factory, "timeline-runs", build)

    return SimpleNamespace(traces=folder / "traces", out=folder / "results", first=load_process(folder / "first.json"),
                           second=load_process(folder / "second.json"), first_notebook=folder / "first.ipynb",
                           first_mtimes=json.loads((folder / "first-mtimes.json").read_text()))


@pytest.fixture(autouse=True)
def _fresh_logging():
    """Each test starts without the console/run.log handlers an earlier one installed in this process
    (the notebooks' set-up installs them, as in a kernel)."""
    from neutrino_ae import logs

    yield
    logs.reset()


# Longest first: pytest-xdist gives each worker a share of the tests in collection order (`make test`
# uses --dist worksteal: a worker that runs out takes half of another's queue), so a long module
# collected last can keep one core busy while the other has nothing left to take. These modules, the
# slowest (``--durations``), go first; any other keeps its order after them. A scheduling hint only: a
# stale entry costs time, never a test. (Under the default --dist load this order would be wrong: the
# first chunk of consecutive tests, all of these, goes to one worker.) The readers of the shared run
# (``sample_run``) come first, in one block, so that one worker builds it and none waits for it.
RUN_FIRST = (
    # the readers of sample_run (and of tests/run/conftest.py's typo_run and partial_run, made from it)
    "tests/run/test_verdict_cli.py",
    "tests/run/test_notebook_report.py",
    "tests/run/test_static_notebook.py",
    "tests/report/test_exact_numbers.py",
    "tests/run/test_failed_run_keeps_report.py",
    # then by CPU-seconds, most first (self + children per test, summed by module: a full run, 2026-11-28)
    "tests/run/test_dynamic_ptx_emulated.py",
    "tests/workloads/test_ptx_probe_engine.py",
    "tests/reliability/test_faults.py",
    "tests/benchmarks/test_e2e.py",
    "tests/fuzz/test_fuzz_bundle_files.py",
    "tests/reliability/test_round3_manifest.py",
    "tests/benchmarks/test_speed.py",
    "tests/test_packaging.py",
    "tests/sections/warp_sched/test_warp_sched_line_first.py",
    "tests/run/test_dynamic_real_neutrino.py",
    "tests/benchmarks/test_bench.py",
    "tests/reliability/test_round3_values.py",
    "tests/run/test_cache_sees_added_inputs.py",
    # the readers of timeline_runs, together
    "tests/run/test_logging.py",
    "tests/run/test_notebook_facade.py",
    "tests/run/test_perfetto_links.py",
    "tests/report/test_verdict_catches_corruption.py",
    "tests/run/test_neutrino_command_lines.py",
    "tests/run/test_cli_paths.py",
    "tests/run/test_dynamic_notebook.py",
    "tests/run/test_genuine_cli.py",
    "tests/report/test_figure_legibility.py",
    "tests/bundle/test_bundle_trust.py",
    "tests/run/test_real_neutrino.py",
    "tests/run/test_readme.py",
    "tests/bundle/test_local_zip.py",
    "tests/report/test_seventh_section.py",
    "tests/formats/test_formats_eventlog.py",
    "tests/run/test_papermill_parameters.py",
    "tests/sections/block_sched/test_line_first.py",
    "tests/reliability/test_round3_resources.py",
    "tests/run/test_layout.py",
    "tests/run/test_cli.py",
    "tests/run/test_exit_codes.py",
)


# `make check` (pytest --in-process, the inner loop) runs the tests that start no process; `make test` runs all.
# Those that start one are marked `process` or listed in tests/process_tests.py; under --in-process any other
# that starts one fails with tests/process_guard.py's message, so none leaves the suite unnoticed.
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--in-process", action="store_true",
                     help="only the tests that start no process (make check): the `process` ones are deselected, "
                          "and any other that starts a process fails")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "process: the test starts a process; `make check` (--in-process) leaves it "
                                       "to `make test`")
    # In the processes that run tests: pytest-xdist's controller must start its workers.
    if config.getoption("in_process") and (hasattr(config, "workerinput") or not config.getoption("numprocesses",
                                                                                                  None)):
        process_guard.install()


def _starts_a_process(item: pytest.Item) -> bool:
    module, _, name = item.nodeid.split("[", 1)[0].partition("::")
    listed = PROCESS.get(module, ())
    return item.get_closest_marker("process") is not None or listed == ALL or name in listed


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("in_process"):
        left = [item for item in items if _starts_a_process(item)]
        if left:
            config.hook.pytest_deselected(items=left)
            items[:] = [item for item in items if not _starts_a_process(item)]
    rank = {module: i for i, module in enumerate(RUN_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: the rest keep order


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Under --in-process, a test (its set-up, call or tear-down) that tried to start a process fails, even
    where its code caught the refusal."""
    outcome = yield
    started = process_guard.take_attempts()
    if started:
        report = outcome.get_result()
        report.outcome = "failed"
        report.longrepr = process_guard.MESSAGE.format(", ".join(sorted(set(started))))


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """``pytest -n N`` without ``--dist`` schedules as ``make test`` does (``--dist worksteal``), for the
    order above; an explicit ``--dist`` is kept."""
    opt = config.option
    explicit = getattr(opt, "dist", "no") != "no" or getattr(opt, "distload", False)
    if getattr(opt, "numprocesses", None) and not explicit:
        opt.dist = "worksteal"
