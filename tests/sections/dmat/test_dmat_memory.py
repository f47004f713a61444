"""DMAT in bounded memory (issue 23 item 7): a dense raw trace whose clocks are absolute timestamps (its
(clock, page) keys do not pack as plain numbers) streams under an address-space limit (RLIMIT_AS, what
``ulimit -v`` sets) far below what holding its pairs takes; where the limit is truly too small,
``python dmat/dmat.py`` stops with one line saying how much it needs, exit 5, nothing written.

The 256 MB case of the issue is a manual benchmark (python -m benchmarks.dmat_memory); here the trace is 32 MB and
the limit is the measured start-up address space plus a margin that the in-memory sparsifier (about
128 bytes per record) cannot live in.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from differential.tracegen import DMAT, dmat_trace

from neutrino_ae.formats.dmat import read_dmat
from neutrino_ae.formats.dmat import stream as dmat_stream
from neutrino_ae.formats.dmat.plan import least_need, plan_stream
from neutrino_ae.formats.memory import MemoryLimit, available_memory

REPO = Path(__file__).resolve().parents[3]
MB = 1 << 20
T0 = 1_700_000_000_000_000_000  # %globaltimer-like clocks: 61 bits


def _dense_trace(path: Path, blocks: int = 128, threads: int = 128, per_thread: int = 128) -> np.ndarray:
    """A random-access dmat trace: per-warp rising absolute clocks, addresses over 64 MiB, 5 % zero-filled."""
    rng = np.random.default_rng(7)
    warps = threads // 32
    clock = np.cumsum(rng.exponential(1000, (blocks, warps, 1, per_thread)), axis=-1).astype(np.uint64)
    clock = np.broadcast_to(clock + np.uint64(T0), (blocks, warps, 32, per_thread)).reshape(-1)
    rec = np.zeros(clock.size, DMAT)
    rec["clock"] = clock
    rec["addr"] = np.uint64(0x7F3A_0000_0000) + rng.integers(0, 64 * MB // 16, clock.size).astype(np.uint64) * 16
    rec[rng.random(clock.size) < 0.05] = 0
    dmat_trace((blocks, 1, 1), (threads, 1, 1), rec).trace.write(path)
    return rec


def _pairs(rec: np.ndarray) -> tuple[int, int]:
    """(accesses, distinct (clock, page) cells) of the filled records, by lexsort (not our sparsifier)."""
    kept = rec[rec["addr"] != 0]
    clock, page = kept["clock"], kept["addr"] >> np.uint64(16)
    order = np.lexsort((page, clock))
    clock, page = clock[order], page[order]
    return kept.size, 1 + int(np.count_nonzero((clock[1:] != clock[:-1]) | (page[1:] != page[:-1])))


def _startup_bytes() -> int:
    """The address space ``python dmat/dmat.py`` holds once its code is loaded (VmSize)."""
    code = ("import sys; sys.argv = ['dmat.py', '--help']\n"
            "from neutrino_ae.report.section.registry import import_folder\n"
            "from pathlib import Path; import importlib\n"
            "import_folder(Path('dmat').resolve()); importlib.import_module('dmat.inputs')\n"
            "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmSize')][0])")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return int(out.stdout) * 1024


def _run_limited(limit: int, *args: str) -> subprocess.CompletedProcess:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run([sys.executable, "dmat/dmat.py", *args], cwd=REPO, capture_output=True, text=True,
                          preexec_fn=cap, timeout=120)


def test_a_dense_timestamped_trace_streams_under_an_address_space_limit(tmp_path: Path) -> None:
    trace = tmp_path / "dense.bin"
    rec = _dense_trace(trace)  # 32 MiB, 2 Mi records: holding its pairs would take some 256 MB
    accesses, cells = _pairs(rec)
    base = _startup_bytes()
    ok = _run_limited(base + 200 * MB, str(trace), "--out", str(tmp_path / "out"), "--json")
    assert ok.returncode == 0, ok.stderr
    assert "Traceback" not in ok.stderr
    data = json.loads(ok.stdout)
    assert data["accesses"] == accesses and data["unfilled_slots_excluded"] == rec.size - accesses
    written = read_dmat(tmp_path / "out" / "dense.dmat")
    assert (written.num_accesses, written.pair_page.size) == (accesses, cells)
    assert int(written.clocks.min()) >= T0  # absolute clocks kept as they are

    tight = _run_limited(base + 24 * MB, str(trace), "--out", str(tmp_path / "tight"))
    assert tight.returncode == 5, tight.stderr
    lines = tight.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in tight.stderr
    assert lines[0].startswith(f"error: {trace}: not enough memory: ")
    assert "MB more" in lines[0] and "RLIMIT_AS" in lines[0] and "needed in all" in lines[0]
    assert not (tmp_path / "tight").exists() or not any((tmp_path / "tight").iterdir())


def test_the_pieces_follow_the_room_between_their_floors_and_caps() -> None:
    block = 128 * 128 * 16
    roomy = plan_stream(MemoryLimit(None, "no limit found"), block, 8 * MB)
    assert (roomy.chunk_bytes, roomy.memory_bytes, roomy.bucket_records, roomy.sample_max) == (
        8 * MB, dmat_stream.MEMORY_BYTES, dmat_stream.BUCKET_RECORDS, dmat_stream.SAMPLE_MAX)
    sizes = [plan_stream(MemoryLimit(room * MB, "test"), block, 8 * MB) for room in (16, 64, 128, 256, 4096)]
    for field in ("chunk_bytes", "memory_bytes", "bucket_records", "sample_max", "page_table_span"):
        values = [getattr(p, field) for p in sizes]
        assert values == sorted(values), field  # more room, never smaller pieces
    for room, plan in zip((16, 64, 128, 256, 4096), sizes, strict=True):
        if room >= 64:
            assert plan.peak() <= room * MB // 2  # the passes take about half the room; the rest is margin
        assert plan.chunk_bytes >= block  # a chunk holds at least one whole block
    # What is left beside the caller's reserve is what gets shared.
    assert plan_stream(MemoryLimit(256 * MB, "t"), block, 8 * MB, reserve=192 * MB) == sizes[1]
    # The floor: the least the passes run in, whatever the room; a huge block raises it.
    assert plan_stream(MemoryLimit(0, "t"), block, 8 * MB).peak() == least_need(block, 8 * MB) < 16 * MB
    assert least_need(64 * MB, 8 * MB) > 64 * MB * 6
    assert least_need(block, 8 * MB, wide=True) > least_need(block, 8 * MB)


def test_the_memory_available_is_read_from_rlimit_as(tmp_path: Path) -> None:
    code = ("import resource; from neutrino_ae.formats.memory import available_memory, _status_kb\n"
            "resource.setrlimit(resource.RLIMIT_AS, (1 << 32, 1 << 32))\n"
            "m = available_memory(); print(m.available, m.in_use, _status_kb('VmSize'), m.source)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    room, in_use, vm, *source = out.stdout.split()
    if " ".join(source) == "RLIMIT_AS (ulimit -v)":
        assert abs(int(room) + int(in_use) - (1 << 32)) < 4 * MB and abs(int(in_use) - int(vm)) < 4 * MB
    else:  # a cgroup or the machine itself has less than 4 GiB free: then that is the limit named
        assert int(room) < (1 << 32) - int(in_use)
    assert available_memory().available is None or available_memory().available > 0


@pytest.mark.parametrize("limit", [None, 0])
def test_the_refusal_is_one_line_with_the_amount(limit: int | None) -> None:
    from neutrino_ae.formats.memory import refuse

    err = refuse("t.bin", "streaming", 150 * MB + 1, MemoryLimit(limit, "RLIMIT_AS (ulimit -v)", 300 * MB))
    assert err.exit_code == 5 and "\n" not in str(err)
    assert str(err).startswith("t.bin: not enough memory: streaming needs about 158 MB more")
