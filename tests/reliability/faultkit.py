"""What the fault-injection tests share: the real ``neutrino-ae`` command line started as a terminal
would start it (its own process group, SIGINT at its default), a watcher of every process it starts
and of its output folder's lock, and snapshots of the output folder."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LOCK = ".neutrino-ae.lock"
TOP_LEVEL = ("summary.json", "summary.md", "verdict.json", "static.executed.ipynb")

# A section that works until it is stopped, appending a line to heartbeat.txt every 20 ms from the
# process that runs it: after the command has exited, a growing heartbeat is a process left behind.
SLOW_INIT = '''
"""A section that keeps computing (and writing) until it is stopped: the fault-injection target."""
from neutrino_ae.report.section import Section

SECTION = Section(name="slow", title="Slow toy", paper_ref="none", order=90, runtime="until stopped",
                  inputs=(), analyze="analysis:analyze")
'''
SLOW_ANALYSIS = '''
import os
import time
from pathlib import Path

from neutrino_ae.report.results import SectionResult


def analyze(bundle, out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    n, deadline = 0, time.monotonic() + 120
    while time.monotonic() < deadline:
        n += 1
        with open(out / "heartbeat.txt", "a") as fh:
            fh.write(f"{os.getpid()} {n}\\n")
        time.sleep(0.02)
    return SectionResult("slow", {"beats": n}, {}, {}, [], f"beats={n}")
'''


# Written first (order 1: before the paper's sections, which the generator writes in order), so a signal lands
# mid-generation without the whole sample being written before it.
SLOW_SAMPLE_INIT = '''
from neutrino_ae.report.section import Section

SECTION = Section(name="slow_sample", title="Slow sample toy", paper_ref="none", order=1, runtime="until stopped",
                  inputs=(), analyze="writer:analyze", sample="writer:build")
'''
SLOW_SAMPLE_WRITER = '''
import time


def analyze(bundle, out):
    raise NotImplementedError


def build(root, ctx):
    """Writes a heartbeat under the staging folder until stopped: a signal always lands mid-generation."""
    folder = root / "slow_sample"
    folder.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with open(folder / "heartbeat.txt", "a") as fh:
            fh.write("beat\\n")
        time.sleep(0.02)
    return {}
'''


def toy_section(root: Path, name: str, files: dict[str, str]) -> Path:
    """A section folder ``root/name`` (for ``$NEUTRINO_AE_SECTIONS``) holding ``files``; ``root``."""
    folder = root / name
    folder.mkdir(parents=True)
    for file, text in files.items():
        (folder / file).write_text(textwrap.dedent(text))
    return root


def make_slow_sample_section(root: Path) -> Path:
    """A section whose sample writer never finishes, so a test can signal a generation that is surely running."""
    return toy_section(root, "slow_sample", {"__init__.py": SLOW_SAMPLE_INIT, "writer.py": SLOW_SAMPLE_WRITER})


def make_slow_section(root: Path) -> Path:
    return toy_section(root, "slow", {"__init__.py": SLOW_INIT, "analysis.py": SLOW_ANALYSIS})


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEUTRINO_AE_OUTPUT_LOCK", "PYTEST_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["MPLBACKEND"] = "Agg"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def run_cli(args: list, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m neutrino_ae *args`` in ``cwd`` with :func:`cli_env`, its output captured as text."""
    return subprocess.run([sys.executable, "-m", "neutrino_ae", *args], cwd=cwd, env=cli_env(**env), text=True,
                          errors="backslashreplace", capture_output=True, stdin=subprocess.DEVNULL, timeout=300,
                          check=False)


def one_error_line(proc: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The one ``error: ...`` line of a refusal (exit ``code``, 2 for bad input), asserted to be all that stderr
    holds."""
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == code, proc.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-3000:]
    return lines[0]


# --------------------------------------------------------------------------------------------- processes


def _stat(pid: int) -> tuple[int, str, int] | None:
    """(parent pid, state, start time) of ``pid`` from /proc, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2:].split()
    return int(fields[1]), fields[0].decode(), int(fields[19])


def descendants(pid: int) -> set[tuple[int, int]]:
    """(pid, start time) of every live descendant of ``pid``, from /proc."""
    return ProcessTree().descendants(pid)


