"""Compiled (numba) and pure-numpy paths of the scheduling analyses agree, and both follow the rules.

The references below are written straight from the rules (paper-map / module docstrings) with plain
Python lists, independent of either implementation; they are only run on small inputs. The numpy
functions are called directly, so the pure-numpy path stays tested where numba is installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

from block_sched import analysis as bs
from block_sched import inputs
from neutrino_ae import jit
from neutrino_ae.sched import intervals as accel
from neutrino_ae.sched import slots
from warp_sched import analysis as ws
from warp_sched import inputs as ws_inputs

needs_numba = pytest.mark.skipif(not accel.HAVE_NUMBA, reason="numba not installed (or NEUTRINO_AE_PURE_NUMPY=1)")


@pytest.fixture(autouse=True)
def numba_at_any_size(monkeypatch):
    """These inputs are small: without this the size rule would send both paths through numpy."""
    monkeypatch.setattr(jit, "NUMBA_MIN_ITEMS", 0)


@pytest.fixture(params=["numpy", "numba"])
def path(request, monkeypatch) -> str:
    """Run a test once through the public functions with numba off, and once with it on."""
    if request.param == "numba" and not accel.HAVE_NUMBA:
        pytest.skip("numba not installed")
    monkeypatch.setattr(jit, "HAVE_NUMBA", request.param == "numba")
    return request.param


# --------------------------------------------------------------------------------------------- references


def ref_artifact(lstart, elapse, smid) -> dict[int, tuple[int, int, int]]:
    """Per SM: (blocks, running, scheduling) with one FIFO list per SM, blocks in index order."""
    lists: dict[int, list[int]] = defaultdict(list)
    out: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    for b in range(len(lstart)):
        sm = int(smid[b])
        fifo = lists[sm]
        if fifo:
            p = fifo[0]
            if lstart[p] + elapse[p] <= lstart[b]:
                out[sm][2] += int(lstart[b] - (lstart[p] + elapse[p]))
                fifo.pop(0)
        fifo.append(b)
        out[sm][0] += 1
        out[sm][1] += int(elapse[b])
    return {k: tuple(v) for k, v in out.items()}


def ref_slot_reuse(lstart, elapse, smid) -> dict[int, tuple[int, int]]:
    """Per SM: (peak resident, sum start_(i) - end_(i-C)); an end at a start's cycle leaves first."""
    res = {}
    for sm in set(int(x) for x in smid):
        idx = [i for i in range(len(smid)) if smid[i] == sm]
        starts = sorted(int(lstart[i]) for i in idx)
        ends = sorted(int(lstart[i] + elapse[i]) for i in idx)
        peak = max(sum(1 for s in starts if s <= t) - sum(1 for e in ends if e <= t) for t in starts)
        res[sm] = (peak, sum(starts[i] - ends[i - peak] for i in range(peak, len(starts))))
    return res


def ref_lowest_free(group, start, end, tiebreak=None) -> list[int]:
    """Per group, in (start, tiebreak, input position) order: the lowest slot whose last end <= start."""
    n = len(start)
    tb = list(range(n)) if tiebreak is None else [int(x) for x in tiebreak]
    out = [0] * n
    for g in set(int(x) for x in group):
        slot_end: list[int] = []  # per slot, end of its last interval
        for i in sorted((i for i in range(n) if group[i] == g), key=lambda i: (start[i], tb[i], i)):
            free = [k for k, e in enumerate(slot_end) if e <= start[i]]
            k = free[0] if free else len(slot_end)
            if k == len(slot_end):
                slot_end.append(0)
            slot_end[k] = int(end[i])
            out[i] = k
    return out


def ref_active(start, end) -> tuple[list[int], list[int]]:
    times = sorted(set(int(x) for x in start) | set(int(x) for x in end))
    return times, [sum(1 for s, e in zip(start, end, strict=True) if s <= t < e) for t in times]


def ref_busy(smid, start, end) -> tuple[list[int], list[int]]:
    """At every event time: SMs with an interval running over [t, t+1) (s <= t < e)."""
    times = sorted(set(int(x) for x in start) | set(int(x) for x in end))
    busy = [len({int(sm) for sm, s, e in zip(smid, start, end, strict=True) if s <= t < e}) for t in times]
    return times, busy


# --------------------------------------------------------------------------------------------- inputs


def random_case(seed: int, n: int, n_sms: int, spread: int = 200, max_len: int = 40):
    """Random intervals with ties, zero lengths, non-contiguous SM ids, unsorted input order."""
    rng = np.random.default_rng(seed)
    sm_ids = rng.choice(np.arange(0, 5000, 7), size=n_sms, replace=False)
    smid = sm_ids[rng.integers(0, n_sms, n)]
    start = rng.integers(0, spread, n) // 3 * 3  # coarse grid: many equal starts
    elapse = rng.integers(0, max_len, n) // 2 * 2  # zero-length intervals and end == other start ties
    return start.astype(np.int64), elapse.astype(np.int64), smid.astype(np.int64)


