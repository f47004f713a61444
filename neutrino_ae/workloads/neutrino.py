"""Run the ``neutrino`` CLI and lay its traces out like a trace bundle.

The real CLI writes one trace folder per profiled process under ``./trace`` (of its working
directory) and names it on stderr (``[info] trace in <path>``). :func:`run_neutrino` runs one
command, keeps its stdout/stderr as files, finds every such line and MOVES each folder into the
run's output tree, so a collected tree has the same layout as the paper bundle and the per-figure
analyses read both alike (see docs/DESIGN.md, "Sample bundle layout"). :func:`staged` lets a
section collector build into a staging folder that replaces the old one only when it finished.
:class:`CollectContext` is what every section's ``collect`` entry gets; :func:`script_collector` makes
one from a section's own collection script.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.escape import terminal
from neutrino_ae.formats.tracedir import (
    TRACE_LINE_MARK,
    check_collected,
    trace_dir_order_key,
    trace_dirs_from_stderr,
    workload_dirs,
)
from neutrino_ae.proctree import end_tree

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TIMEOUT_S = 3600.0
#: Seconds a timed-out command and its processes get to end on SIGTERM before SIGKILL.
END_GRACE_S = 2.0


class CollectError(NeutrinoAEError):
    """A collection command failed; the message is one line ending with the stderr tail."""


@dataclass
class CollectContext:
    """What every section collector gets (``SECTION.collect(trace_root, ctx)``)."""

    neutrino: str = "neutrino"
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    repeats: int = 1
    log: Callable[[str], None] = print
    #: extra command-line arguments per script-collected section, e.g. {"max_mem": ["--models", "llama1b-bs32"]}
    extra_args: dict[str, list[str]] = field(default_factory=dict)
    #: which workloads run: "paper" (the artifact's PyTorch/Triton scripts) or "ptx" (the same kernels as
    #: PTX through the driver API, which Neutrino can probe on today's stacks; workloads/family.py)
    workloads: str = "paper"
    #: the GPU is the emulated driver (tools/real_neutrino/emucuda.c): what is collected is its model
    emulated: bool = False


@dataclass
class CollectResult:
    argv: list[str]
    returncode: int
    stdout_path: Path
    stderr_path: Path
    trace_dirs: list[Path] = field(default_factory=list)  # in the order the CLI announced them
    seconds: float = 0.0

    @property
    def trace_dir(self) -> Path:
        """The newest trace folder of the run (formats.tracedir's rule: the time in its name)."""
        return max(self.trace_dirs, key=trace_dir_order_key)


def tail(text: str, n: int = 3) -> str:
    """The last ``n`` non-empty lines of ``text`` on one line (for one-line errors)."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"


def _unique(path: Path) -> Path:
    if not path.exists():
        return path
    i = 2
    while path.with_name(f"{path.name}-{i}").exists():
        i += 1
    return path.with_name(f"{path.name}-{i}")


def run_command(argv: Sequence[str], workdir: str | os.PathLike[str], out_dir: str | os.PathLike[str],
                log_name: str = "command", env: Mapping[str, str] | None = None,
                timeout: float | None = None) -> tuple[int, Path, Path, float]:
    """Run ``argv`` in ``workdir`` with stdout/stderr going to ``out_dir/<log_name>.{stdout,stderr}.log``.

    Returns (exit code, stdout path, stderr path, seconds). A missing executable or a timeout
    raises :class:`CollectError`. The command runs in a session of its own; a timeout, or the caller
    stopped (Ctrl-C in Jupyter, a signal), ends it with every process it started, wherever they went
    (:func:`neutrino_ae.proctree.end_tree`): a hung workload never outlives its collection.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    so, se = out / f"{log_name}.stdout.log", out / f"{log_name}.stderr.log"
    full_env = {**os.environ, **(env or {})}
    t0 = time.monotonic()
    with open(so, "wb") as fo, open(se, "wb") as fe:
        try:
            proc = subprocess.Popen(list(argv), cwd=workdir, stdout=fo, stderr=fe, env=full_env,
                                    start_new_session=True)
        except FileNotFoundError:
            raise CollectError(f"{argv[0]}: not found (is it installed and on PATH?)") from None
        except PermissionError:
            raise CollectError(f"{argv[0]}: not executable") from None
        try:
            returncode = proc.wait(timeout=timeout or DEFAULT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            end_tree(proc, grace=END_GRACE_S)
            raise CollectError(f"{' '.join(argv[:6])} ...: timed out after {timeout or DEFAULT_TIMEOUT_S:g}s; "
                               f"logs in {out}") from None
        except BaseException:
            end_tree(proc, grace=END_GRACE_S)
            raise
    return returncode, so, se, time.monotonic() - t0


def _warn(text: str) -> None:
    print(terminal(f"warning: {text}"), file=sys.stderr, flush=True)


def announced_inside(announced: Sequence[str], workdir: Path, cmd: str) -> list[Path]:
    """The announced trace folders that are inside ``workdir`` (the collection's own working folder), each by
    its real path, in order and once. The workload shares the CLI's stderr, so a "trace in <folder>" line may
    name any folder: one outside ``workdir`` (by an absolute path, ``..`` or a symbolic link leading out) is
    ignored with a warning, never moved or deleted."""
    base = Path(os.path.realpath(workdir))
    found: list[Path] = []
    for name in announced:
        src = Path(name) if Path(name).is_absolute() else workdir / name
        real = Path(os.path.realpath(src))
        if real == base or not real.is_relative_to(base):
            _warn(f"`{cmd}` announced trace folder {src}, outside its working folder {workdir}; ignored")
            continue
        if not real.is_dir():
            raise CollectError(f"`{cmd}` announced trace folder {src}, which does not exist")
        if real not in found:
            found.append(real)
    return found


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def _replace_dir(new: Path, target: Path) -> None:
    """Put the folder ``new`` at ``target``; the one there before is removed only once ``new`` is in place (a
    kill in between leaves it as ``.<name>.old-<pid>``, which :func:`_recover` puts back)."""
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    _remove(old)
    if os.path.lexists(target):
        os.replace(target, old)
    os.replace(new, target)
    _remove(old)


def _recover(final: Path) -> None:
    """A collection killed between moving the previous folder aside and putting the new one in place left
    ``final`` missing and ``.<name>.old-<pid>`` beside it: put that back."""
    olds = sorted(final.parent.glob(f".{glob.escape(final.name)}.old-*"), key=lambda p: p.lstat().st_mtime_ns)
    if olds and not os.path.lexists(final):
        os.replace(olds.pop(), final)
    for old in olds:
        _remove(old)


def run_neutrino(args: Sequence[str], workdir: str | os.PathLike[str] | None, out_dir: str | os.PathLike[str],
                 neutrino: str = "neutrino", env: Mapping[str, str] | None = None, timeout: float | None = None,
                 dest_name: str | None = None, log_name: str = "neutrino", replace: bool = False) -> CollectResult:
    """Run ``neutrino <args>`` in ``workdir``; move the trace folder(s) it announced into ``out_dir``.

    Each folder keeps its name under ``out_dir`` unless ``dest_name`` is given and the run made
    exactly one folder (Table 2's layout calls it ``trace``); ``replace``: a folder already there under
    that name is replaced (only once the new one passed its check), else the new one gets a free name.
    Only folders inside ``workdir`` are taken (:func:`announced_inside`), and only once every trace in
    them opens whole (:func:`~neutrino_ae.formats.tracedir.check_collected`: the real CLI exits 0 with a
    truncated trace). Raises :class:`CollectError` with the stderr tail when the CLI exits non-zero,
    announces no trace folder inside ``workdir``, names one that does not exist, or one that fails the
    check; then nothing in ``out_dir`` is replaced.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if workdir is None:
        # A private working directory: the CLI's ./trace never collides with folders in out_dir.
        scratch = Path(tempfile.mkdtemp(prefix=".neutrino-work-", dir=out))
        try:
            return run_neutrino(args, scratch, out, neutrino, env, timeout, dest_name, log_name, replace)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    workdir = Path(workdir)
    argv = [neutrino, *args]
    rc, so, se, secs = run_command(argv, workdir, out, log_name, env, timeout)
    err_text = se.read_text(encoding="utf-8", errors="replace")
    cmd = " ".join(argv)
    if rc != 0:
        raise CollectError(f"`{cmd}` exited {rc}: {tail(err_text)} (full log: {se})")
    announced = trace_dirs_from_stderr(err_text)
    if not announced:
        raise CollectError(f"`{cmd}` printed no '{TRACE_LINE_MARK} <dir>' line on stderr: {tail(err_text)} "
                           f"(full log: {se})")
    found = announced_inside(announced, workdir, cmd)
    if not found:
        raise CollectError(f"`{cmd}` announced no trace folder inside its working folder {workdir}: "
                           f"{tail(err_text)} (full log: {se})")
    # The probe engine's nvidia-smi calls run hooked too; their folders hold nothing of the workload.
    kept = workload_dirs(found)
    for src in found:
        if src not in kept:
            shutil.rmtree(src, ignore_errors=True)
    found = kept
    for src in found:
        try:
            check_collected(src)
        except NeutrinoAEError as exc:
            raise CollectError(f"`{cmd}`: {exc}; not collected, the previous collection is kept") from None
    moved = []
    for src in found:
        target = out / (dest_name if dest_name and len(found) == 1 else src.name)
        if replace and dest_name and len(found) == 1:
            _recover(target)
            _replace_dir(src, target)
        else:
            target = _unique(target)
            shutil.move(str(src), str(target))
        moved.append(target)
    with contextlib.suppress(OSError):
        (workdir / "trace").rmdir()  # the CLI's default parent, now empty
    return CollectResult(argv, rc, so, se, moved, secs)


def collect_into(dest: str | os.PathLike[str], args: Sequence[str], label: str, neutrino: str = "neutrino",
                 timeout: float | None = None, dest_name: str | None = None) -> CollectResult | None:
    """One run of a collector's loop: ``neutrino <args>`` into ``dest``, the workload's stdout kept as
    ``dest/stdout.log``. The run is made in a hidden staging folder beside ``dest`` that replaces it only when
    the run succeeded and its traces passed their check. A failed run is said in one line (``failed <label>:
    <why>``; the previous collection in ``dest``, if any, is kept) and gives None, so the loop goes on with
    the next run; its staging folder stays with the logs the line names until the next collection of
    ``dest``."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    _recover(dest)
    for old_stage in dest.parent.glob(f".{glob.escape(dest.name)}.collecting-*"):
        shutil.rmtree(old_stage, ignore_errors=True)
    stage = dest.with_name(f".{dest.name}.collecting-{os.getpid()}")
    try:
        res = run_neutrino(args, None, stage, neutrino, timeout=timeout, dest_name=dest_name)
    except CollectError as exc:
        kept = "; the previous collection is kept" if dest.exists() and "previous collection" not in str(exc) else ""
        print(terminal(f"failed {label}: {exc}{kept}"))
        return None
    res.stdout_path.replace(stage / "stdout.log")
    _replace_dir(stage, dest)
    rel = lambda p: dest / p.relative_to(stage)  # noqa: E731 - the result's paths, now under dest
    return CollectResult(res.argv, res.returncode, dest / "stdout.log", rel(res.stderr_path),
                         [rel(p) for p in res.trace_dirs], res.seconds)


class CollectRuns:
    """A collection script's runs (:func:`collect_into` each), counted: each collected run is said in one
    line (``<label>: <said(result)>``), a failed one by :func:`collect_into`; :meth:`close` says how many of
    each and gives the script's exit code (1 when none was collected)."""

    def __init__(self, section: str, neutrino: str = "neutrino", timeout: float | None = None) -> None:
        self.section, self.neutrino, self.timeout = section, neutrino, timeout
        self.ok = self.failed = 0

    def run(self, dest: str | os.PathLike[str], args: Sequence[str], label: str, dest_name: str | None = None,
            said: Callable[[CollectResult], str] = lambda res: f"{res.seconds:.1f}s") -> CollectResult | None:
        res = collect_into(dest, args, label, self.neutrino, self.timeout, dest_name)
        if res is None:
            self.failed += 1
        else:
            self.ok += 1
            print(terminal(f"{label}: {said(res)}"))
        return res

    def close(self) -> int:
        print(f"{self.section}: {self.ok} run(s) collected, {self.failed} failed")
        return 0 if self.ok else 1

@contextlib.contextmanager
def staged(final: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty staging folder that replaces ``final`` only if the block succeeds and every trace in
    it opens whole (:func:`~neutrino_ae.formats.tracedir.check_collected`); otherwise :class:`CollectError`
    says in one line that the previous collection is kept. A failed block leaves the staging folder
    (hidden, so no analysis reads it) with the logs its error names; the next collection of ``final``
    removes it."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    _recover(final)
    for old_stage in final.parent.glob(f".{glob.escape(final.name)}.collecting-*"):
        shutil.rmtree(old_stage, ignore_errors=True)
    stage = final.with_name(f".{final.name}.collecting-{os.getpid()}")
    stage.mkdir()
    yield stage  # an exception in the block propagates from here: nothing below runs
    try:
        check_collected(stage)
    except NeutrinoAEError as exc:
        kept = "the previous collection is kept" if final.exists() else "nothing was replaced"
        raise CollectError(f"{final}: the new collection is not whole ({exc}); {kept} (the new one: {stage})") from None
    _replace_dir(stage, final)


def gpu_visible(timeout: float = 20.0) -> str | None:
    """Reason why no NVIDIA GPU is usable, or None when ``nvidia-smi`` lists one."""
    from neutrino_ae.workloads.envcheck import query_gpus

    gpus, problem = query_gpus(timeout)
    return None if gpus else problem


def collection_blocker(neutrino: str = "neutrino") -> str | None:
    """Why collection cannot run here, or None. The missing GPU is named first: it is the reason
    that no install step fixes."""
    problem = gpu_visible()
    if problem:
        return f"no NVIDIA GPU ({problem})"
    if shutil.which(neutrino) is None:
        return f"the Neutrino CLI {neutrino!r} is not on PATH (python prepare_env.py --install)"
    return None


def script_collector(section: str, script: str | os.PathLike[str]) -> Callable[[Path, CollectContext], None]:
    """A collector that runs ``python <script> --out <trace_root>/<section> --neutrino N --repeats R
    --family W``
    (the section's own collection CLI, in the checkout's root) into a staging folder."""
    from neutrino_ae.report.section.registry import REPO_ROOT

    def collect(root: Path, ctx: CollectContext) -> None:
        with staged(root / section) as out:
            argv = [ctx.python, str(script), "--out", str(out.resolve()), "--neutrino", ctx.neutrino,
                    "--repeats", str(ctx.repeats), "--family", ctx.workloads, *ctx.extra_args.get(section, [])]
            rc, so, se, secs = run_command(argv, REPO_ROOT, out, f"collect_{section}", ctx.env, ctx.timeout)
            if rc != 0:
                # The collection scripts report their failed cells on stdout; stderr is often empty.
                log = se if se.read_text(errors="replace").strip() else so
                raise CollectError(f"{script} exited {rc}: {tail(log.read_text(errors='replace'))} (log: {log})")
            ctx.log(f"  {Path(script).name}: done in {secs:.1f}s ({so})")
    collect.__doc__ = f"Run {script} into <trace_root>/{section}."
    return collect
