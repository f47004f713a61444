"""dynamic.ipynb's last section: a tour of what Neutrino is and writes, from real files only (issue 37
item 4; the source notebook's "Neutrino Internal Workflows"):

1. the built-in probes folder and the ``block_sched`` probe, from Neutrino's own source: the installed
   ``neutrino`` package, ``$NEUTRINO_SRC`` (a checkout, or a folder of ``neutrino-<branch>.tar.gz``
   snapshots), ``prepare_env.py``'s clone under ``third_party/``, or the source snapshots beside the
   checkout (``../shared/neutrino-src``), in that order;
2. a ``block_sched`` trace directory: the newest collected under ``trace_root``, else one of the paper's
   bundle, else the genuine one in ``tests/data/genuine`` (the real Neutrino over the emulated driver);
   its files, its ``probe.toml``, its ``event.log`` explained line by line, the probe engine's steps
   (``kernel/<i>_<sha1>/``: ``process.log``, ``kernel.info``, ``pruned.ptx`` vs ``probed.ptx``), the
   analysis script it ran and what it printed;
3. what a probe-engine failure looks like: a ``process.log`` ending in a traceback, the newest under
   ``trace_root`` or the genuine one in ``tests/data/genuine``.

Long files are folded; absolute paths are shown relative to the working folder or by their last parts.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

from neutrino_ae.errors import NeutrinoAEError
from neutrino_ae.escape import html_text, md_code, md_text
from neutrino_ae.formats.tracedir import TraceDir, engine_errors, find_trace_dirs
from neutrino_ae.report.command.layout import checkout_root, default_trace_root, third_party_dir
from neutrino_ae.run.display import _html, markdown
from neutrino_ae.run.dynamic_view import shown, unabsolute

GENUINE = "tests/data/genuine"
#: The genuine trace directories' provenance (tests/data/genuine/MANIFEST.md says how they were made).
GENUINE_NOTE = ("written by the real Neutrino (CLI, hook driver, probe engine) over the suite's emulated CUDA "
                "driver (`tools/real_neutrino`); its probe records are synthetic, every file is as Neutrino "
                "wrote it (`tests/data/genuine/MANIFEST.md`)")


def _root() -> Path:
    return checkout_root() or Path.cwd()


# --- Neutrino's source: its tools/ folder ------------------------------------------------------------

@dataclass
class ToolsFolder:
    """Neutrino's built-in probes (``neutrino/tools/``) in a folder or inside a source snapshot."""

    where: str  # how the notebook names it
    folder: Path | None = None
    tarball: Path | None = None
    prefix: str = ""  # inside the tarball: "<top>/neutrino/tools/"

    def names(self) -> list[str]:
        if self.folder is not None:
            return sorted(p.name for p in self.folder.iterdir() if not p.name.startswith(("__", ".")))
        with tarfile.open(self.tarball) as tar:
            return sorted(n[len(self.prefix):] for n in tar.getnames()
                          if n.startswith(self.prefix) and "/" not in n[len(self.prefix):]
                          and n[len(self.prefix):] and not n[len(self.prefix):].startswith(("__", ".")))

    def read(self, name: str) -> str | None:
        if self.folder is not None:
            p = self.folder / name
            return p.read_text(encoding="utf-8", errors="replace") if p.is_file() else None
        with tarfile.open(self.tarball) as tar:
            try:
                f = tar.extractfile(self.prefix + name)
            except KeyError:
                return None
            return f.read().decode("utf-8", errors="replace") if f is not None else None


def _from_tarballs(folder: Path, where: str) -> ToolsFolder | None:
    # The artifact branch first: what the paper's traces were made with.
    for tb in sorted(folder.glob("neutrino-*.tar.gz"), key=lambda p: "artifact" not in p.name):
        try:
            with tarfile.open(tb) as tar:
                prefix = next((n.rsplit("tools/", 1)[0] + "tools/" for n in tar.getnames()
                               if re.fullmatch(r"[^/]+/neutrino/tools/block_sched\.\w+", n)), None)
        except (OSError, tarfile.TarError):
            continue
        if prefix:
            return ToolsFolder(f"{where}/{md_text(tb.name)} ({md_code(prefix)})", tarball=tb, prefix=prefix)
    return None


