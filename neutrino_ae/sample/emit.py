"""Write a complete Neutrino trace directory with the package's format writers.

A trace dir holds ``probe.toml``, ``event.log``, ``kernel/<idx>_<sha1(name)>/{process.log,
kernel.info}``, ``result/<seconds>.bin`` and, for DMAT, ``tensor.trace``. This module knows the
directory layout only; every file's text comes from ``neutrino_ae.formats``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from neutrino_ae.atomic import write_text
from neutrino_ae.formats.eventlog.write import EventLogWriter
from neutrino_ae.formats.kernelinfo import (
    COUNT_SIZED,
    KernelInfo,
    format_ptxas_command,
    format_ptxas_line,
    write_kernel_info,
)
from neutrino_ae.formats.probe import write_probe_toml
from neutrino_ae.sample.probes import ProbeDef

#: Where a pip-installed Neutrino keeps its built-in tools (kernel.info names the hook by this path).
INSTALLED_TOOLS = "/usr/local/lib/python3.11/site-packages/neutrino/tools"


@dataclass(frozen=True)
class KernelBuild:
    """One probed kernel: its name, parameter count and the two assembler register counts."""

    name: str
    num_params: int
    regs_pruned: int
    regs_probed: int
    cmem_bytes: int = 392


def kernel_dir_name(index: int, name: str) -> str:
    return f"{index}_{hashlib.sha1(name.encode()).hexdigest()}"


def result_name(seconds: float) -> str:
    return f"{seconds:.6f}.bin"


def process_log_text(build: KernelBuild, workdir: str, dynamic: bool = False, probe_ptr_bytes: int = 8) -> str:
    """The probe engine's human log as ``probe/cuda.py`` writes it: the -k/--filter lists, how
    the PTX was obtained, the kernel name, then one ptxas command + output per build in the
    engine's order -- probed, pruned and, for a dynamic probe, countd. The probed build takes one
    more 8-byte pointer parameter per probe buffer; the count kernel one counter pointer."""
    lines = ["None", "None", "[objdump] via cuobjdump -ptx", build.name]
    builds = [("probed", build.regs_probed, build.cmem_bytes + probe_ptr_bytes),
              ("pruned", build.regs_pruned, build.cmem_bytes)]
    if dynamic:
        builds.append(("countd", build.regs_pruned + (build.regs_probed - build.regs_pruned) // 2,
                       build.cmem_bytes + 8))
    for label, regs, cmem in builds:
        lines += [
            format_ptxas_command(workdir, label),
            "ptxas info    : 0 bytes gmem",
            f"ptxas info    : Compiling entry function '{build.name}' for 'sm_80'",
            f"ptxas info    : Function properties for {build.name}",
            "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
            format_ptxas_line(regs, cmem),
            "ptxas info    : Compile time = 12.500 ms",
            "",
        ]
    lines.append("# Neutrino Auto-Generated Code for Trace Reading")
    return "\n".join(lines) + "\n"


def write_trace_dir(path: Path, probes: Sequence[ProbeDef], events: EventLogWriter,
                    kernels: Sequence[KernelBuild]) -> Path:
    """Write probe.toml, event.log and the kernel folders; results are written by the caller
    (streamed with ``TraceWriter``/``write_trace`` into ``result_path``)."""
    path.mkdir(parents=True, exist_ok=True)
    tables: dict[str, dict[str, str]] = {}
    for p in probes:
        tables.update(p.toml_tables())
    hooks = [p.analyze_hook for p in probes if p.analyze_hook]
    # The top-level keys the CLI copies from a built-in tool file; the description says whose data it is.
    header: dict[str, object] = {
        "author": "neutrino-ae sample generator",
        "description": "Synthetic trace written by the suite's execution model in the shape of Neutrino's "
                       f"built-in {', '.join(p.name for p in probes)} tool (not a GPU measurement)",
    }
    if any(p.count for p in probes):
        header["dynamic"] = True
    write_probe_toml(path / "probe.toml", tables, analyze_hook=hooks[0] if hooks else None, header=header)
    events.write(path / "event.log")
    # kernel.info: a count-sized probe's bytes are -1 (sized at launch); the artifact's engine
    # writes the analyze hook as an absolute path into the installed package's tools/.
    saving = [(p.level, COUNT_SIZED if p.count else p.bytes) for p in probes]
    hook = f"{INSTALLED_TOOLS}/{hooks[0]}" if hooks else None
    dynamic = any(p.count for p in probes)
    for i, k in enumerate(kernels):
        kdir = path / "kernel" / kernel_dir_name(i, k.name)
        kdir.mkdir(parents=True, exist_ok=True)
        # The hook driver runs the engine in ./trace/<dir>/kernel/<i>_<sha1> (NEUTRINO_TRACEDIR's default).
        workdir = f"./trace/{path.name}/kernel/{kdir.name}"
        write_text(kdir / "process.log", process_log_text(k, workdir, dynamic))
        write_kernel_info(kdir / "kernel.info", KernelInfo(k.name, k.num_params, saving, hook))
    (path / "result").mkdir(exist_ok=True)
    return path


def result_path(trace_dir: Path, seconds: float) -> Path:
    return trace_dir / "result" / result_name(seconds)
