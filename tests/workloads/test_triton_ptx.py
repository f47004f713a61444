"""The committed ahead-of-time Triton PTX (``neutrino_ae/workloads/ptx/triton/``, written by
``tools/triton_ptx.py``) matches its metadata, its kernel's current source, and assembles for sm_80
and sm_90. Runs without Triton; only the regeneration test needs it."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tools import triton_ptx

PTX_DIR = triton_ptx.PTX_DIR
CONFIGS = sorted(triton_ptx.CONFIGS)
KERNEL_SUBSTRING = {"attn_fwd": "attn", "gmm_kernel": "gmm", "spin_kernel": "spin", "zero_fill_persistent": "zero_fill"}


def _load(config: str) -> tuple[str, dict]:
    ptx = (PTX_DIR / f"{config}.ptx").read_text(encoding="utf-8")
    info = json.loads((PTX_DIR / f"{config}.json").read_text(encoding="utf-8"))
    return ptx, info


def _entry(ptx: str) -> tuple[str, list[str]]:
    """The .entry's name and its parameters' types, parsed here independently of the tool."""
    (name, body), = re.findall(r"\.visible\s+\.entry\s+(\w+)\(\s*(.*?)\)", ptx, flags=re.S)
    lines = [ln.strip().rstrip(",") for ln in body.splitlines() if ln.strip()]
    assert all(ln.startswith(".param ") and ln.endswith(f"{name}_param_{i}") for i, ln in enumerate(lines)), lines
    return name, [ln.split()[1].lstrip(".") for ln in lines]


def test_the_folder_holds_exactly_the_configs():
    assert sorted(p.name for p in PTX_DIR.iterdir()) == sorted(f"{c}.{ext}" for c in CONFIGS for ext in ("json", "ptx"))


@pytest.mark.parametrize("config", CONFIGS)
def test_json_describes_its_ptx(config):
    ptx, info = _load(config)
    cfg = triton_ptx.CONFIGS[config]
    name, types = _entry(ptx)
    assert re.search(r"^\.target sm_80$", ptx, flags=re.M) and info["target"] == "sm_80"
    assert info["config"] == config and info["kernel"] == name and info["function"] == cfg.kernel
    assert KERNEL_SUBSTRING[cfg.kernel] in name  # what `neutrino -k <substring>` selects it by
    assert [p["ptx_type"] for p in info["params"]] == types
    # every runtime argument in declared order, then Triton 3.6's two scratch pointers
    assert [p["name"] for p in info["params"]] == [*cfg.signature, "global_scratch", "profile_scratch"]
    assert info["num_warps"] == cfg.num_warps and info["threads_per_block"] == 32 * cfg.num_warps
    assert re.search(rf"^\.reqntid {32 * cfg.num_warps}$", ptx, flags=re.M)
    assert info["num_stages"] == cfg.num_stages and info["constexprs"] == cfg.constexprs
    assert isinstance(info["shared"], int) and info["shared"] >= 0
    assert "wgmma" not in ptx and (("mma.sync" in ptx) == (cfg.kernel in ("attn_fwd", "gmm_kernel")))


@pytest.mark.parametrize("config", CONFIGS)
def test_ptx_was_made_from_the_current_kernel_source(config):
    _, info = _load(config)
    assert info["source_sha256"] == triton_ptx.kernel_source_sha256(info["function"]), (
        f"{info['function']} changed since its PTX was made: run PYTHONPATH=. python tools/triton_ptx.py")


def test_an_edited_kernel_changes_its_hash(tmp_path):
    src = triton_ptx.KERNELS_PY.read_text(encoding="utf-8")
    edited = tmp_path / "triton_kernels.py"
    edited.write_text(src.replace("x = x * 0.999 + 0.5", "x = x * 0.998 + 0.5"), encoding="utf-8")
    assert triton_ptx.kernel_source_sha256("spin_kernel", edited) != triton_ptx.kernel_source_sha256("spin_kernel")
    assert triton_ptx.kernel_source_sha256("gmm_kernel", edited) == triton_ptx.kernel_source_sha256("gmm_kernel")


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit) not on PATH")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("config", CONFIGS)
def test_ptxas_assembles(config, arch, tmp_path):
    proc = subprocess.run(["ptxas", f"-arch={arch}", str(PTX_DIR / f"{config}.ptx"), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "k.cubin").stat().st_size > 0


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton not installed (CI has none)")
def test_regenerating_gives_the_committed_files(tmp_path: Path):
    triton_ptx.write_all(tmp_path)
    assert triton_ptx.differences(tmp_path, PTX_DIR) == []
