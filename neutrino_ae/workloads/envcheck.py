"""What dynamic.ipynb needs on the machine, and whether it is there.

Every probe runs in a subprocess with a timeout, so a hung driver or a slow ``import torch`` turns
into a "timed out" row, never a traceback. ``prepare_env.py`` is the command-line face of this
module; the notebook calls :func:`run_checks` directly.

Exit codes (``prepare_env.py --check``):

* 0 — everything required is present (optional items may be missing);
* 1 — a GPU is visible but something required is missing;
* 3 — no usable NVIDIA GPU/driver (checked first: nothing else can run without it).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from neutrino_ae.proctree import end_tree
from neutrino_ae.report.command.layout import third_party_dir

EXIT_READY = 0
EXIT_MISSING = 1
EXIT_NO_GPU = 3

OK, MISSING, WARN = "ok", "missing", "warn"
#: Found but does not run (crashes, hangs, exits non-zero on ``--version``): as missing for readiness.
BROKEN = "broken"

#: SM counts by marketing name, for when no PyTorch is there to ask the driver. nvidia-smi has
#: no query field for the multiprocessor count.
KNOWN_SM_COUNTS: dict[str, int] = {
    "A100": 108, "A30": 56, "A10": 72, "A40": 84, "L4": 58, "L40S": 142, "L40": 142, "T4": 40,
    "V100": 80, "H100 PCIe": 114, "H100 NVL": 132, "H100": 132, "H200": 132, "H800": 132,
    "RTX 3080": 68, "RTX 3090": 82, "RTX 4090": 128, "RTX A6000": 84,
}

#: CUTLASS benchmark executables the Table 2 / Fig. 12 collection runs.
CUTLASS_BINARIES = ("gemm", "gemm-streamk", "conv")


@dataclass
class Check:
    name: str
    status: str  # ok / missing / broken / warn
    detail: str
    required: bool
    hint: str = ""


@dataclass
class GpuInfo:
    name: str
    compute_cap: str
    driver: str
    sm_count: str  # a number as text, or "unknown"


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)
    gpus: list[GpuInfo] = field(default_factory=list)
    family: str = "paper"  # the workload family dynamic.ipynb runs (workloads/family.py)
    family_reason: str = ""

    @property
    def has_gpu(self) -> bool:
        return bool(self.gpus)

    @property
    def missing_required(self) -> list[Check]:
        return [c for c in self.checks if c.required and c.status in (MISSING, BROKEN)]

    @property
    def exit_code(self) -> int:
        if not self.has_gpu:
            return EXIT_NO_GPU
        return EXIT_MISSING if self.missing_required else EXIT_READY

    @property
    def ready(self) -> bool:
        return self.exit_code == EXIT_READY

    def get(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    def to_json(self) -> dict:
        return {"exit_code": self.exit_code, "ready": self.ready, "workloads": self.family,
                "workloads_reason": self.family_reason,
                "gpus": [asdict(g) for g in self.gpus], "checks": [asdict(c) for c in self.checks]}

    def table(self) -> str:
        rows = [("item", "status", "required", "detail")]
        rows += [(c.name, c.status, "yes" if c.required else "no", c.detail) for c in self.checks]
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = ["  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3] for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths) + "  " + "-" * 6)
        hints = [f"  - {c.name}: {c.hint}" for c in self.checks if c.status != OK and c.hint]
        verdict = {EXIT_READY: "ready for dynamic.ipynb",
                   EXIT_MISSING: "not ready: required items missing (exit 1)",
                   EXIT_NO_GPU: "not ready: no NVIDIA GPU/driver found (exit 3)"}[self.exit_code]
        return "\n".join(lines + (["", "what to do:", *hints] if hints else []) + ["", verdict])


def run_tool(argv: Sequence[str], timeout: float = 20.0, env: dict[str, str] | None = None,
             cwd: str | os.PathLike[str] | None = None) -> tuple[int, str]:
    """Run a command; return (exit code, stdout+stderr). 127 = not found, 124 = timed out.

    The command runs in its own session, and a timeout kills it with every process it started
    (:func:`neutrino_ae.proctree.end_tree`): a wrapper script's children (a hung driver query, a
    compiler), even those that left its group, never outlive the check.
    """
    try:
        proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", env=env, cwd=cwd, start_new_session=True)
    except FileNotFoundError:
        return 127, f"{argv[0]}: not found"
    except PermissionError:
        return 126, f"{argv[0]}: not executable"
    except OSError as exc:
        return 126, f"{argv[0]}: {exc.strerror}"
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        end_tree(proc)  # the group and any descendant that left it (it would hold the pipe open)
        with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
            proc.communicate(timeout=5)
        return 124, f"{argv[0]}: timed out after {timeout:g}s"
    except BaseException:
        end_tree(proc)
        raise
    return proc.returncode, out.strip()


def printable(text: str, limit: int = 120) -> str:
    """``text`` safe to print on one line: control and undecodable characters as ``?``, cut at ``limit``."""
    clean = "".join(c if c.isprintable() else "?" for c in text.replace("\n", " "))
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


_CAP_RE = re.compile(r"\d+\.\d+")
_DRIVER_RE = re.compile(r"\d+(\.\d+)+")


def known_sm_count(name: str) -> str:
    # Longest key first so "H100 PCIe" wins over "H100".
    for key in sorted(KNOWN_SM_COUNTS, key=len, reverse=True):
        if key.lower() in name.lower():
            return str(KNOWN_SM_COUNTS[key])
    return "unknown"


def query_gpus(timeout: float = 20.0) -> tuple[list[GpuInfo], str]:
    """GPUs from ``nvidia-smi``; returns (gpus, problem text when none)."""
    if shutil.which("nvidia-smi") is None:
        return [], "nvidia-smi not on PATH (no NVIDIA driver)"
    rc, out = run_tool(["nvidia-smi", "--query-gpu=name,compute_cap,driver_version",
                        "--format=csv,noheader"], timeout)
    if rc != 0:
        return [], f"nvidia-smi failed (exit {rc}): {printable(_last_line(out))}"
    gpus = []
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        # A GPU line is "<name>, <major.minor>, <driver version>"; anything else is not a GPU.
        if (len(parts) != 3 or not parts[0] or not parts[0].isprintable() or not _CAP_RE.fullmatch(parts[1])
                or not _DRIVER_RE.fullmatch(parts[2])):
            continue
        gpus.append(GpuInfo(name=parts[0], compute_cap=parts[1], driver=parts[2], sm_count=known_sm_count(parts[0])))
    if gpus:
        return _visible(gpus)
    first = out.splitlines()[0] if out.strip() else "(nothing)"
    return [], f"nvidia-smi lists no GPU (its output does not parse: {printable(first)!r})"


def _visible(gpus: list[GpuInfo]) -> tuple[list[GpuInfo], str]:
    """The GPUs of ``gpus`` (nvidia-smi's, which ignores it) that ``$CUDA_VISIBLE_DEVICES`` leaves CUDA, and
    why none when it hides them all. CUDA's rule: the listed indices, up to the first entry that is not a
    valid one (``""``, ``-1``, ``NoDevFiles``: none); UUIDs (``GPU-...``, ``MIG-...``) are not checked."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return gpus, ""
    shown: list[GpuInfo] = []
    for entry in (e.strip() for e in value.split(",")):
        if entry.upper().startswith(("GPU-", "MIG-")):
            return gpus, ""
        if not entry.isdigit() or int(entry) >= len(gpus):
            break
        shown.append(gpus[int(entry)])
    if shown:
        return shown, ""
    return [], (f"CUDA_VISIBLE_DEVICES={value!r} hides all {len(gpus)} GPU(s) nvidia-smi lists: no GPU is visible "
                "to CUDA (unset it, or list the GPUs to use)")


_TORCH_PROBE = r"""
import json, torch
d = {"version": torch.__version__, "cuda": torch.version.cuda, "available": torch.cuda.is_available()}
d["arch_list"] = torch.cuda.get_arch_list() if d["available"] else []
if d["available"]:
    p = torch.cuda.get_device_properties(0)
    d["sm_count"] = p.multi_processor_count
    d["device"] = p.name
print("NEUTRINO_AE_TORCH " + json.dumps(d))
"""


def probe_torch(python: str = sys.executable, timeout: float = 180.0) -> tuple[dict | None, str]:
    """Ask a separate interpreter about PyTorch (importing it here would cost seconds and memory)."""
    if python == sys.executable and importlib.util.find_spec("torch") is None:
        return None, "not installed"
    rc, out = run_tool([python, "-c", _TORCH_PROBE], timeout)
    for line in out.splitlines():
        if line.startswith("NEUTRINO_AE_TORCH "):
            return json.loads(line.split(" ", 1)[1]), ""
    return None, "not installed" if "No module named" in out else f"import failed: {_last_line(out)}"


def ptx_archs(arch_list: Sequence[str]) -> list[str]:
    return [a for a in arch_list if a.startswith("compute_")]


def cutlass_dir() -> Path:
    """The artifact's CUTLASS checkout: ``$CUTLASS_DIR``, else ``cutlass/`` in the third-party folder
    ``prepare_env.py --install`` clones into (``$THIRD_PARTY``, default ``third_party/`` at the repository root)."""
    return Path(os.environ.get("CUTLASS_DIR", third_party_dir() / "cutlass"))


def cutlass_bin_dir() -> Path:
    # The artifact's benchmark targets live under examples/benchmark of its CUTLASS build.
    return Path(os.environ.get("CUTLASS_BENCH_DIR", cutlass_dir() / "build" / "examples" / "benchmark"))


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:200] if lines else "(no output)"


