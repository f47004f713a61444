"""Every path option of every ``neutrino-ae`` subcommand, pointed at a path the file system cannot use
(a symbolic-link loop, a name too long, a folder that cannot be searched), ends in one ``error:`` line
naming the path, exit 2, no traceback, before any work; and no command writes its results into the
file-system root, the home folder, the repository root or one of the repository's source folders
(issue 23, items 5 and 8)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from neutrino_ae import cli

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.fixture(scope="module")
def where(tmp_path_factory):
    base = tmp_path_factory.mktemp("paths")
    (base / "loop").symlink_to(base / "loop")
    (base / "locked").mkdir()
    (base / "locked" / "inside").mkdir()
    (base / "locked").chmod(0)
    good = base / "good"
    good.mkdir()
    from neutrino_ae.report.results.summary import summary_row, write_summary
    write_summary(good, [summary_row("dmat", "fig1.pages", 33, "pages")])
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("output_dir = ''", metadata={"tags": ["parameters"]})]
    nbformat.write(nb, base / "nb.ipynb")
    yield base
    (base / "locked").chmod(0o755)


FAULTS = {
    "loop": (lambda b: b / "loop", "symbolic link loop"),
    "below-loop": (lambda b: b / "loop" / "sub", "symbolic link loop"),
    "name-too-long": (lambda b: b / ("x" * 300), "too long"),
    "unsearchable": (lambda b: b / "locked" / "inside", "permission denied"),
}

# {P}: the faulty path; {base}: a good scratch folder; {good}: a run folder with a summary.json.
OPTIONS = {
    "sample --out": ["sample", "--out", "{P}"],
    "fetch --trace-root": ["fetch", "--trace-root", "{P}", "--url", "http://127.0.0.1:9/trace.zip"],
    "run --trace-root": ["run", "static", "--notebook", "{base}/nb.ipynb", "-p", "bundle", "sample",
                         "--trace-root", "{P}", "--output-dir", "{base}/out"],
    "run -p trace_root": ["run", "static", "--notebook", "{base}/nb.ipynb", "-p", "trace_root", "{P}",
                          "--output-dir", "{base}/out"],
    "run --output-dir": ["run", "static", "--notebook", "{base}/nb.ipynb", "--output-dir", "{P}"],
    "run -p output_dir": ["run", "static", "--notebook", "{base}/nb.ipynb", "-p", "output_dir", "{P}"],
    "run --notebook": ["run", "static", "--notebook", "{P}", "--output-dir", "{base}/out"],
    "compare RUN_A": ["compare", "{P}", "{good}"],
    "compare RUN_B": ["compare", "{good}", "{P}"],
}


def _argv(template: list[str], path: Path, base: Path) -> list[str]:
    return [a.format(P=path, base=base, good=base / "good") for a in template]


def _drop_dac() -> None:
    """As root, give up the capabilities that ignore file permissions (root passes every check)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _cli(argv: list[str], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "neutrino_ae", *argv], capture_output=True, text=True,
                          cwd=REPO, env=ENV, timeout=300, check=False, **kw)


def _one_error_line(stderr: str, *needles: str) -> str:
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr[-3000:]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _entries(base: Path) -> set[str]:
    return {p.name for p in base.iterdir()}


@pytest.mark.parametrize("fault", [f for f in FAULTS if f != "unsearchable"])
@pytest.mark.parametrize("option", list(OPTIONS))
def test_unusable_path_is_one_line_and_exit_2(where, option, fault, capsys):
    make, problem = FAULTS[fault]
    path = make(where)
    before = _entries(where)
    assert cli.main(_argv(OPTIONS[option], path, where)) == 2
    err = capsys.readouterr().err
    # The line names the path (its start, for a name too long to show whole) and the option.
    _one_error_line(err, str(path)[:90], problem, option.split()[-1])
    assert _entries(where) == before, "nothing may be created before the path is checked"


@pytest.mark.parametrize("option", list(OPTIONS))
def test_unsearchable_folder_is_one_line_and_exit_2(where, option):
    path = FAULTS["unsearchable"][0](where)
    before = _entries(where)
    proc = _cli(_argv(OPTIONS[option], path, where), preexec_fn=_drop_dac if os.geteuid() == 0 else None)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    _one_error_line(proc.stderr, str(path), "permission denied", option.split()[-1])
    assert _entries(where) == before


def test_symlink_loop_as_trace_root_of_the_real_notebook(where):
    """The issue's case, as a user types it: `run static --trace-root <loop>` (no --notebook)."""
    proc = _cli(["run", "static", "-p", "bundle", "auto", "--trace-root", str(where / "loop"),
                 "--output-dir", str(where / "out-real")])
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    _one_error_line(proc.stderr, str(where / "loop"), "symbolic link loop", "--trace-root")
    assert not (where / "out-real").exists()


# ------------------------------------------------------------------ never write into a source folder


def _snapshot(folder: Path) -> dict[str, float]:
    """What a run writing its results here would change. Other tests running beside this one (xdist)
    create temp folders under / and hypothesis' database, bytecode and the suite's own results/ and
    traces/ under the repository: those are not what is guarded, so / and the home folder are
    compared by their entries' names, the repository by its source files' mtimes."""
    if not folder.is_dir():
        return {}
    if folder == Path("/") or folder == Path.home():
        return {p.name: 0.0 for p in folder.iterdir() if not p.name.startswith(".")}
    return {str(p): p.lstat().st_mtime for p in folder.rglob("*") if _is_source(p.relative_to(REPO))}