def neutrino_tools() -> ToolsFolder | None:
    """Where Neutrino's built-in probes are on this machine, or None."""
    spec = importlib.util.find_spec("neutrino")
    if spec is not None and spec.origin and (Path(spec.origin).parent / "tools").is_dir():
        return ToolsFolder("the installed `neutrino` package's `tools/`", Path(spec.origin).parent / "tools")
    candidates = []
    if os.environ.get("NEUTRINO_SRC"):
        candidates.append((Path(os.environ["NEUTRINO_SRC"]), "`$NEUTRINO_SRC`"))
    candidates.append((third_party_dir() / "neutrino", "`third_party/neutrino` (prepare_env.py's clone)"))
    candidates.append((_root().parent / "shared" / "neutrino-src", "the Neutrino source snapshots in "
                                                                   "`../shared/neutrino-src`"))
    for path, where in candidates:
        if (path / "neutrino" / "tools").is_dir():
            return ToolsFolder(f"{where}: `neutrino/tools/`", path / "neutrino" / "tools")
        if path.is_dir() and (found := _from_tarballs(path, where)):
            return found
    return None


# --- display helpers ---------------------------------------------------------------------------------

def _text(text: str) -> str:
    return unabsolute("".join(ch if (ch.isprintable() and ch != "\ufffd") or ch in "\n\t" else "?" for ch in text))


def file_block(title: str, text: str, fold: bool = False, max_lines: int = 200) -> None:
    """A real file's text (absolute paths shortened), open or folded under its title."""
    lines = _text(text).rstrip().splitlines()
    more = len(lines) - max_lines
    body = "\n".join(lines[:max_lines] + ([f"... ({more} more lines)"] if more > 0 else []))
    css = ("white-space:pre;overflow-x:auto;font-family:var(--jp-code-font-family,monospace);font-size:12px;"
           "line-height:1.3;max-height:32em")
    pre = f'<pre style="{css}">{html_text(body)}</pre>'
    head = f"<b>{html_text(title)}</b>"
    if fold:
        _html(f"<details><summary>{head} ({len(lines)} lines)</summary>{pre}</details>", f"--- {title}\n{body}")
    else:
        _html(f"{head}{pre}", f"--- {title}\n{body}")


def tree(path: Path, limit: int = 40) -> str:
    """The folder's files with their sizes, one per line, indented."""
    out = []
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path)
        out.append("  " * (len(rel.parts) - 1) + rel.name + ("/" if p.is_dir() else f"  ({p.stat().st_size:,} B)"))
    return "\n".join(out[:limit] + ([f"... ({len(out) - limit} more)"] if len(out) > limit else []))


# --- event.log, line by line -------------------------------------------------------------------------

#: (tag, first word or None, what the line says). The hook driver's tags (``formats/eventlog/tags.py``).
EVENT_LINES = [
    ("[pid]", None, "the process id: one trace directory per process (its name is the time and this pid)"),
    ("[cmd]", None, "the command line (its length, then the words): what ran under `neutrino`"),
    ("[info]", "dl", "the hook driver found the real CUDA driver (`dlopen` handle)"),
    ("[info]", None, "the hook driver's set-up and status"),
    ("[mod]", None, "a module operation (cuModuleLoadData, cuModuleGetFunction, cuLibrary*): GPU code loaded, "
                    "a kernel's function handle taken"),
    ("[bin]", None, "the loaded binary's kind (ptx, cubin, fatbin) and size"),
    ("[mem]", None, "a memory operation (cuMemAlloc, cuMemFree, ...): its return code, pointer and bytes"),
    ("[exec]", "funcmap-not-find", "a kernel launched for the first time: not yet probed, so JIT probing starts"),
    ("[jit]", "find", "the kernel's binary found in the hook driver's store"),
    ("[jit]", "rename", "the kernel named by its index and the SHA1 of its name: its `kernel/<i>_<sha1>/` folder"),
    ("[jit]", "mkdir", "that folder created"),
    ("[jit]", "write", "the kernel's binary written there as `original.bin` for the probe engine"),
    ("[jit]", "subproc", "the probe engine started in a subprocess: `probe/cuda.py <kernel folder> <kernel name>`"),
    ("[jit]", "python", "the probe engine's exit status (`succeed`, or failed: the kernel then runs unprobed)"),
    ("[jit]", "read", "`kernel.info` read back: name, parameters, probes that save records, analysis hook"),
    ("[jit]", "finish", "the probed kernel loaded: later launches reuse it"),
    ("[exec]", "funcmap-find", "a launch of a kernel already probed"),
    ("[exec]", "grid", "the launch's grid and block; or, for the probe buffer, blocks x warps x bytes per record"),
    ("[exec]", "probe-mem", "the probe buffer allocated for this launch (what Fig. 11 sums)"),
    ("[exec]", "succeed", "the probed kernel ran (CUDA return code 0)"),
    ("[exec]", "save", "its records saved to `result/<seconds since start>.bin`"),
    ("[exec]", "prologue", "times of the launch: prologue (buffer set-up), kernel, epilogue (copy-back) and "
                           "the probed/unprobed ratio (Fig. 12)"),
    ("[exec]", None, "the launch's kernel handle and its parameters"),
    ("[analyze]", "subproc", "the probe's analysis script (`analyze_hook`) started on the saved result"),
    ("[analyze]", None, "the analysis script's exit status"),
]


