"""The ptx family's driver layer over the emulated driver (tools/real_neutrino/emucuda.c): memory,
launches by PTX signature, CUDA-event timing, the peak-memory counter Fig. 11 prints and tensor.trace
naming; the family choice; the fill-timing file; the device session's plan."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from neutrino_ae.errors import InputError, TraceFormatError
from neutrino_ae.formats.fill_timing import read_fill_timing, speedups, write_fill_timing
from neutrino_ae.workloads import family
from neutrino_ae.workloads.cudadrv import CudaError
from neutrino_ae.workloads.ptx_build import ptx_entries
from neutrino_ae.workloads.ptx_kernels import TritonConfig

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools" / "real_neutrino"))

import harness  # noqa: E402

PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry scale_add(
    .param .u64 scale_add_param_0,
    .param .u32 scale_add_param_1,
    .param .f32 scale_add_param_2
)
{ ret; }
"""
PY = """
import json, os, sys
from pathlib import Path
import numpy as np
from neutrino_ae.workloads.cudadrv import Driver
drv = Driver()
ptx = Path(sys.argv[1])
k = drv.kernel(ptx, "scale_add")
a = drv.upload(np.arange(8, dtype=np.uint16), name="a")
b = drv.empty((1024,), np.float32, name="b")
drv.memset_d16(b, 0x3C00, 2048)
drv.free(b)
c = drv.empty((16,), np.uint8)
ms = drv.time_ms(lambda: drv.launch(k, (100, 2), 64, [a, 7, 0.5]), repeat=4)
try:
    drv.launch(k, (1,), 32, [a, 7])
    bad = None
except Exception as exc:
    bad = str(exc)
print(json.dumps({"roundtrip": drv.download(a, (8,), np.uint16).tolist(), "peak": drv.max_memory_allocated,
                  "now": drv.allocated, "ms": ms, "bad": bad, "sms": drv.sm_count,
                  "trace": str(drv.write_tensor_trace())}))
"""


@pytest.fixture(scope="module")
def emu(tmp_path_factory) -> Path:
    include = harness.cuda_include()
    if include is None:
        pytest.skip("CUDA 12's cuda.h not found (pip install nvidia-cuda-runtime-cu12)")
    folder = tmp_path_factory.mktemp("emucuda")
    harness.build_emucuda(folder, include)
    return folder


def test_the_driver_moves_memory_launches_by_signature_and_counts_the_peak(emu, tmp_path):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(PTX)
    hook_dir = tmp_path / "trace" / f"Nov27_000000_{os.getpid()}"  # not the child's pid: never chosen
    hook_dir.mkdir(parents=True)
    env = {**os.environ, "LD_LIBRARY_PATH": str(emu), "EMUCUDA_KERNEL_MS": "0.5", "EMUCUDA_BLOCK_US": "10",
           "NEUTRINO_TRACEDIR": str(tmp_path / "trace"), "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", PY, str(ptx)], env=env, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got["roundtrip"] == list(range(8))
    # a (16 B) and b (4 KiB) were live together; b was freed before c (16 B)
    assert got["peak"] == 16 + 4096 and got["now"] == 16 + 16
    assert got["ms"] == pytest.approx(0.5 + 200 * 10 / 1000, rel=1e-5)  # emucuda: per launch + per block
    assert "2 argument(s) given, the PTX declares 3" in got["bad"]
    assert got["sms"] == 108
    assert got["trace"] == "None"  # no folder of this process's pid: Neutrino's is not guessed


def test_tensor_trace_goes_to_the_hooks_folder_of_this_process(emu, tmp_path):
    script = ("import os, numpy as np; from pathlib import Path; from neutrino_ae.workloads.cudadrv import Driver\n"
              "d = Path(os.environ['NEUTRINO_TRACEDIR']) / f'Nov27_000001_{os.getpid()}'; d.mkdir()\n"
              "(d / 'event.log').write_text('')\n"
              "drv = Driver(); q = drv.upload(np.zeros((2, 4), np.float16), name='q')\n"
              "print(drv.write_tensor_trace(), q.ptr)")
    (tmp_path / "trace").mkdir()
    env = {**os.environ, "LD_LIBRARY_PATH": str(emu), "NEUTRINO_TRACEDIR": str(tmp_path / "trace"),
           "PYTHONPATH": str(REPO)}
    path, ptr = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                               check=True).stdout.split()
    from neutrino_ae.formats.tensortrace import read_tensor_trace

    rows = read_tensor_trace(path)
    assert Path(path).parent.name.endswith(f"_{Path(path).parent.name.rsplit('_', 1)[1]}")
    assert rows["arg_name"].tolist() == ["q"] and rows["data_ptr"].tolist() == [int(ptr)]
    assert rows["nbytes"].tolist() == [16] and rows["shape"].tolist() == [(2, 4)]


