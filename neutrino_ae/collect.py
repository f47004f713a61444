"""Run the ``neutrino`` CLI for dynamic.ipynb and lay its traces out like a trace bundle.

The real CLI writes one trace folder per profiled process under ``./trace`` (of its working
directory) and names it on stderr (``[info] trace in <path>``). :func:`run_neutrino` runs one
command, keeps its stdout/stderr as files, finds every such line and MOVES each folder into the
run's output tree, so a collected tree has the same layout as the paper bundle and the per-figure
analyses read both alike (see docs/DESIGN.md, "Sample bundle layout").

Section collectors (:data:`COLLECTORS`) fill ``<trace_root>/<section>/``. Each builds into a
staging folder and swaps it in only when it finished, so a failed or interrupted collection never
replaces traces from an earlier good run.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from neutrino_ae.atomic import write_json
from neutrino_ae.errors import NeutrinoAEError

REPO_ROOT = Path(__file__).resolve().parent.parent
TRACE_LINE_MARK = "trace in"
DEFAULT_TIMEOUT_S = 3600.0


class CollectError(NeutrinoAEError):
    """A collection command failed; the message is one line ending with the stderr tail."""


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
        """The newest trace folder of the run (by modification time, not listing order)."""
        return max(self.trace_dirs, key=lambda p: p.stat().st_mtime_ns)


def trace_dirs_from_stderr(text: str) -> list[str]:
    """Paths announced by the CLI: the last word of every line containing ``trace in``."""
    found = []
    for line in text.splitlines():
        if TRACE_LINE_MARK in line and line.split():
            found.append(line.split()[-1])
    return found


def _tail(text: str, n: int = 3) -> str:
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
    raises :class:`CollectError`.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    so, se = out / f"{log_name}.stdout.log", out / f"{log_name}.stderr.log"
    full_env = {**os.environ, **(env or {})}
    t0 = time.monotonic()
    with open(so, "wb") as fo, open(se, "wb") as fe:
        try:
            proc = subprocess.run(list(argv), cwd=workdir, stdout=fo, stderr=fe, env=full_env,
                                  timeout=timeout or DEFAULT_TIMEOUT_S, check=False)
        except FileNotFoundError:
            raise CollectError(f"{argv[0]}: not found (is it installed and on PATH?)") from None
        except PermissionError:
            raise CollectError(f"{argv[0]}: not executable") from None
        except subprocess.TimeoutExpired:
            raise CollectError(f"{' '.join(argv[:6])} ...: timed out after {timeout or DEFAULT_TIMEOUT_S:g}s; "
                               f"logs in {out}") from None
    return proc.returncode, so, se, time.monotonic() - t0


def run_neutrino(args: Sequence[str], workdir: str | os.PathLike[str] | None, out_dir: str | os.PathLike[str],
                 neutrino: str = "neutrino", env: Mapping[str, str] | None = None, timeout: float | None = None,
                 dest_name: str | None = None, log_name: str = "neutrino") -> CollectResult:
    """Run ``neutrino <args>`` in ``workdir``; move the trace folder(s) it announced into ``out_dir``.

    Each folder keeps its name under ``out_dir`` unless ``dest_name`` is given and the run made
    exactly one folder (Table 2's layout calls it ``trace``). Raises :class:`CollectError` with
    the stderr tail when the CLI exits non-zero, announces no trace folder, or names one that
    does not exist.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if workdir is None:
        # A private working directory: the CLI's ./trace never collides with folders in out_dir.
        scratch = Path(tempfile.mkdtemp(prefix=".neutrino-work-", dir=out))
        try:
            return run_neutrino(args, scratch, out, neutrino, env, timeout, dest_name, log_name)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    argv = [neutrino, *args]
    rc, so, se, secs = run_command(argv, workdir, out, log_name, env, timeout)
    err_text = se.read_text(encoding="utf-8", errors="replace")
    cmd = " ".join(argv)
    if rc != 0:
        raise CollectError(f"`{cmd}` exited {rc}: {_tail(err_text)} (full log: {se})")
    announced = trace_dirs_from_stderr(err_text)
    if not announced:
        raise CollectError(f"`{cmd}` printed no '{TRACE_LINE_MARK} <dir>' line on stderr: {_tail(err_text)} "
                           f"(full log: {se})")
    moved = []
    for name in announced:
        src = Path(name)
        if not src.is_absolute():
            src = Path(workdir) / src
        if not src.is_dir():
            raise CollectError(f"`{cmd}` announced trace folder {src}, which does not exist")
        target = out / (dest_name if dest_name and len(announced) == 1 else src.name)
        target = _unique(target)
        shutil.move(str(src), str(target))
        moved.append(target)
    with contextlib.suppress(OSError):
        (Path(workdir) / "trace").rmdir()  # the CLI's default parent, now empty
    return CollectResult(argv, rc, so, se, moved, secs)


@contextlib.contextmanager
def staged(final: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty staging folder that replaces ``final`` only if the block succeeds."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    stage = final.with_name(f".{final.name}.collecting-{os.getpid()}")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    try:
        yield stage
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    old = final.with_name(f".{final.name}.old-{os.getpid()}")
    if final.exists():
        final.rename(old)
    stage.rename(final)
    shutil.rmtree(old, ignore_errors=True)


def results_by_time(trace_dir: str | os.PathLike[str]) -> list[Path]:
    """``result/*.bin`` in launch order: the file name is seconds since the process started."""
    def key(p: Path) -> tuple[float, int]:
        try:
            return float(p.stem), p.stat().st_mtime_ns
        except ValueError:
            return float("inf"), p.stat().st_mtime_ns
    return sorted((Path(trace_dir) / "result").glob("*.bin"), key=key)


def newest_trace_dir(root: str | os.PathLike[str]) -> Path | None:
    """The most recently modified folder under ``root`` that looks like a trace dir (has event.log)."""
    cands = [p.parent for p in Path(root).rglob("event.log")] if Path(root).is_dir() else []
    return max(cands, key=lambda p: (p / "event.log").stat().st_mtime_ns, default=None)


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


def write_dynamic_manifest(root: str | os.PathLike[str], **fields: object) -> Path:
    """Mark ``root`` as a dynamically collected tree (``bundle_kind`` = ``dynamic``).

    No file digests: traces are hundreds of MB and were produced here, not downloaded.
    """
    from neutrino_ae.bundle.manifest import DYNAMIC, FORMAT_VERSION, MANIFEST

    path = Path(root) / MANIFEST
    doc: dict[str, object] = {}
    if path.is_file():
        import json

        with contextlib.suppress(ValueError, OSError):
            doc = json.loads(path.read_text(encoding="utf-8"))
    doc.update({"kind": DYNAMIC, "format_version": FORMAT_VERSION, "files": {}})
    sections = dict(doc.get("sections", {}))  # type: ignore[arg-type]
    sections.update(fields.pop("sections", {}))  # type: ignore[arg-type]
    doc.update(fields)
    doc["sections"] = sections
    return write_json(path, doc)


# --------------------------------------------------------------------------------------------- sections


@dataclass
class Context:
    """What every section collector gets."""

    neutrino: str = "neutrino"
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    repeats: int = 1
    log: Callable[[str], None] = print
    #: extra command-line arguments per script-collected section, e.g. {"max_mem": ["--models", "llama1b-bs32"]}
    extra_args: dict[str, list[str]] = field(default_factory=dict)


def _script(rel: str) -> str:
    return str(REPO_ROOT / rel)


def _nsys_time(ctx: Context, name: str, script: Sequence[str], out: Path) -> None:
    if shutil.which("nsys") is None:
        return
    rc, so, _, _ = run_command(["nsys", "profile", "--stats=true", "--force-overwrite", "true",
                                "-o", str(out / f"nsys_{name}"), ctx.python, *script],
                               REPO_ROOT, out, f"nsys_{name}", ctx.env, ctx.timeout)
    ctx.log(f"  nsys {name}: exit {rc}, report {so}")


def collect_block_sched(root: Path, ctx: Context) -> None:
    """Sec. 4.5: raw zero-fill traced with block_sched; the persistent variant too; nsys timings if present."""
    with staged(root / "block_sched") as out:
        res = run_neutrino(["-p", "block_sched", ctx.python, _script("block_sched/raw.py")],
                           None, out, ctx.neutrino, ctx.env, ctx.timeout, log_name="raw")
        ctx.log(f"  raw: {', '.join(p.name for p in res.trace_dirs)} ({res.seconds:.1f}s)")
        # The memset variant launches no kernel of ours (the driver fills memory), so only the
        # persistent kernel has a block_sched trace; memset is timed with nsys below.
        var = out / "variants" / "persistent"
        var.mkdir(parents=True)
        res = run_neutrino(["-p", "block_sched", ctx.python, _script("block_sched/persist.py"), "--repeat", "1"],
                           None, var, ctx.neutrino, ctx.env, ctx.timeout, log_name="persist")
        ctx.log(f"  persistent: {', '.join(p.name for p in res.trace_dirs)}")
        timing = out / "timing"
        for name in ("raw", "memset", "persist"):
            _nsys_time(ctx, name, [_script(f"block_sched/{name}.py")], timing)


DMAT_FIGURES: dict[str, tuple[str, str]] = {
    # figure: (workload script, kernel keyword for -k)
    "fig1": ("dmat/fig1.py", "attn"),
    "fig10a": ("dmat/fig10a.py", "attn"),
    "fig10b": ("dmat/fig10b.py", "flash"),
    "fig10c": ("dmat/fig10c.py", "fmha"),
}


def sparsify_trace_dir(trace_dir: Path, dest: Path) -> Path:
    """Turn the newest dmat ``result/*.bin`` of ``trace_dir`` into a ``.dmat`` file, chunk by chunk."""
    from neutrino_ae.formats.bintrace import open_trace
    from neutrino_ae.formats.dmat import sparsify, write_dmat
    from neutrino_ae.formats.records import DMAT

    bins = results_by_time(trace_dir)
    if not bins:
        raise CollectError(f"{trace_dir}: no result/*.bin (did the -k keyword match a kernel?)")
    trace = open_trace(bins[-1])
    chunks = (np.asarray(c).reshape(-1) for _, c in trace.iter_chunks(0, DMAT))
    return write_dmat(dest, sparsify(chunks))


def collect_dmat(root: Path, ctx: Context, figures: Sequence[str] | None = None) -> None:
    with staged(root / "dmat") as out:
        for fig in figures or list(DMAT_FIGURES):
            script, kw = DMAT_FIGURES[fig]
            raw = out / "raw" / fig
            raw.mkdir(parents=True)
            res = run_neutrino(["-p", "dmat", "-k", kw, ctx.python, _script(script)],
                               None, raw, ctx.neutrino, ctx.env, ctx.timeout, log_name=fig)
            sparsify_trace_dir(res.trace_dir, out / f"{fig}.dmat")
            ctx.log(f"  {fig}: {res.trace_dir.name} -> {fig}.dmat ({res.seconds:.1f}s)")


def _collect_by_script(section: str, script: str) -> Callable[[Path, Context], None]:
    """Sections whose folder has its own collection CLI (``--out DIR --neutrino N``)."""
    def collect(root: Path, ctx: Context) -> None:
        with staged(root / section) as out:
            argv = [ctx.python, _script(script), "--out", str(out), "--neutrino", ctx.neutrino,
                    "--repeats", str(ctx.repeats), *ctx.extra_args.get(section, [])]
            rc, so, se, secs = run_command(argv, REPO_ROOT, out, f"collect_{section}", ctx.env, ctx.timeout)
            if rc != 0:
                raise CollectError(f"{script} exited {rc}: {_tail(se.read_text(errors='replace'))} (log: {se})")
            ctx.log(f"  {script}: done in {secs:.1f}s ({so})")
    collect.__doc__ = f"Run {script} into <trace_root>/{section}."
    return collect


COLLECTORS: dict[str, Callable[[Path, Context], None]] = {
    "block_sched": collect_block_sched,
    "dmat": collect_dmat,
    "kernel_overhead": _collect_by_script("kernel_overhead", "kernel_overhead/collect.py"),
    "max_mem": _collect_by_script("max_mem", "max_mem/collect.py"),
    "exposed_latency": _collect_by_script("exposed_latency", "exposed_latency/main.py"),
    "warp_sched": _collect_by_script("warp_sched", "warp_sched/main.py"),
}


def collect_section(name: str, trace_root: str | os.PathLike[str], ctx: Context | None = None) -> None:
    """Collect one section into ``trace_root/<name>`` and record it in the tree's bundle.json."""
    if name not in COLLECTORS:
        raise CollectError(f"no collector for section {name!r}; known: {', '.join(COLLECTORS)}")
    ctx = ctx or Context()
    root = Path(trace_root)
    root.mkdir(parents=True, exist_ok=True)
    COLLECTORS[name](root, ctx)
    now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    write_dynamic_manifest(root, sections={name: {"collected_at": now, "neutrino": ctx.neutrino}})


def analyze_section(name: str, trace_root: str | os.PathLike[str], output_dir: str | os.PathLike[str]):
    """Run the SAME per-figure analysis static.ipynb uses, on a collected tree.

    Goes through the sections registry's adapter for ``name`` but skips its input-path check,
    which names the paper bundle's own trace folder (ours carry the collection time and pid).
    """
    import importlib

    from neutrino_ae import sections
    from neutrino_ae.report.results import SectionResult

    sec = sections.get(name)
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    out = Path(output_dir) / name
    out.mkdir(parents=True, exist_ok=True)
    result = sec.call(importlib.import_module(sec.module), Path(trace_root), out)
    if not isinstance(result, SectionResult):
        raise NeutrinoAEError(f"{sec.module}: returned {type(result).__name__}, not a SectionResult")
    result.data.setdefault("bundle_kind", "dynamic")
    return result