def explain(line: str) -> str:
    """What one ``event.log`` line says (the first matching row of :data:`EVENT_LINES`)."""
    parts = line.split()
    if not parts:
        return ""
    tag, word = parts[0], parts[1] if len(parts) > 1 else ""
    for t, w, what in EVENT_LINES:
        if t == tag and (w is None or word == w):
            return what
    return "(not a line this tour knows)"


def event_log_markdown(path: Path, limit: int = 40) -> str:
    """``event.log`` as a table: each line (absolute paths shortened) beside what it says."""
    lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    rows = [f"| {i} | {md_code(_text(ln)[:160])} | {explain(ln)} |" for i, ln in enumerate(lines[:limit], start=1)]
    more = f"\n\n({len(lines) - limit} more lines of the same kinds)" if len(lines) > limit else ""
    return "| # | line | what it says |\n|---|---|---|\n" + "\n".join(rows) + more


# --- which trace directory ---------------------------------------------------------------------------

def block_sched_dir(trace_root: Path) -> tuple[Path, str] | None:
    """A block_sched trace directory and where it comes from: collected, the paper's, or the genuine one."""
    for root, what in ((trace_root / "block_sched", "collected under `trace_root`"),
                       (_root() / default_trace_root("paper") / "block_sched", "from the paper's bundle")):
        try:
            dirs = [d for d in find_trace_dirs(root, recursive=True) if (d / "probe.toml").is_file()]
        except (NeutrinoAEError, OSError):
            dirs = []
        if dirs:
            return dirs[-1], f"the newest block_sched trace directory {what}"
    genuine = _root() / GENUINE / "artifact" / "block_sched"
    if (genuine / "event.log").is_file():
        return genuine, f"a genuine block_sched trace directory, {GENUINE_NOTE}"
    return None


def engine_failure(trace_root: Path) -> tuple[Path, str] | None:
    """A ``process.log`` in which the probe engine failed: the newest under ``trace_root``, else the genuine one."""
    logs = sorted(trace_root.rglob("kernel/*/process.log"), key=lambda p: p.stat().st_mtime) \
        if trace_root.is_dir() else []
    for log in reversed(logs):
        if "Traceback (most recent call last)" in log.read_text(encoding="utf-8", errors="replace"):
            return log, "collected under `trace_root`"
    for log in sorted((_root() / GENUINE).glob("*/table2-not-built/**/kernel/*/process.log")):
        if "Traceback (most recent call last)" in log.read_text(encoding="utf-8", errors="replace"):
            return log, "genuine: Neutrino main's `gmem_bytes` probe on a Triton group-GEMM kernel"
    return None


# --- the tour ----------------------------------------------------------------------------------------