def _is_source(rel: Path) -> bool:
    return not ("__pycache__" in rel.parts or any(part.startswith(".") for part in rel.parts)
                or rel.parts[0] in ("results", "traces"))


REFUSED = {
    "the repository root": (lambda: REPO, "repository root"),
    "/": (lambda: Path("/"), "root of the file system"),
    "the home folder": (lambda: Path.home(), "home folder"),
    "a section's code folder": (lambda: REPO / "dmat", "source folder"),
    "a new folder inside a section's code folder": (lambda: REPO / "block_sched" / "out", "source folder"),
    "the package": (lambda: REPO / "neutrino_ae" / "report", "source folder"),
    "tests/": (lambda: REPO / "tests" / "results", "source folder"),
    "docs/": (lambda: REPO / "docs", "source folder"),
}


@pytest.mark.parametrize("how", ["--output-dir", "-p output_dir"])
@pytest.mark.parametrize("target", list(REFUSED))
def test_run_refuses_to_write_into_a_source_folder(where, target, how, capsys):
    folder, problem = REFUSED[target][0](), REFUSED[target][1]
    before = _snapshot(folder)
    opt = ["--output-dir", str(folder)] if how == "--output-dir" else ["-p", "output_dir", str(folder)]
    assert cli.main(["run", "static", "--notebook", str(where / "nb.ipynb"), *opt]) == 2
    _one_error_line(capsys.readouterr().err, str(folder), problem, how.split()[-1])
    assert _snapshot(folder) == before
    assert not (REPO / "block_sched" / "out").exists()


@pytest.mark.parametrize("argv, folder", [
    (["sample", "--out", "{REPO}/dmat/sample"], "dmat"),
    (["fetch", "--trace-root", "{REPO}/block_sched/paper", "--url", "http://127.0.0.1:9/trace.zip"], "block_sched"),
    (["sample", "--out", "{REPO}/tools/sample"], "tools"),
], ids=["sample --out dmat/sample", "fetch --trace-root block_sched/paper", "sample --out tools/sample"])
def test_bundle_commands_refuse_a_source_folder(argv, folder, capsys):
    before = _snapshot(REPO / folder)
    args = [a.format(REPO=REPO) for a in argv]
    assert cli.main(args) == 2
    _one_error_line(capsys.readouterr().err, args[2], "source folder")
    assert _snapshot(REPO / folder) == before


def test_per_figure_script_refuses_its_own_code_folder(tiny_bundle):
    before = _snapshot(REPO / "dmat")
    proc = subprocess.run([sys.executable, str(REPO / "dmat" / "dmat.py"), str(tiny_bundle / "dmat" / "fig1.dmat"),
                           "--out", str(REPO / "dmat")], capture_output=True, text=True, cwd=REPO, env=ENV,
                          timeout=300, check=False)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr
    assert str(REPO / "dmat") in proc.stderr and "source folder" in proc.stderr
    assert _snapshot(REPO / "dmat") == before


def test_the_notebook_itself_refuses_a_source_folder(tmp_path):
    """Jupyter and papermill run the notebook without the command line: its set-up refuses too."""
    from neutrino_ae.report.section import NotebookInputError
    from neutrino_ae.run.notebook import StaticNotebook

    before = _snapshot(REPO / "dmat")
    with pytest.raises(NotebookInputError, match="source folder"):
        StaticNotebook(bundle="sample", trace_root=str(tmp_path / "traces"), output_dir=str(REPO / "dmat"))
    assert _snapshot(REPO / "dmat") == before and not (tmp_path / "traces").exists()


@pytest.mark.parametrize("rel", ["results/static", "results/mine", "traces/out", "out-gpu"])
def test_output_folders_for_results_stay_allowed(rel):
    from neutrino_ae.report.command.paths import unsafe_output, user_path

    assert unsafe_output(REPO / rel) is None
    assert user_path(REPO / rel, "--output-dir") == REPO / rel


@pytest.mark.parametrize("script", ["block_sched/block_sched.py", "dmat/dmat.py", "exposed_latency/exposed_latency.py",
                                    "kernel_overhead/kernel_overhead.py", "max_mem/max_mem.py",
                                    "warp_sched/fig13cd.py", "warp_sched/warp_sched.py"])
def test_per_figure_script_names_a_symlink_loop_as_its_input(where, script):
    """Path.exists() is False for a loop; the scripts said "no such file" about a path that is there."""
    proc = subprocess.run([sys.executable, str(REPO / script), str(where / "loop"), "--out", str(where / "pf")],
                          capture_output=True, text=True, cwd=REPO, env=ENV, timeout=300, check=False)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-3000:])
    _one_error_line(proc.stderr, f"error: {where / 'loop'}: ", "symbolic link loop")
    assert not (where / "pf").exists()


@pytest.mark.parametrize("how", ["--trace-root", "-p"])
def test_a_trace_root_in_a_folder_that_does_not_exist_is_refused(tmp_path, how, capsys):
    """Issue 37 item 8: ``-p trace_root /nonexistent/dir`` silently created that folder at ``/`` and built a
    bundle there (a typo in the parent). A new trace root is fine inside an existing folder only."""
    root = tmp_path / "nonexistent" / "dir"
    given = ["--trace-root", str(root)] if how == "--trace-root" else ["-p", "trace_root", str(root)]
    code = cli.main(["-q", "run", "static", "-p", "bundle", "sample", *given, "--output-dir", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err == (f"error: {root}: its folder {root.parent} does not exist ({how if how != '-p' else '-p trace_root'}"
                   "); create it first, or name a new folder inside an existing one\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "nothing is created"
