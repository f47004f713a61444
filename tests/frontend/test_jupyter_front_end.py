"""Both notebooks as a reviewer runs them: opened in JupyterLab and Notebook 7 (``make lab``'s, one server),
*Run All*, read back from the front end, in headless Chromium through WebDriver (issue 46).

* static.ipynb on the sample bundle in Lab: no error output, no stderr, every figure drawn in the page,
  the verdict on screen where Lab has scrolled, no absolute path of this machine in any output, and the
  notebook not marked modified when it opened;
* dynamic.ipynb without a GPU: the NOTHING COLLECTED verdict, no error output;
* a kernel without the project: on each of 10 freshly started kernels, one error line, no traceback,
  every later cell silent and the last one repeating the reason;
* static.ipynb in Notebook 7: the same, with the verdict and figures not folded into a scroll box.

A screenshot of each page is kept in the folder the failure messages name. Skipped in one line where
chromium, chromedriver or the ``lab`` extra are missing (``make test`` installs them)."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from lab_browser import (
    LabServer,
    chromium_driver,
    missing_tools,
    notebook_json,
    open_notebook,
    wait_for,
)
from plain_kernel import make_plain_kernel

REPO = Path(__file__).resolve().parents[2]
_why = missing_tools()
pytestmark = pytest.mark.skipif(_why is not None, reason=f"front-end tests skipped: {_why}")

RUN_ALL = """
const app = window.jupyterapp;
const run = arguments[0] ? app.shell.currentWidget.sessionContext.session.kernel.restart() : Promise.resolve();
window.__runAll = null;
run.then(() => app.commands.execute('notebook:run-all-cells'))
   .then(ok => { window.__runAll = {ok: ok}; }, e => { window.__runAll = {error: String(e)}; });