CASES = [(seed, n, sms) for seed, (n, sms) in enumerate([(1, 1), (5, 1), (40, 1), (60, 3), (200, 7), (300, 13),
                                                           (150, 40)])]


# --------------------------------------------------------------------------------------------- block_sched


@pytest.mark.parametrize("seed,n,sms", CASES)
def test_artifact_metric_matches_reference(path, seed, n, sms):
    lstart, elapse, smid = random_case(seed, n, sms)
    df = bs.artifact_metric(lstart, elapse, smid)
    ref = ref_artifact(lstart, elapse, smid)
    assert df["smid"].tolist() == sorted(ref)
    got = {int(r.smid): (int(r.blocks), int(r.running_cycles), int(r.scheduling_cycles)) for r in df.itertuples()}
    assert got == ref
    pd.testing.assert_frame_equal(df, bs.artifact_metric_numpy(lstart, elapse, smid), check_dtype=False)


@pytest.mark.parametrize("seed,n,sms", CASES)
def test_slot_reuse_matches_reference(path, seed, n, sms):
    lstart, elapse, smid = random_case(seed, n, sms)
    df = bs.slot_reuse_metric(lstart, elapse, smid)
    got = {int(r.smid): (int(r.peak_resident), int(r.slot_reuse_cycles)) for r in df.itertuples()}
    assert got == ref_slot_reuse(lstart, elapse, smid)
    pd.testing.assert_frame_equal(df, bs.slot_reuse_metric_numpy(lstart, elapse, smid), check_dtype=False)


@pytest.mark.parametrize("seed,n,sms", [(21, 2000, 300), (22, 700, 256)])
def test_slot_reuse_matches_reference_past_256_sms(path, seed, n, sms):
    # Past 256 SMs the records are grouped by a 16-bit counting sort before the keys are sorted.
    lstart, elapse, smid = random_case(seed, n, sms)
    df = bs.slot_reuse_metric_numpy(lstart, elapse, smid)
    got = {int(r.smid): (int(r.peak_resident), int(r.slot_reuse_cycles)) for r in df.itertuples()}
    assert got == ref_slot_reuse(lstart, elapse, smid)


def test_slot_reuse_with_more_sms_than_16_bits_agrees_with_the_lexsort_form():
    from block_sched.estimates import _slot_reuse_lexsort, slot_reuse_per_sm

    rng = np.random.default_rng(5)
    n = 200_000
    smid = rng.permutation(np.r_[np.arange(70_000), rng.integers(0, 70_000, n - 70_000)]) * 3  # every SM, ids < 2**20
    lstart = rng.integers(0, 5_000, n) // 4 * 4
    elapse = rng.integers(0, 300, n)
    fast_form = slot_reuse_per_sm(lstart, elapse, smid)
    lexsort_form = _slot_reuse_lexsort(lstart, lstart + elapse, smid)
    assert fast_form.smid.size == 70_000
    for name in ("smid", "peak_resident", "slot_reuse_cycles"):
        assert np.array_equal(getattr(fast_form, name), getattr(lexsort_form, name)), name


def test_slot_reuse_wide_clock_span_takes_the_lexsort_path(path):
    # A span too wide to pack with the SM index: both paths must fall back and still agree.
    lstart, elapse, smid = random_case(3, 80, 5)
    lstart[7] += 1 << 60  # one late block: gaps stay far from int64 overflow
    df = bs.slot_reuse_metric(lstart, elapse, smid)
    got = {int(r.smid): (int(r.peak_resident), int(r.slot_reuse_cycles)) for r in df.itertuples()}
    assert got == ref_slot_reuse(lstart, elapse, smid)


def test_analyze_records_same_table_on_both_paths(monkeypatch):
    lstart, elapse, smid = random_case(11, 500, 9)
    rec = inputs.BlockRecords(lstart, elapse, smid, 500, 128, 0)
    tables = []
    for flag in ([False, True] if accel.HAVE_NUMBA else [False]):
        monkeypatch.setattr(jit, "HAVE_NUMBA", flag)
        res = bs.analyze_records("t", None, rec)
        tables.append((res.per_sm, res.line, res.mean_slot_reuse))
    for per_sm, line, reuse in tables[1:]:
        pd.testing.assert_frame_equal(per_sm, tables[0][0])
        assert (line, reuse) == tables[0][1:]


# --------------------------------------------------------------------------------------------- warp_sched