class ProcessTree:
    """Who descends from whom, looked up again at each call from /proc, reading only what is new: the
    parent and start time of a process never change while it lives (an orphan's new parent, init, takes
    it out of the tree either way: its parent is gone), so a process is read once, when it first appears
    (a zombie then is left out, as it is later), and forgotten once it has gone. A watcher that looks every
    few milliseconds reads the few new processes, not every process of the machine each time."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[int, str, int] | None] = {}  # pid -> (parent, state, start); None: unreadable

    def descendants(self, pid: int) -> set[tuple[int, int]]:
        """(pid, start time) of every live descendant of ``pid`` now."""
        now = {int(e) for e in os.listdir("/proc") if e.isdigit()}
        for gone in self._known.keys() - now:
            del self._known[gone]
        for new in now - self._known.keys():
            self._known[new] = _stat(new)
        children: dict[int, list[tuple[int, int]]] = {}
        for child, st in self._known.items():
            if st is not None and st[1] != "Z":
                children.setdefault(st[0], []).append((child, st[2]))
        out, todo = set(), [pid]
        while todo:
            for child in children.get(todo.pop(), ()):
                out.add(child)
                todo.append(child[0])
        return out


def alive(procs: set[tuple[int, int]]) -> list[int]:
    """Those of ``procs`` not yet ended: the same process (pid and start time) still there, other
    than as a zombie whose threads have all ended (a killed multi-threaded process shows its leader
    as a zombie while its other threads are still tearing down)."""
    return [pid for pid, start in procs
            if (st := _stat(pid)) and st[2] == start and (st[1] != "Z" or _threads(pid) > 1)]


def _threads(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def lock_is_free(out: Path) -> bool:
    """True when nobody holds the output folder's lock."""
    return file_lock_is_free(out / LOCK)


def file_lock_is_free(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return True
    finally:
        os.close(fd)


class Cli:
    """``python -m neutrino_ae <args>`` in its own process group (the terminal's foreground job),
    SIGINT at its default disposition, optional resource limits; a thread records every process
    it starts and, once it is signalled, the first moment its output folder's lock is free."""

    def __init__(self, args: list[str], workdir: Path, out: Path | None = None, env: dict[str, str] | None = None,
                 limits: dict[int, int] | None = None) -> None:
        self.out = out
        self.stdout_path, self.stderr_path = workdir / "cli.out", workdir / "cli.err"
        self.seen: set[tuple[int, int]] = set()
        self.signalled_at: int | None = None  # stderr size when the first signal was sent
        self.alive_when_lock_freed: list[int] | None = None

        def preexec() -> None:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            for which, value in (limits or {}).items():
                resource.setrlimit(which, (value, value))

        with open(self.stdout_path, "wb") as so, open(self.stderr_path, "wb") as se:
            self.proc = subprocess.Popen([sys.executable, "-m", "neutrino_ae", *args], cwd=workdir,
                                         env=env or cli_env(), stdout=so, stderr=se, stdin=subprocess.DEVNULL,
                                         start_new_session=True, preexec_fn=preexec)
        self._done = threading.Event()
        self._tree = ProcessTree()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        while not self._done.is_set():
            self.seen |= self._tree.descendants(self.proc.pid)
            self._look_at_lock()
            if self.proc.poll() is not None:
                break
            time.sleep(0.01)
        # The lock may have been freed and the command ended between two looks (a loaded machine), or wait()
        # may have stopped the loop first: what still runs now is the nearest observation to that moment.
        self._look_at_lock()

    def _look_at_lock(self) -> None:
        if self.signalled_at is not None and self.alive_when_lock_freed is None and self.out is not None:
            if lock_is_free(self.out):
                self.alive_when_lock_freed = alive(self.seen)

    def wait_for(self, what: Callable[[], bool], timeout: float = 60.0, label: str = "") -> None:
        end = time.monotonic() + timeout
        while not what():
            if self.proc.poll() is not None:
                raise AssertionError(f"exited ({self.proc.returncode}) before {label}: {self.stderr()[-2000:]}")
            if time.monotonic() > end:
                raise AssertionError(f"timed out waiting for {label}")
            time.sleep(0.02)

    def signal(self, sig: int, group: bool = False) -> None:
        if self.signalled_at is None:
            self.signalled_at = self.stderr_path.stat().st_size
        if group:
            os.killpg(self.proc.pid, sig)  # what a terminal does on Ctrl-C
        else:
            self.proc.send_signal(sig)

    def wait(self, timeout: float = 60.0) -> int:
        try:
            rc = self.proc.wait(timeout)
        finally:
            self._done.set()
            self._watcher.join(5)
        return rc

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stderr_after_signal(self) -> str:
        return self.stderr_path.read_bytes()[self.signalled_at or 0:].decode(errors="replace")

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def kill_leftovers(self) -> None:
        """Test hygiene: whatever it left running (on a failing run) is killed, by pid."""
        for pid in alive(self.seen):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


# --------------------------------------------------------------------------------------------- files


def tree_state(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: relative path -> (size, mtime ns)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        with contextlib.suppress(FileNotFoundError):
            if p.is_file():
                st = p.stat()
                out[p.relative_to(folder).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def digests(folder: Path, names: tuple[str, ...] = TOP_LEVEL) -> dict[str, str | None]:
    return {n: hashlib.sha256((folder / n).read_bytes()).hexdigest() if (folder / n).is_file() else None
            for n in names}


def section_digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def copy_run(src: Path, dst: Path) -> Path:
    """A copy of a finished run's output folder (times kept, so its section caches stay valid)."""
    shutil.copytree(src, dst, symlinks=True)
    (dst / LOCK).unlink(missing_ok=True)
    return dst


def leftovers(folder: Path) -> list[str]:
    """Files a stopped run must not leave: running notebooks, temp files of atomic writes."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if ".running" in p.name or ".tmp-" in p.name or p.name.endswith(".generating"))
