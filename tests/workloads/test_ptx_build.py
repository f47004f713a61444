"""The PTX builder (neutrino_ae/workloads/ptx_build.py) and the workload kernels it builds: nvcc runs once
per source, errors are one line naming the file, and every kernel assembles for sm_80 and sm_90."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from workload_kernels import KERNELS, TENSOR_CORE

from neutrino_ae.errors import InputError
from neutrino_ae.workloads import ptx_build
from neutrino_ae.workloads.ptx_build import cuda_ptx, ptx_entries

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not on PATH")

SMALL = """
struct Pair { float a; double b; };
extern "C" __global__ void scale(float* x, int n, float f) { int i = threadIdx.x; if (i < n) x[i] *= f; }
extern "C" __global__ void mixed(long long* p, unsigned int u, Pair by_value) { p[u] = (long long)by_value.a; }
"""


def test_entries_of_nvcc_and_triton_ptx():
    nvcc_form = """.visible .entry scale(
\t.param .u64 scale_param_0,
\t.param .u32 scale_param_1,
\t.param .f32 scale_param_2
)
{ ret; }
.entry plain( .param .s32 plain_param_0, .param .b32 plain_param_1, .param .align 8 .b8 plain_param_2[16] ) { ret; }
"""
    triton_form = """.visible .entry attn_fwd(
\t.param .u64 .ptr .global .align 16 attn_fwd_param_0,
\t.param .u64 .ptr .global .align 1 attn_fwd_param_1,
\t.param .f32 attn_fwd_param_2,
\t.param .u32 attn_fwd_param_3
)
.reqntid 128, 1, 1
{ ret; }
"""
    assert ptx_entries(nvcc_form) == {"scale": ["u64", "u32", "f32"], "plain": ["s32", "b32", "b8[16]"]}
    assert ptx_entries(triton_form) == {"attn_fwd": ["u64", "u64", "f32", "u32"]}
    assert ptx_entries(".visible .entry none()\n{ ret; }") == {"none": []}
    assert ptx_entries("// no kernels") == {}


@needs_nvcc
def test_compiles_once_then_reuses_the_cache(tmp_path, monkeypatch):
    src = tmp_path / "small.cu"
    src.write_text(SMALL)
    monkeypatch.setenv(ptx_build.CACHE_ENV, str(tmp_path / "cache"))
    ptx = cuda_ptx(src)
    assert ptx.parent == tmp_path / "cache" and ptx.suffix == ".ptx"
    assert ptx_entries(ptx.read_text()) == {"scale": ["u64", "u32", "f32"], "mixed": ["u64", "u32", "b8[16]"]}
    assert ".target sm_80" in ptx.read_text()  # -arch=compute_80

    def no_nvcc(*args, **kwargs):
        raise AssertionError(f"nvcc ran again: {args}")

    monkeypatch.setattr(ptx_build.subprocess, "run", no_nvcc)
    assert cuda_ptx(src) == ptx  # the cache file, no second nvcc run
    monkeypatch.undo()
    # Another arch, or edited source: another cache file.
    other = cuda_ptx(src, arch="compute_90", cache=tmp_path / "cache")
    assert other != ptx and ".target sm_90" in other.read_text()
    src.write_text(SMALL + "\n// edited\n")
    assert cuda_ptx(src, cache=tmp_path / "cache") not in (ptx, other)
    assert not list((tmp_path / "cache").glob(".*tmp*"))  # written atomically: no temporary left


@needs_nvcc
def test_a_compile_error_is_one_line_naming_the_file(tmp_path):
    src = tmp_path / "broken.cu"
    src.write_text('extern "C" __global__ void k(float* x) { x[0] = 1.0f }\n')  # missing ';'
    with pytest.raises(InputError) as err:
        cuda_ptx(src, cache=tmp_path / "cache")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{src}: nvcc -ptx -arch=compute_80 failed")
    assert "broken.cu(1): error" in msg
    assert not list((tmp_path / "cache").iterdir())  # nothing cached, no temporary left


def test_missing_nvcc_or_source_is_one_line(tmp_path, monkeypatch):
    src = tmp_path / "k.cu"
    with pytest.raises(InputError, match=r"k\.cu: cannot read the CUDA source"):
        cuda_ptx(src, cache=tmp_path)
    src.write_text(SMALL)
    monkeypatch.setattr(ptx_build.shutil, "which", lambda name: None)
    with pytest.raises(InputError, match=r"k\.cu: cannot build PTX: nvcc is not on PATH"):
        cuda_ptx(src, cache=tmp_path)


def test_every_workload_kernel_has_its_documented_signature(workload_ptx):
    for rel, kernels in KERNELS.items():
        text = workload_ptx[rel]
        assert ptx_entries(text) == kernels, rel
        assert "cp.async" not in text and ".func" not in text, rel  # see the probe-engine test
    for rel, kernels in KERNELS.items():  # tensor cores where the probes of Fig. 12 count them
        for name in kernels:
            body = workload_ptx[rel].split(f".entry {name}(", 1)[1].split(".entry ", 1)[0]
            assert ("mma.sync.aligned" in body) == (name in TENSOR_CORE), name


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_workload_kernel_assembles(workload_ptx, tmp_path, arch):
    for rel, text in workload_ptx.items():
        ptx = tmp_path / (rel.replace("/", "_") + ".ptx")
        ptx.write_text(text)
        proc = subprocess.run(["ptxas", f"-arch={arch}", "-v", str(ptx), "-o", str(tmp_path / "out.cubin")],
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"{rel}: {proc.stderr}"
        assert "bytes spill stores" in proc.stderr, rel  # -v printed each entry's properties
        assert not re.search(r"\b[1-9]\d* bytes (spill|stack)", proc.stderr), f"{rel} spills: {proc.stderr}"