def tour(trace_root: str | os.PathLike[str]) -> None:
    """The whole of dynamic.ipynb's tour (see the module's docstring)."""
    trace_root = Path(trace_root)
    tools = neutrino_tools()
    markdown("#### The probes: Neutrino's `tools/` folder")
    if tools is None:
        markdown("Neutrino is not installed here, and no copy of its source was found "
                 "(`python prepare_env.py --install`, or set `NEUTRINO_SRC` to a checkout): its built-in probes "
                 "folder is shown once it is. The probe as it ran is the trace directory's `probe.toml` below.")
    else:
        names = tools.names()
        markdown(f"`neutrino -p block_sched` names a built-in probe: a file of {tools.where}, which holds "
                 f"{len(names)} entries: " + ", ".join(md_code(n) for n in names) + ". `-p <path>` takes your own.")
        probe = next(((n, t) for n in ("block_sched.toml", "block_sched.py") if (t := tools.read(n))), None)
        if probe:
            file_block(f"tools/{probe[0]}: the probe (position, datamodel, before/after snippets, analyze_hook)",
                       probe[1])

    found = block_sched_dir(trace_root)
    if found is None:
        markdown("No block_sched trace directory here (none collected, no paper bundle, no `tests/data/genuine`).")
        return
    tdir, what = found
    markdown(f"#### A trace directory: {md_code(shown(tdir))}\n\n{what[0].upper() + what[1:]}. A run writes one per "
             "process under `./trace/` (`--trace` changes it), named by the time and the pid: `probe.toml` (the "
             "probe that ran), `event.log` (the hook driver's log), `kernel/` (the probe engine's work, one folder "
             "per kernel), `result/` (the binary traces).")
    file_block("files", tree(tdir))
    file_block("probe.toml (block_sched)", (tdir / "probe.toml").read_text(encoding="utf-8", errors="replace"))
    if (tdir / "event.log").is_file():
        markdown("**event.log, line by line** (pointers and times change from run to run):\n\n"
                 + event_log_markdown(tdir / "event.log"))
    try:
        kernels = TraceDir(tdir).kernels()
    except NeutrinoAEError as exc:
        markdown(f"(kernel/ not shown: {md_text(_text(str(exc)))})")
        kernels = []
    if kernels:
        k = kernels[0].path
        steps = [("`original.bin`", "the hook driver writes the kernel's binary", "original.bin"),
                 ("`original.ptx`", "objdump: the assembly extracted (cuobjdump; PTX loaded as such is used as is)",
                  "original.ptx"),
                 ("`pruned.ptx`", "pruned to the one kernel named on the command line", "pruned.ptx"),
                 ("`probed.ptx`", "probed: the probe's snippets inserted at its positions", "probed.ptx"),
                 ("`pruned.bin`, `probed.bin`", "assembled with ptxas (register counts in process.log: Table 2)",
                  "probed.bin"),
                 ("`kernel.info`", "metadata for the hook driver to launch the probed kernel", "kernel.info")]
        rows = "\n".join(f"| {i} | {what} | {f} | {'here' if (k / name).is_file() else 'not kept'} |"
                         for i, (f, what, name) in enumerate(steps, start=1))
        markdown(f"#### The probe engine: {md_code(f'kernel/{k.name}/')}\n\nThe engine (`neutrino/probe/cuda.py`, "
                 "started by the `[jit] subproc` line) works in the kernel's folder, in these steps:\n\n"
                 f"| step | what | file | in this folder |\n|---|---|---|---|\n{rows}")
        for name, fold in (("process.log", True), ("kernel.info", False)):
            if (k / name).is_file():
                file_block(f"kernel/{k.name}/{name}", (k / name).read_text(encoding="utf-8", errors="replace"),
                           fold=fold)
        if (k / "kernel.info").is_file():
            markdown("`kernel.info`, top to bottom: the kernel's name; its parameter count; the number of probes "
                     "that save records, then one `level,bytes` line each (0 thread, 1 warp); the analysis hook.")
        pruned, probed = k / "pruned.ptx", k / "probed.ptx"
        if pruned.is_file() and probed.is_file():
            diff = difflib.unified_diff(pruned.read_text(errors="replace").splitlines(),
                                        probed.read_text(errors="replace").splitlines(),
                                        "pruned.ptx", "probed.ptx", lineterm="", n=1)
            file_block("pruned.ptx vs probed.ptx (what the probe engine added)", "\n".join(diff), fold=True)
    _analysis(tdir, tools)
    failure = engine_failure(trace_root)
    if failure is not None:
        log, origin = failure
        said = engine_errors(log.parents[2])
        said = f" The suite reads it as: {md_text(_text(said[0]))}." if said else ""
        markdown("#### When the probe engine fails\n\nIts `process.log` ends in the Python traceback, the "
                 "`[jit]` line in event.log says it failed, and the kernel runs unprobed (no result file for it). "
                 f"This one is {origin}.{said}")
        file_block(f"…/kernel/{log.parent.name}/process.log", log.read_text(encoding="utf-8", errors="replace"))


def _analysis(tdir: Path, tools: ToolsFolder | None) -> None:
    """The analysis script the probe names (``analyze_hook``), and what it printed."""
    info = next(iter(sorted(tdir.glob("kernel/*/kernel.info"))), None)
    hook = None
    if info is not None:
        lines = info.read_text(encoding="utf-8", errors="replace").splitlines()
        hook = next((Path(ln.strip()).name for ln in lines if ln.strip().endswith(".py")), None)
    hook = hook or "block_sched.py"
    markdown(f"#### The analysis script: {md_code(hook)}\n\nEach launch's records are saved as `result/<seconds>.bin`; "
             f"the probe's `analyze_hook`, {md_code(hook)} in Neutrino's `tools/`, reads them (its first part is the "
             "trace-reading code the probe engine generated, also in process.log) and prints the result: for "
             "block_sched, `No.block ... Running ... Scheduling ...(cycle)`.")
    text = tools.read(hook) if tools is not None else None
    if text:
        file_block(f"tools/{hook}", text, fold=True)
    out = tdir / "cli.stdout.log"
    if out.is_file():
        file_block("what it printed (the run's stdout)", out.read_text(encoding="utf-8", errors="replace"))
