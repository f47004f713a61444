"""Workload scripts: --help works without PyTorch/Triton; the NumPy attention reference is right."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dmat.workload_common import PAPER_SHAPE, parse_shape
from neutrino_ae.workloads.attention import attention_reference

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = ["block_sched/raw.py", "block_sched/memset.py", "block_sched/persist.py", "dmat/fig1.py",
           "dmat/fig10a.py", "dmat/fig10b.py", "dmat/fig10c.py", "kernel_overhead/collect.py", "max_mem/collect.py",
           "exposed_latency/main.py", "warp_sched/main.py"]


def _torch_missing() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is None


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_without_torch(script):
    proc = subprocess.run([sys.executable, str(REPO / script), "--help"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:")


@pytest.mark.skipif(not _torch_missing(), reason="checks the message shown when PyTorch is absent")
@pytest.mark.parametrize("script", ["block_sched/raw.py", "block_sched/memset.py", "dmat/fig1.py"])
def test_no_torch_is_one_line_error(script):
    proc = subprocess.run([sys.executable, str(REPO / script)], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("error:") and len(proc.stderr.strip().splitlines()) == 1


def _direct(q, k, v, scale):
    out = np.empty_like(q, dtype=np.float64)
    for idx in np.ndindex(*q.shape[:-2]):
        s = q[idx].astype(np.float64) @ k[idx].astype(np.float64).T * scale
        e = np.exp(s - s.max(axis=1, keepdims=True))
        out[idx] = (e / e.sum(axis=1, keepdims=True)) @ v[idx].astype(np.float64)
    return out


@pytest.mark.parametrize("shape,scale", [((1, 1, 5, 4), 0.5), ((2, 3, 17, 8), 0.125), ((1, 2, 64, 16), 2.0)])
def test_attention_reference_matches_direct_softmax(shape, scale):
    rng = np.random.default_rng(42)
    q, k, v = (rng.normal(0, 0.5, shape).astype(np.float16) for _ in range(3))
    got = attention_reference(q, k, v, scale)
    assert got.shape == shape
    np.testing.assert_allclose(got, _direct(q, k, v, scale), rtol=1e-10, atol=1e-12)


def test_attention_reference_uniform_when_keys_equal():
    # All keys equal -> uniform weights -> every output row is the mean of v.
    v = np.arange(12, dtype=np.float64).reshape(1, 1, 4, 3)
    q = np.ones((1, 1, 2, 3))
    k = np.ones((1, 1, 4, 3))
    np.testing.assert_allclose(attention_reference(q, k, v, 0.5)[0, 0], np.tile(v[0, 0].mean(axis=0), (2, 1)))


def test_parse_shape():
    assert parse_shape("4,32,4096,64") == PAPER_SHAPE
    assert parse_shape("1x2x128x64") == (1, 2, 128, 64)
    for bad in ("1,2,3", "a,b,c,d", "1,2,0,4"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_shape(bad)


def test_cutlass_keys_are_distinct():
    from neutrino_ae.workloads.cutlass import CUTLASS_OPS

    assert {"gemm", "gemm-streamk", "conv"} <= set(CUTLASS_OPS)
    assert CUTLASS_OPS["gemm"][0] == "gemm" and CUTLASS_OPS["gemm-streamk"][0] == "gemm-streamk"


def test_a_collections_newest_trace_dir_is_by_the_time_in_its_name_not_mtime(tmp_path):
    """The dynamic collectors take ``CollectResult.trace_dir``: the one trace-dir rule, not the newest mtime."""
    import os

    from neutrino_ae.workloads.neutrino import CollectResult

    aug, jan = tmp_path / "Aug05_101500_77", tmp_path / "Jan05_101500_76"
    for d in (aug, jan):
        (d / "result").mkdir(parents=True)
    os.utime(aug, (1_000_000, 1_000_000))  # August written first, January touched last
    res = CollectResult(["neutrino"], 0, tmp_path / "out", tmp_path / "err", [aug, jan])
    assert res.trace_dir == aug
