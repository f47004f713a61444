"""Bundle-level checks of the sample generator: layout, readers, determinism, DMAT proportions."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from neutrino_ae.bundle.manifest import read_manifest
from neutrino_ae.bundle.trust import verify_manifest
from neutrino_ae.bundle.verified import VERIFIED
from neutrino_ae.errors import InputError
from neutrino_ae.formats.dmat import page_of, read_dmat
from neutrino_ae.formats.dmat.sparsify import sparsify
from neutrino_ae.formats.kernelinfo import read_register_usage
from neutrino_ae.formats.records import DMAT
from neutrino_ae.formats.tracedir import TraceDir
from neutrino_ae.report.section import registry
from neutrino_ae.sample import generate_bundle
from neutrino_ae.sample.__main__ import main

MODELS = ["resnet-bs32", "sd-bs1", "mamba-bs32", "llama1b-bs32", "llama3b-bs32", "llama8b-bs32", "llama8b-bs128",
          "llama8b-bs256"]
PROBES = ["block_sched", "gmem_bytes", "tensorop_count", "dmat"]


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate_bundle(tmp_path_factory.mktemp("b") / "tiny", scale="tiny", seed=0, progress=False)


def _digests(root: Path) -> dict[str, str]:
    """Every file's digest but the verification cache's (file states of this machine, no bundle data)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != VERIFIED}


def test_same_seed_gives_identical_bundle(tiny: Path, tmp_path: Path) -> None:
    again = generate_bundle(tmp_path / "again", scale="tiny", seed=0, progress=False)
    assert _digests(tiny) == _digests(again)
    assert json.loads((tiny / "bundle.json").read_text()) == json.loads((again / "bundle.json").read_text())
    other = generate_bundle(tmp_path / "other", scale="tiny", seed=1, progress=False)
    main_bin = "block_sched/Jan_23_06_27_37_268336/result/0.486795.bin"
    assert _digests(other)[main_bin] != _digests(tiny)[main_bin]


def test_static_paths_of_the_paper_exist(tiny: Path) -> None:
    for rel in ["block_sched/Jan_23_06_27_37_268336/result/0.486795.bin", "dmat/fig1.dmat", "dmat/fig10a.dmat",
                "dmat/fig10b.dmat", "dmat/fig10c.dmat", "warp_sched/exclusive_sched/result/2.756086.bin",
                "warp_sched/shared_sched/result/3.201079.bin"]:
        assert (tiny / rel).is_file(), rel
    for suite, tests in {"cutlass_op": ["gemm", "streamk", "conv"], "triton_op": ["gmm", "attn"],
                         "pytorch_op": ["norm", "softmax", "sum", "pool", "embedding", "gather"]}.items():
        for test in tests:
            for probe in PROBES:
                d = tiny / "kernel_overhead" / suite / test / probe
                assert (d / "stdout.log").is_file() and (d / "trace" / "event.log").is_file()
    for model in MODELS:
        for probe in PROBES:
            subs = [p for p in (tiny / "max_mem" / model / probe).iterdir()]
            assert subs
            for sub in subs:
                assert "max memory: " in (sub / "stdout.log").read_text()
                traces = [p for p in sub.iterdir() if p.is_dir()]
                assert len(traces) == 1 and (traces[0] / "event.log").is_file()
    for work in ("attn", "gmm", "conv", "gemm"):
        df = pd.read_csv(tiny / "exposed_latency" / f"{work}.csv")
        assert list(df.columns) == ["probe", "original", "ncu", "neutrino", "prologue", "kernel", "epilogue"]
        np.testing.assert_allclose(df["neutrino"], df["prologue"] + df["kernel"] + df["epilogue"], rtol=1e-5)
    assert list((tiny / "warp_sched" / "tail").glob("*/result/*.bin"))


def test_every_trace_dir_opens_with_the_readers(tiny: Path) -> None:
    dirs = sorted(p.parent for p in tiny.rglob("event.log"))
    assert len(dirs) > 100
    # max_mem holds ~130 near-identical --memusage dirs; one model of it keeps this test quick.
    dirs = [d for d in dirs if "max_mem" not in d.parts or "resnet-bs32" in d.parts]
    for path in dirs:
        td = TraceDir(path)
        log = td.event_log()
        assert len(log.launches) >= 1
        assert td.probe() is not None
        for kd in td.kernels():
            usage = read_register_usage(kd.path / "process.log")
            assert usage.extra >= 0
        for i, _ in enumerate(td.results()):
            trace = td.open_result(i)
            assert trace.header.grid_size == int(log.launches["grid_x"].iloc[0] * log.launches["grid_y"].iloc[0]
                                                 * log.launches["grid_z"].iloc[0])
    assert verify_manifest(tiny) == []