@pytest.mark.parametrize("seed,n,sms", CASES)
@pytest.mark.parametrize("tiebreak", ["none", "monotone", "scrambled"])
def test_lowest_free_slots_matches_reference(path, seed, n, sms, tiebreak):
    start, elapse, smid = random_case(seed, n, sms)
    end = start + elapse
    rng = np.random.default_rng(seed + 100)
    tb = {"none": None, "monotone": np.arange(n) // 3, "scrambled": rng.integers(0, 5, n)}[tiebreak]
    got = slots.lowest_free_slots(smid, start, end, tiebreak=tb)
    assert got.tolist() == ref_lowest_free(smid, start, end, tb)
    assert got.tolist() == slots.lowest_free_slots_numpy(smid, start, end, tb).tolist()


def test_lowest_free_slot_reused_at_its_end_cycle(path):
    # [0,5) slot 0, [5,5) zero length reuses 0 and frees it at once, [5,9) takes 0 again, [6,7) -> 1.
    got = slots.lowest_free_slots(np.zeros(4), np.array([0, 5, 5, 6]), np.array([5, 5, 9, 7]))
    assert got.tolist() == [0, 0, 0, 1]


@pytest.mark.parametrize("seed,n,sms", CASES)
def test_sweeps_match_reference(path, seed, n, sms):
    start, elapse, smid = random_case(seed, n, sms)
    end = start + elapse
    t, active = ws.active_sweep(start, end)
    assert (t.tolist(), active.tolist()) == ref_active(start, end)
    t, busy = ws.busy_sm_sweep(smid, start, end)
    assert (t.tolist(), busy.tolist()) == ref_busy(smid, start, end)
    tn, bn = ws.busy_sm_sweep_numpy(smid, start, end)
    assert t.tolist() == tn.tolist() and busy.tolist() == bn.tolist()


@pytest.mark.parametrize("seed,n,sms", CASES)
def test_align_clocks_per_sm(path, seed, n, sms):
    start, _, smid = random_case(seed, n, sms)
    raw = (start + 10**15).astype(np.uint64)  # clock64 magnitudes; only differences matter
    lo = {int(s): min(int(raw[i]) for i in range(n) if smid[i] == s) for s in set(smid.tolist())}
    got = ws.align_clocks(raw, smid, "sm")
    assert got.dtype == np.int64
    assert got.tolist() == [int(raw[i]) - lo[int(smid[i])] for i in range(n)]


def test_count_distinct_and_dense_ids(path):
    ids = np.array([40, 7, 7, 999, 40, 3])
    assert accel.count_distinct(ids) == 4
    uniq, idx = accel.dense_ids(ids)
    assert uniq.tolist() == [3, 7, 40, 999] and uniq[idx].tolist() == ids.tolist()
    big = np.array([5, 1 << 40, 5])  # beyond the lookup table: falls back to a sort
    uniq, idx = accel.dense_ids(big)
    assert uniq.tolist() == [5, 1 << 40] and idx.tolist() == [0, 1, 0]
    assert accel.count_distinct(big) == 2


def test_empty_inputs(path):
    e = np.zeros(0, np.int64)
    assert slots.lowest_free_slots(e, e, e).tolist() == []
    t, a = ws.active_sweep(e, e)
    assert t.size == 0 and a.size == 0
    assert len(bs.artifact_metric(e, e, e)) == 0


# --------------------------------------------------------------------------------------------- switch


def test_env_var_forces_pure_numpy():
    code = "from neutrino_ae.sched import intervals as accel; print(accel.HAVE_NUMBA)"
    env = dict(os.environ, NEUTRINO_AE_PURE_NUMPY="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@needs_numba
def test_kernels_are_compiled_with_disk_cache():
    for kernel in (accel.artifact_fifo_kernel, accel.lowest_free_kernel, accel.busy_steps_kernel):
        # cache=True gives the dispatcher a FunctionCache (else a NullCache): compiled once per machine.
        dispatcher = kernel.dispatcher()
        assert dispatcher._cache is not None and type(dispatcher._cache).__name__ == "FunctionCache"


@needs_numba
def test_numba_is_imported_only_for_inputs_worth_it():
    """A small trace never imports numba (0.45 s, 100 MB); a large one does, and then everything uses it."""
    code = """if True:
        import sys
        import numpy as np
        from neutrino_ae import jit
        from neutrino_ae.sched.slots import lowest_free_slots
        small = np.arange(1000)
        lowest_free_slots(small % 7, small, small + 5)
        print("numba" in sys.modules, jit.use_numba(1000))
        big = np.arange(jit.NUMBA_MIN_ITEMS)
        lowest_free_slots(big % 7, big, big + 5)
        print("numba" in sys.modules, jit.use_numba(1000))
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "True", "True"]


@needs_numba
def test_adaptive_group_sort_gives_up_on_disorder_and_group_sorted_still_sorts():
    rng = np.random.default_rng(5)
    gidx = rng.integers(0, 4, 3000)
    near = np.arange(3000) + rng.integers(0, 3, 3000)  # nearly sorted: insertion sort finishes
    wild = rng.integers(0, 10**9, 3000)  # random: the insertion sort must give up
    counts = np.bincount(gidx, minlength=4)
    first = np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64)
    _, ok = accel.group_sort_kernel(accel.i64(near), accel.i64(gidx), first)
    _, bad = accel.group_sort_kernel(accel.i64(wild), accel.i64(gidx), first)
    assert ok and not bad
    (a, b), f, c = accel.group_sorted(gidx, 4, near, wild)
    for g in range(4):
        assert a[f[g]:f[g] + c[g]].tolist() == sorted(near[gidx == g].tolist())
        assert b[f[g]:f[g] + c[g]].tolist() == sorted(wild[gidx == g].tolist())


def test_trace_readers_same_records_on_both_paths(tmp_path, monkeypatch):
    from neutrino_ae.formats.bintrace import TraceHeader, open_trace
    from neutrino_ae.formats.bintrace_write import write_trace
    from neutrino_ae.formats.records import BLOCK_SCHED

    rng = np.random.default_rng(8)
    arr = np.zeros((50, 3, 1), dtype=BLOCK_SCHED)  # 3 warps per block: block_sched takes warp 0
    arr["lstart"] = rng.integers(10**12, 10**12 + 10**6, arr.shape).astype(np.uint64)
    arr["elapse"] = rng.integers(0, 1000, arr.shape)
    arr["smid"] = rng.choice([3, 17, 90], arr.shape)
    path = write_trace(tmp_path / "t.bin", TraceHeader((50, 1, 1), (96, 1, 1)), [("warp", arr)]) or tmp_path / "t.bin"
    got = {}
    for flag in ([False, True] if accel.HAVE_NUMBA else [False]):
        monkeypatch.setattr(jit, "HAVE_NUMBA", flag)
        b = inputs.first_warp_records(open_trace(path))
        w = ws_inputs.records_from_trace(open_trace(path))
        got[flag] = (b.lstart.tolist(), b.elapse.tolist(), b.smid.tolist(), w.lstart.tolist(), w.smid.tolist())
    first = arr[:, 0, 0]
    assert got[False][0] == (first["lstart"] - first["lstart"].min()).astype(np.int64).tolist()
    assert got[False][2] == first["smid"].tolist()
    assert all(v == got[False] for v in got.values())


def test_compiled_kernels_are_cached_outside_the_source_tree(tmp_path):
    # numba is in the test extra, so the compiled path is what this checks.
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    before = set((repo / "neutrino_ae").rglob("*.nbi"))
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NEUTRINO_AE_PURE_NUMPY")}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    code = ("import numpy as np\nfrom neutrino_ae import jit\n"
            "jit.NUMBA_MIN_ITEMS = 0\nfrom block_sched import analysis as b\n"
            "b.artifact_metric(np.arange(4), np.ones(4), np.zeros(4))\n")
    subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, check=True, timeout=300)
    assert list((tmp_path / "neutrino-ae" / "numba").rglob("*.nbi"))
    assert set((repo / "neutrino_ae").rglob("*.nbi")) == before


def test_per_sm_table_joins_slot_reuse_on_sm_id_where_the_sms_differ():
    # The estimators list the same SMs in practice; where they do not, the table is a left join on the SM id.
    from block_sched.analysis import per_sm_table
    from block_sched.estimates import FifoPerSM, SlotReuse

    fifo = FifoPerSM(np.array([2, 5, 9]), np.array([3, 1, 4]), np.array([30, 0, 40]), np.array([6, 0, 8]))
    reuse = SlotReuse(np.array([5, 9, 11]), np.array([1, 2, 7]), np.array([10, 20, 70]))
    table = per_sm_table("t", fifo, reuse).to_frame()
    expected = pd.DataFrame({"trace": "t", "smid": [2, 5, 9], "blocks": [3, 1, 4], "running_cycles": [30, 0, 40],
                             "scheduling_cycles": [6, 0, 8]}).merge(
        pd.DataFrame({"smid": [5, 9, 11], "peak_resident": [1, 2, 7], "slot_reuse_cycles": [10, 20, 70]}),
        on="smid", how="left")
    expected["ratio"] = [0.2, np.nan, 0.2]
    expected["slot_reuse_ratio"] = [np.nan, np.nan, 0.5]
    pd.testing.assert_frame_equal(table, expected, check_dtype=False)