"""

# Each progress line on the page: the texts its output has shown (kept on the output's node, which an
# update re-renders in place).
PROGRESS = """
for (const pre of document.querySelectorAll('.neutrino-ae-progress')) {
  const node = pre.closest('.jp-OutputArea-output') || pre;
  const seen = JSON.parse(node.dataset.seen || '[]');
  if (seen[seen.length - 1] !== pre.textContent) { seen.push(pre.textContent); }
  node.dataset.seen = JSON.stringify(seen);
  window.__progress = window.__progress || new Set();
  window.__progress.add(node.dataset.seen);
}
return window.__runAll;
"""

# True once the front end has recorded the kernel's language_info (its reply to kernel_info).
LANGUAGE_KNOWN = """
const panel = window.jupyterapp.shell.currentWidget;
const info = panel.context.model.getMetadata('language_info');
return Boolean(info && info.version);
"""


def _copy_notebook(name: str, to: Path, params: dict[str, str] | None = None, kernel: str | None = None) -> None:
    """``name`` from the checkout as ``to``, with parameter lines replaced (``bundle = "sample"``) as a
    reviewer edits the parameters cell, and optionally another kernel."""
    nb = json.loads((REPO / name).read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if "parameters" in cell["metadata"].get("tags", []):
            source = "".join(cell["source"])
            for key, value in (params or {}).items():
                source, n = re.subn(rf"^{key} = .*$", f"{key} = {value}", source, flags=re.M)
                assert n == 1, key
            cell["source"] = source
    if kernel:
        nb["metadata"]["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    to.write_text(json.dumps(nb, indent=1), encoding="utf-8")


@pytest.fixture
def lab(tmp_path_factory, small_bundle):
    """One JupyterLab server (Notebook 7 too) serving a folder with the notebooks, and one browser."""
    tmp = tmp_path_factory.mktemp("frontend")
    root, shots = tmp / "served", tmp / "screenshots"
    root.mkdir()
    shots.mkdir()
    shutil.copytree(small_bundle, root / "traces" / "sample")
    _copy_notebook("static.ipynb", root / "static.ipynb", {"bundle": '"sample"'})
    _copy_notebook("static.ipynb", root / "static-nb7.ipynb", {"bundle": '"sample"'})
    _copy_notebook("dynamic.ipynb", root / "dynamic.ipynb")
    _copy_notebook("static.ipynb", root / "static-plain.ipynb", kernel="plain")
    server = LabServer(root, tmp / "jupyter-home", jupyter_path=make_plain_kernel(tmp / "plain-kernel"))
    try:
        driver = chromium_driver(tmp / "chromium-profile")
    except Exception:
        server.stop()
        raise
    try:
        yield server, driver, root, shots
    finally:
        driver.quit()
        server.stop()


def _run_all(lab_: tuple, page: str, path: str, restart: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """Open ``page`` (or keep it open with ``restart``: a fresh kernel), Run All, wait for the kernel to go
    idle (REST API); the notebook as the front end holds it, and what was seen on opening (``progress``:
    the texts each progress line showed while it ran)."""
    server, driver, _, _ = lab_
    opened = {} if restart else open_notebook(driver, server, page, path)
    if not restart:  # the front end records the kernel's language_info (its Python version) once it replies
        wait_for(driver, LANGUAGE_KNOWN, what=f"{path}: the kernel's language_info")
        opened["metadata"] = notebook_json(driver)["metadata"]
    driver.execute_script(RUN_ALL, restart)
    result = wait_for(driver, PROGRESS, timeout=600, what="Run All")
    assert "error" not in result, result
    opened["progress"] = [json.loads(seen) for seen in driver.execute_script(
        "return [...(window.__progress || [])]; ")]
    kernel = wait_for(driver, "const p = window.jupyterapp.shell.currentWidget; "
                              "return p.sessionContext.session.kernel.id;")
    server.wait_idle(kernel)
    return notebook_json(driver), opened


def _outputs(nb: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c.get("id", ""), o) for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]


def _texts(output: dict[str, Any]) -> str:
    data = output.get("data", {})
    parts = [output.get("text", ""), output.get("evalue", ""), *output.get("traceback", []),
             *(v for k, v in data.items() if k.startswith("text/"))]
    return "\n".join("".join(p) if isinstance(p, list) else str(p) for p in parts)


def _shutdown_kernels(server: LabServer) -> None:
    """Each check on its own kernel: the next one claims the same results folder."""
    for session in server.api("sessions"):
        server.api(f"sessions/{session['id']}", method="DELETE")


def _static_checks(lab_: tuple, nb: dict[str, Any], shot: Path, sample_run) -> None:
    """What a reviewer sees after Run All of static.ipynb; the screenshot ``shot`` is taken first."""
    server, driver, root, _ = lab_
    driver.save_screenshot(str(shot))
    outputs = _outputs(nb)
    errors = [(cid, o.get("ename"), o.get("evalue")) for cid, o in outputs if o["output_type"] == "error"]
    assert errors == [], f"{errors} (screenshot: {shot})"
    stderr = [(cid, o["text"]) for cid, o in outputs if o["output_type"] == "stream" and o["name"] == "stderr"]
    assert stderr == [], f"{stderr} (screenshot: {shot})"
    text = "\n".join(_texts(o) for _, o in outputs)
    for here in {str(root), str(root.resolve()), str(REPO), str(Path.home()), sys.prefix}:
        assert here not in text, f"{here} in the outputs (screenshot: {shot})"
    # every figure: as many image outputs as the same notebook run by papermill has, each drawn in the page
    images = sum(1 for _, o in outputs if any(k.startswith("image/") for k in o.get("data", {})))
    executed = json.loads((sample_run.out / "static.executed.ipynb").read_text(encoding="utf-8"))
    expected = sum(1 for _, o in _outputs(executed) if any(k.startswith("image/") for k in o.get("data", {})))
    assert images == expected > 0, f"{images} figures, papermill's run has {expected} (screenshot: {shot})"
    drawn = driver.execute_script("""
        const imgs = [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output img')];
        return {all: imgs.length, drawn: imgs.filter(i => i.complete && i.naturalWidth > 0).length};""")
    assert drawn == {"all": images, "drawn": images}, f"{drawn} of {images} figures drawn (screenshot: {shot})"
    # the verdict: on screen where Run All left the page (the last cell), the table with its claims
    seen = driver.execute_script("""
        const v = [...document.querySelectorAll('.neutrino-ae-verdict')].pop();
        if (!v) { return null; }
        const r = v.getBoundingClientRect();
        return {top: r.top, bottom: r.bottom, height: window.innerHeight, rows: v.querySelectorAll('tr').length};""")
    assert seen and seen["top"] < seen["height"] and seen["bottom"] > 0 and seen["rows"] > 3, \
        f"verdict not on screen: {seen} (screenshot: {shot})"


def static_notebook_in_jupyterlab(lab, sample_run):
    server, driver, _, shots = lab
    nb, opened = _run_all(lab, "lab/tree/static.ipynb", "static.ipynb")
    shot = shots / "lab-static.png"
    # Opening it keeps its kernel: its kernelspec as committed. Lab then marks it modified only because it fills
    # in language_info from the kernel's reply (the Python version: machine-specific, so not committed).
    committed = json.loads((REPO / "static.ipynb").read_text(encoding="utf-8"))["metadata"]
    assert opened["kernelName"] == "python3" and opened["metadata"]["kernelspec"] == committed["kernelspec"], \
        f"opening the notebook changed its kernelspec: {opened['metadata']}"
    assert set(opened["metadata"]) == {"kernelspec", "language_info"}, opened["metadata"]
    assert opened["metadata"]["language_info"]["name"] == committed["language_info"]["name"] == "python"
    _static_checks(lab, nb, shot, sample_run)
    # while the sections computed, the running cell said which one and how many were done; gone after
    line = re.compile(r"\w+: computing in a worker process \.\.\. [0-5] of 6 sections done \(\d+ s\)")
    seen = [text for texts in opened["progress"] for text in texts]
    assert seen and all(line.fullmatch(text) for text in seen), f"progress lines: {opened['progress']}"
    assert not driver.find_elements("css selector", ".neutrino-ae-progress")
    assert not any("computing in a worker" in _texts(o) for _, o in _outputs(nb))
    # the verdict is also shown at the top, in the set-up cell's output (the placeholder replaced)
    top = "\n".join(_texts(o) for cid, o in _outputs(nb) if cid == "setup")
    assert "## Verdict: PASS · SYNTHETIC sample data" in top and "appears here" not in top, top[-500:]
    _shutdown_kernels(server)


def dynamic_notebook_without_a_gpu_in_jupyterlab(lab, sample_run):
    server, driver, _, shots = lab
    nb, _ = _run_all(lab, "lab/tree/dynamic.ipynb", "dynamic.ipynb")
    shot = shots / "lab-dynamic.png"
    driver.save_screenshot(str(shot))
    outputs = _outputs(nb)
    errors = [(cid, o.get("ename"), o.get("evalue")) for cid, o in outputs if o["output_type"] == "error"]
    assert errors == [], f"{errors} (screenshot: {shot})"
    last = "\n".join(_texts(o) for cid, o in outputs if cid == "summary")
    assert "Verdict: NOTHING COLLECTED" in last, f"{last[:500]} (screenshot: {shot})"
    top = "\n".join(_texts(o) for cid, o in outputs if cid == "env")
    assert "## Verdict: NOTHING COLLECTED" in top, f"{top[-500:]} (screenshot: {shot})"
    _shutdown_kernels(server)


def a_kernel_without_the_project_shows_one_line_on_ten_fresh_kernels(lab, sample_run):
    """Run All right after a (re)start: the race that let later cells run and print NameError tracebacks.
    Every try is checked; the failure lists what each bad try showed."""
    server, driver, _, shots = lab
    shot = shots / "lab-plain-kernel.png"
    open_notebook(driver, server, "lab/tree/static-plain.ipynb", "static-plain.ipynb")
    bad = []
    for attempt in range(1, 11):
        nb, _ = _run_all(lab, "", "", restart=True)
        outputs = _outputs(nb)
        errors = [(cid, o) for cid, o in outputs if o["output_type"] == "error"]
        lines = [o["traceback"] for cid, o in errors if cid == "kernel-check"]
        others = [(cid, _texts(o)[:120]) for cid, o in outputs if cid not in ("kernel-check", "summary")]
        last = [_texts(o) for cid, o in outputs if cid == "summary"]
        problems = []
        if len(errors) != 1 or len(lines) != 1:
            problems.append(f"error outputs in {[cid for cid, _ in errors]}")
        elif len(lines[0]) != 1 or not lines[0][0].startswith("KernelLacksProject: this kernel"):
            problems.append(f"not one line: {lines[0]}")
        if others:
            problems.append(f"cells after the failed set-up printed {others}")
        if len(last) != 1 or "Set-up stopped" not in last[0] or "KernelLacksProject" not in last[0]:
            problems.append(f"the last cell does not repeat the reason: {last}")
        if problems:
            bad.append(f"fresh kernel {attempt}: {'; '.join(problems)}")
            driver.save_screenshot(str(shot))
    if not bad:
        driver.save_screenshot(str(shot))
    _shutdown_kernels(server)
    assert not bad, f"{len(bad)} of 10 fresh kernels (screenshot: {shot}):\n" + "\n".join(bad)


def static_notebook_in_notebook_7_shows_results_whole(lab, sample_run):
    server, driver, _, shots = lab
    nb, _ = _run_all(lab, "notebooks/static-nb7.ipynb", "static-nb7.ipynb")
    # Notebook 7 leaves the page where it was: the reviewer scrolls to the verdict
    driver.execute_script("[...document.querySelectorAll('.neutrino-ae-verdict')].pop().closest('.jp-OutputArea')"
                          ".scrollIntoView()")
    shot = shots / "notebook7-static.png"
    _static_checks(lab, nb, shot, sample_run)
    # Notebook 7 folds an output taller than ~1,820 px into a 310 px scroll box unless its cell says otherwise
    folded = driver.execute_script("""
        return [...document.querySelectorAll('.jp-CodeCell')].filter(c =>
            c.classList.contains('jp-mod-outputsScrolled') ||
            [...c.querySelectorAll('.jp-OutputArea')].some(o => o.scrollHeight > o.clientHeight + 2)
        ).map(c => c.querySelector('.jp-InputArea-editor').textContent.trim().slice(0, 60));""")
    assert folded == [], f"outputs in a scroll box: {folded} (screenshot: {shot})"
    _shutdown_kernels(server)


def test_run_all_in_jupyterlab_and_notebook_7(lab, sample_run):
    """The four checks in order, on one server and one browser (one test: pytest-xdist never splits it
    between workers, each starting its own); every check runs, the failures are reported together."""
    failures = []
    for check in (static_notebook_in_jupyterlab, dynamic_notebook_without_a_gpu_in_jupyterlab,
                  a_kernel_without_the_project_shows_one_line_on_ten_fresh_kernels,
                  static_notebook_in_notebook_7_shows_results_whole):
        try:
            check(lab, sample_run)
        except (AssertionError, TimeoutError) as exc:  # a wait that timed out is a failure of its check too
            failures.append(f"{check.__name__.replace('_', ' ')}: {type(exc).__name__}: {exc}\n"
                            f"server log:\n{lab[0].log_tail()}")
            _shutdown_kernels(lab[0])
    assert not failures, "\n\n".join(failures)