def test_entry_params_reads_nvcc_and_triton_declarations():
    triton = ".visible .entry attn_fwd(\n .param .u64 .ptr .global .align 16 attn_fwd_param_0,\n" \
             " .param .f32 attn_fwd_param_1,\n .param .u32 attn_fwd_param_2\n)"
    assert ptx_entries(PTX) == {"scale_add": ["u64", "u32", "f32"]}
    assert ptx_entries(triton) == {"attn_fwd": ["u64", "f32", "u32"]}


def test_a_triton_launch_checks_names_and_folded_values():
    from neutrino_ae.workloads.ptx_kernels import TritonLaunch

    cfg = TritonConfig.load("attn_fwd_m128")
    assert cfg.threads == 256 and cfg.constexprs["sqd"] == 1 and "sqd" not in cfg.params

    class NoDriver:
        def launch(self, *a, **k):
            raise AssertionError("must not launch")

    launch = TritonLaunch(NoDriver(), cfg, None)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="compiled with sqd = 1, not 64"):
        launch((1,), sqd=64)
    with pytest.raises(InputError, match="has no parameter"):
        launch((1,), nonsense=1)
    with pytest.raises(InputError, match="no value for"):
        launch((1,), Q=0)


@pytest.mark.parametrize(("torch", "ptx", "triton", "want"), [
    ("2.11.0+cu130", False, "3.6.0", "ptx"),  # the H200's stack: SASS-only torch, cuLaunchKernelEx Triton
    ("2.5.1", True, "3.6.0", "ptx"),  # PTX torch, but a Triton the hook cannot run
    ("2.5.1", True, "3.1.0", "paper"),  # the artifact's stack
    (None, None, None, "ptx"),  # neither installed
])
def test_auto_picks_the_family_neutrino_can_probe(torch, ptx, triton, want):
    got, why = family.choose("auto", torch, ptx, triton)
    assert got == want and why
    if want == "ptx" and triton == "3.6.0":
        assert "cuLaunchKernelEx" in why
    assert family.choose("paper", torch, ptx, triton)[0] == "paper"
    with pytest.raises(ValueError):
        family.choose("sass", torch, ptx, triton)


def test_fill_timing_is_read_back_and_bad_values_are_refused(tmp_path):
    path = write_fill_timing(tmp_path / "events.json", {"raw": 2.0, "memset": 0.5, "persistent": 1.0}, device="x")
    assert speedups(read_fill_timing(path)) == {"memset": 4.0, "persistent": 2.0}
    for bad in ({"raw": 0}, {"raw": float("nan")}, {"raw": True}, {"memset": 1.0}, {"raw": 1.0, "other": 1.0}):
        (tmp_path / "bad.json").write_text(json.dumps({"ms": bad}))
        with pytest.raises(TraceFormatError, match="bad.json"):
            read_fill_timing(tmp_path / "bad.json")


def test_the_device_session_plan_fits_eight_minutes():
    """tools/real_gpu/session.py: every step's cap written down, summing to at most 480 s, and each
    section's cap in PLAN the one its table row gives."""
    text = (REPO / "tools" / "real_gpu" / "session.py").read_text()
    rows = dict(re.findall(r"^#: \| (.+?)\s*\|\s*(\d+) \|$", text, re.M))
    total = rows.pop("total")
    assert sum(map(int, rows.values())) == int(total) <= 480
    plan = ast.literal_eval(re.search(r"^PLAN: .*? = (\{.*?^\})", text, re.M | re.S).group(1))
    for name in ("block_sched", "warp_sched", "kernel_overhead", "exposed_latency"):
        assert plan[name][2] == int(rows[name]), name
    assert max(plan["dmat"][2], plan["max_mem"][2]) == int(rows["dmat and max_mem, side by side"])
    assert 'default=470.0' in text  # --budget: 10 s in hand for the last packing


def test_a_bad_kernel_name_is_one_line(emu, tmp_path):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(PTX)
    script = ("import sys; from neutrino_ae.workloads.cudadrv import Driver\n"
              f"Driver().kernel({str(ptx)!r}, 'nope')")
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ, "LD_LIBRARY_PATH": str(emu),
                          "PYTHONPATH": str(REPO)}, capture_output=True, text=True)
    assert "no kernel nope (entries: scale_add)" in proc.stderr and issubclass(CudaError, Exception)
