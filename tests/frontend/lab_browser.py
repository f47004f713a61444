"""One JupyterLab server (it serves Notebook 7 too) and one headless Chromium driven through WebDriver,
for tests/frontend: what a reviewer does in the browser, done by the test.

The server is ``make lab``'s (the ``lab`` extra in .venv) on a free loopback port with its own token,
config, data and runtime folders, serving a folder of the test's; ``window.jupyterapp`` is exposed
so the test runs the same commands the menus do (``notebook:run-all-cells``). The kernel's state
is read back through the server's REST API, the outputs from the front end's own notebook model."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
REPO = Path(__file__).resolve().parents[2]


def missing_tools() -> str | None:
    """Why the front-end tests cannot run here (one line), or None."""
    import importlib.util

    for module, extra in (("selenium", "test"), ("jupyterlab", "lab"), ("notebook", "lab")):
        if importlib.util.find_spec(module) is None:
            return f"no {module} in this Python (pip install -e '.[{extra}]'; `make test` installs it)"
    if not any(shutil.which(n) for n in CHROMIUM_NAMES) or shutil.which("chromedriver") is None:
        return ("no chromium or chromedriver on PATH (apt-get install chromium chromium-driver; "
                "`make test` installs them as root)")
    return None


def lab_settings() -> list[str]:
    """``make lab``'s settings flags (its LAB_SETTINGS, as ``make -n lab`` prints them): the server runs as
    a reviewer's does."""
    proc = subprocess.run(["make", "-n", "-s", "-C", str(REPO), "lab", "VENV=/nonexistent-venv"],
                          capture_output=True, text=True, check=False)
    line = next((ln for ln in proc.stdout.splitlines() if " -m jupyter lab " in ln), "")  # none: Jupyter's own
    return [arg for arg in shlex.split(line) if arg.startswith(("--LabApp.", "--JupyterNotebookApp."))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """``python -m jupyter lab`` on 127.0.0.1, serving ``root``; :meth:`stop` ends it."""

    def __init__(self, root: Path, home: Path, jupyter_path: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.root, self.token = root, secrets.token_hex(16)
        self.base = ""  # once the server says which port it bound (_answers)
        # as a reviewer's shell: no PYTHONPATH, and none of the variables neutrino-ae run gives its kernel (a
        # test in this process may have left one: kernels would then link outputs to another folder)
        extra_env, env = env, {k: v for k, v in os.environ.items()
                               if k != "PYTHONPATH" and not k.startswith("NEUTRINO_AE_")}
        # Kernels on Unix sockets, as `neutrino-ae run` starts its own (neutrino_ae/run/kernel_sockets.py): on TCP,
        # a port another test's process takes between jupyter_client's pick and the kernel's bind kills the
        # kernel. Their paths are <runtime>/kernel-<uuid>-ipc-<n>: a short runtime folder keeps them in sun_path.
        self.runtime = Path(tempfile.mkdtemp(prefix="nae-lab-"))
        env.update(JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
                   JUPYTER_RUNTIME_DIR=str(self.runtime), IPYTHONDIR=str(home / "ipython"))
        env.pop("MPLBACKEND", None)  # as a reviewer's kernel starts: no backend forced
        if jupyter_path is not None:
            env["JUPYTER_PATH"] = str(jupyter_path)
        env.update(extra_env or {})
        home.mkdir(parents=True, exist_ok=True)
        self.log = home / "server.log"
        argv = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={free_port()}", "--ServerApp.port_retries=50",
                f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
                "--JupyterNotebookApp.expose_app_in_browser=True", "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--KernelManager.transport=ipc",
                *lab_settings()]
        if os.geteuid() == 0:
            argv.append("--allow-root")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
        deadline = time.monotonic() + 90
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"jupyter lab did not start: {self.log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.3)

    def _answers(self) -> bool:
        # The port it bound, from its server file: a free port picked here can be taken by another process
        # before the server binds it; the server then tries the next ones.
        info = self.runtime / f"jpserver-{self.proc.pid}.json"
        try:
            self.base = f"http://127.0.0.1:{json.loads(info.read_text())['port']}"
        except (OSError, ValueError, KeyError):
            return False
        try:
            self.api("status")
        except OSError:
            return False
        return True

    def api(self, path: str, method: str = "GET") -> Any:
        req = urllib.request.Request(f"{self.base}/api/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def url(self, page: str) -> str:
        return f"{self.base}/{page}?token={self.token}"

    def wait_idle(self, kernel_id: str, timeout: float = 300) -> None:
        """Until the kernel reports idle twice, half a second apart (between two cells it is idle a moment)."""
        deadline, idle = time.monotonic() + timeout, 0
        while idle < 2:
            if time.monotonic() > deadline:
                raise TimeoutError(f"kernel {kernel_id} still busy after {timeout} s")
            try:
                state = self.api(f"kernels/{kernel_id}")["execution_state"]
            except urllib.error.HTTPError:  # restarting
                state = "restarting"
            idle = idle + 1 if state == "idle" else 0
            time.sleep(0.5)

    def log_tail(self, lines: int = 40) -> str:
        """The server's last log lines (kernel starts, restarts and deaths), for a failure message."""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.runtime, ignore_errors=True)


def chromium_driver(profile: Path, width: int = 1400, height: int = 1000) -> Any:
    """Headless Chromium through Debian's chromedriver, with a fresh profile and no background traffic."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = next(shutil.which(n) for n in CHROMIUM_NAMES if shutil.which(n))
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(arg)
    os.environ.setdefault("SE_AVOID_STATS", "true")
    driver = webdriver.Chrome(options=options, service=Service(executable_path=shutil.which("chromedriver")))
    driver.set_script_timeout(600)
    return driver


# The front end's notebook, through window.jupyterapp (JupyterLab and Notebook 7 expose the same app).
_PANEL = """
const app = window.jupyterapp;
const panel = app && app.shell.currentWidget;
if (!panel || !panel.sessionContext) { return null; }
"""

OPENED = _PANEL + """
const sc = panel.sessionContext;
return {kernel: sc.session && sc.session.kernel ? sc.session.kernel.id : null,
        status: sc.session && sc.session.kernel ? sc.session.kernel.status : null,
        ready: panel.context.isReady, dirty: panel.context.model.dirty,
        kernelName: sc.session && sc.session.kernel ? sc.session.kernel.name : null};
"""

RUN_ALL = """
const done = arguments[arguments.length - 1];
const app = window.jupyterapp, panel = app.shell.currentWidget;
app.commands.execute('notebook:run-all-cells').then(ok => done({ok: ok}), e => done({error: String(e)}));
"""

RESTART_RUN_ALL = """
const done = arguments[arguments.length - 1];
const app = window.jupyterapp, panel = app.shell.currentWidget;
panel.sessionContext.session.kernel.restart().then(
  () => app.commands.execute('notebook:run-all-cells')).then(ok => done({ok: ok}), e => done({error: String(e)}));
"""

MODEL = """
const panel = window.jupyterapp.shell.currentWidget;
return JSON.stringify(panel.context.model.toJSON());
"""


def wait_for(driver: Any, script: str, timeout: float = 120, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script)
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what or script[:80]} not true after {timeout} s")
        time.sleep(0.2)


def open_notebook(driver: Any, server: LabServer, page: str, path: str) -> dict[str, Any]:
    """Open ``page`` (``lab/tree/x.ipynb`` or ``notebooks/x.ipynb``) and wait until the notebook ``path`` is
    the current widget, with its kernel connected."""
    driver.get(server.url(page))
    ready = OPENED.replace("return {", f"if (panel.context.path !== {json.dumps(path)} || !panel.context.isReady "
                                       "|| !sc.session || !sc.session.kernel) { return null; }\nreturn {", 1)
    return wait_for(driver, ready, what=f"{page} opened with a kernel")


def notebook_json(driver: Any) -> dict[str, Any]:
    return json.loads(driver.execute_script(MODEL))