def _version_of(tool: str, args: Sequence[str] = ("--version",)) -> tuple[bool, str]:
    """(runs, what it said): a tool runs when ``<tool> --version`` exits 0 and names a version; one that
    crashes, hangs, exits non-zero or prints no version is found but does not run (say how)."""
    path = shutil.which(tool)
    rc, out = run_tool([tool, *args], timeout=15)
    m = re.search(r"(\d+\.\d+(?:\.\d+)?)", out)
    if rc == 0 and m:
        return True, f"{m.group(1)} ({path})"
    how = "timed out" if rc == 124 else f"exited {rc}" if rc else "printed no version"
    if rc < 0:
        how = f"was killed by signal {-rc}"
        with contextlib.suppress(ValueError):
            how = f"was killed by {signal.Signals(-rc).name}"
    return False, f"{path} does not run: `{tool} {' '.join(args)}` {how}: {printable(_last_line(out), 100)}"


def _tool_check(name: str, required: bool, hint: str, version_args: Sequence[str] = ("--version",)) -> Check:
    if shutil.which(name) is None:
        return Check(name, MISSING, "not on PATH", required, hint)
    runs, detail = _version_of(name, version_args)
    return Check(name, OK if runs else BROKEN, detail, required, "" if runs else f"reinstall it: {hint}")


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def run_checks(torch_python: str = sys.executable, neutrino: str = "neutrino", torch_timeout: float = 180.0,
               workloads: str = "auto") -> Report:
    """Check everything dynamic.ipynb uses, for the workload family ``workloads`` ("auto": the one this
    machine's PyTorch and Triton allow, :mod:`family`). Never raises for a missing or broken tool."""
    from .family import PAPER, choose

    rep = Report()
    gpus, problem = query_gpus()
    rep.gpus = gpus
    if gpus:
        desc = "; ".join(f"{g.name}, sm_{g.compute_cap.replace('.', '')}, driver {g.driver}" for g in gpus)
        rep.checks.append(Check("nvidia-gpu", OK, desc, True))
    else:
        rep.checks.append(Check("nvidia-gpu", MISSING, problem, True,
                                "dynamic collection needs an NVIDIA GPU and driver; static.ipynb runs without one"))

    cuda_hint = "install the CUDA toolkit and put its bin/ on PATH (Neutrino disassembles and reassembles kernels)"
    rep.checks.append(_tool_check("cuobjdump", True, cuda_hint))
    rep.checks.append(_tool_check("ptxas", True, cuda_hint))
    for tool in ("gcc", "git", "nm", "file"):
        rep.checks.append(_tool_check(tool, True, f"install {tool} (e.g. apt-get install build-essential git file)"))

    py_ok = sys.version_info >= (3, 11)
    rep.checks.append(Check("python", OK if py_ok else MISSING, sys.version.split()[0], True,
                            "" if py_ok else "use Python >= 3.11 (the artifact was built with 3.12)"))

    path = shutil.which(neutrino)
    if path:
        ver = _dist_version("neutrino")
        rep.checks.append(Check("neutrino", OK, f"{path}" + (f" (package {ver})" if ver else ""), True))
    else:
        rep.checks.append(Check("neutrino", MISSING, f"{neutrino!r} not on PATH", True,
                                "python prepare_env.py --install (or set NEUTRINO_SRC to a local checkout)"))

    info, why = probe_torch(torch_python, torch_timeout)
    if info is None:
        rep.checks.append(Check("torch", MISSING, why, True, "install a CUDA build of PyTorch (pip install torch)"))
    else:
        rep.checks.append(Check("torch", OK, f"{info['version']} (CUDA {info.get('cuda')}, "
                                f"GPU {'visible' if info['available'] else 'not visible'})", True))
        if info.get("sm_count"):
            for g in rep.gpus:
                if g.sm_count == "unknown" or g.name == info.get("device"):
                    g.sm_count = str(info["sm_count"])
        ptx = ptx_archs(info.get("arch_list", []))
        if not info["available"]:
            rep.checks.append(Check("torch-ptx", WARN, "unknown (CUDA not available to torch)", False))
        elif ptx:
            rep.checks.append(Check("torch-ptx", OK, "embeds " + ",".join(ptx), True))
        else:
            rep.checks.append(Check("torch-ptx", MISSING, "arch list " + ",".join(info.get("arch_list", [])) +
                                    " has no compute_XX", True,
                                    "Neutrino probes PTX: use a PyTorch build that embeds PTX (compute_XX in "
                                    "torch.cuda.get_arch_list()) or build it with TORCH_CUDA_ARCH_LIST='8.0+PTX'"))
    for g in rep.gpus:
        rep.checks.append(Check(f"sm-count[{g.name}]", OK if g.sm_count != "unknown" else WARN, g.sm_count, False))

    tver = _dist_version("triton")
    rep.checks.append(Check("triton", OK if tver else MISSING, tver or "not installed", True,
                            "" if tver else "pip install triton (DMAT Fig. 1/10a, persistent kernel, Table 2)"))

    bdir = cutlass_bin_dir()
    found = [b for b in CUTLASS_BINARIES if (bdir / b).is_file() and os.access(bdir / b, os.X_OK)]
    status = OK if len(found) == len(CUTLASS_BINARIES) else MISSING
    rep.checks.append(Check("cutlass", status, f"{bdir}: {', '.join(found) or 'no benchmark binaries'}", False,
                            "" if status == OK else "python prepare_env.py --install (or set CUTLASS_DIR / "
                            "CUTLASS_BENCH_DIR); only the CUTLASS rows of Table 2 / Fig. 12 need it"))
    rep.checks.append(_tool_check("nsys", False, "Nsight Systems times the block_sched optimisations (optional)"))
    rep.checks.append(_tool_check("ncu", False, "Nsight Compute is the Fig. 12 baseline (optional)"))

    torch_ptx = None
    if (c := rep.get("torch-ptx")) is not None and c.status != WARN:
        torch_ptx = c.status == OK
    rep.family, why = choose(workloads, info["version"] if info else None, torch_ptx, tver)
    rep.family_reason = why
    if rep.family != PAPER:  # the PTX family needs neither PyTorch nor Triton, but nvcc
        for c in rep.checks:
            if c.name in ("torch", "torch-ptx", "triton"):
                c.required = False
                c.hint = "not needed by the ptx workloads (only by workloads=paper)" if c.status != OK else ""
        rep.checks.append(_tool_check("nvcc", True, "install the CUDA toolkit (nvcc compiles the PTX workloads)"))
    rep.checks.insert(1, Check("workloads", OK, f"{rep.family}: {why}", False))
    return rep


def gpu_arch(rep: Report) -> str | None:
    """``"80"`` for compute capability 8.0, from the first GPU."""
    if not rep.gpus or not re.fullmatch(r"\d+\.\d+", rep.gpus[0].compute_cap):
        return None
    return rep.gpus[0].compute_cap.replace(".", "")