def test_manifest_carries_model_and_ground_truth(tiny: Path) -> None:
    m = read_manifest(tiny)
    assert m["kind"] == "sample" and m["scale"] == "tiny" and m["seed"] == 0
    assert m["model"]["device"]["sms"] == 108
    gt = m["ground_truth"]
    assert set(gt) == {s.name for s in registry.sections() if s.sample}  # each sample part's ground truth
    assert {"block_sched", "dmat", "kernel_overhead", "max_mem", "exposed_latency", "warp_sched"} <= set(gt)
    assert gt["block_sched"]["mean_dispatch_gap_cycles"] == m["model"]["block_sched"]["gap"]["mean_cycles"]
    assert gt["block_sched"]["blocks"] == 4096  # more than one wave (108 SMs x 16 slots): blocks wait for slots
    assert gt["kernel_overhead"]["rows"][0]["extra_regs"] > 0
    # the failed launch is visible in its event.log and in the truth
    f = gt["kernel_overhead"]["failed_launch"]
    log = TraceDir(tiny / "kernel_overhead" / "pytorch_op" / f["test"] / f["probe"] / "trace").event_log()
    assert log.launches["failed"].sum() == 1


def _tensor_ranges(tiny: Path, fig: str) -> dict[str, tuple[int, int]]:
    td = TraceDir(next((tiny / "dmat" / "raw" / fig).iterdir()))
    tt = td.tensor_trace()
    calls = tt[tt["kind"] == "call"].drop_duplicates("arg_name")
    return {r.arg_name: (int(r.data_ptr), int(r.data_ptr) + int(r.nbytes)) for r in calls.itertuples()}


@pytest.mark.parametrize("fig", ["fig1", "fig10a", "fig10b", "fig10c"])
def test_dmat_accesses_match_tile_arithmetic(tiny: Path, fig: str) -> None:
    cfg = read_manifest(tiny)["model"]["dmat"]
    b, h, n, d = (cfg["shape"][k] for k in ("batch", "heads", "seq", "head_dim"))
    kern = cfg["kernels"][fig]
    bm, bn, threads = kern["block_m"], kern["block_n"], kern["warps"] * 32
    m_tiles = -(-n // bm)
    vec = 16
    # Every Q and O row is touched once; every m-tile block streams all of its head's K and V once.
    expect = {"q": b * h * n * d * 2 // vec, "o": b * h * n * d * 2 // vec,
              "k": m_tiles * b * h * n * d * 2 // vec, "v": m_tiles * b * h * n * d * 2 // vec,
              kern["lse_name"]: b * h * n}
    data = read_dmat(tiny / "dmat" / f"{fig}.dmat")
    ranges = _tensor_ranges(tiny, fig)
    got = {}
    for name, (lo, hi) in ranges.items():
        sel = (data.pair_page >= page_of(np.array([lo]))[0]) & (data.pair_page < hi)
        got[name] = int(data.pair_count[sel].sum())
    assert got == expect
    assert data.num_accesses == sum(expect.values())
    # The raw trace sparsifies to the same .dmat, and threads beyond block_m have one empty slot.
    td = TraceDir(next((tiny / "dmat" / "raw" / fig).iterdir()))
    trace = td.open_result(0)
    rec = trace.records(0, DMAT)
    assert sparsify([np.asarray(rec)]).equals(data)
    empty = int(((rec["clock"] == 0) & (rec["addr"] == 0)).sum())  # the hook driver's zero fill
    assert empty == trace.header.grid_size * max(threads - bm, 0)
    _ = bn


def test_refuses_non_empty_out_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "x"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(InputError):
        generate_bundle(out, scale="tiny", progress=False)
    assert main(["--out", str(out), "--scale", "tiny", "--quiet"]) == 2
    assert "error:" in capsys.readouterr().err
    assert (out / "keep.txt").read_text() == "mine"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert main(["--out", str(out), "--scale", "tiny", "--quiet", "--force"]) == 0
    assert not (out / "keep.txt").exists() and (out / "bundle.json").is_file()


def test_small_scale_size_and_time(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    out = generate_bundle(tmp_path / "small", scale="small", progress=False)
    elapsed = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"small bundle: {size / 1e6:.1f} MB in {elapsed:.1f} s")
    assert size <= 60e6
