"""Warp slots, active-warp / busy-SM sweeps and tail detection (Fig. 13) on hand-built cases."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pytest
from undrawn_analysis import leave_figures_undrawn, undrawn

from neutrino_ae.errors import InputError
from neutrino_ae.formats.bintrace import TraceHeader
from neutrino_ae.formats.bintrace_write import write_trace
from neutrino_ae.formats.records import WARP_SCHED
from neutrino_ae.report.section import driver
from neutrino_ae.sched import slots as sched_slots
from warp_sched import SECTION, analysis, fig13a, fig13cd, inputs

# (start, end): A(0,10) B(0,5) C(5,12) D(10,20) E(11,13)
# A->0, B->1, C at 5: slot1 freed at 5 -> 1, D at 10: slot0 freed at 10 -> 0, E at 11: both busy -> 2
STARTS = np.array([0, 0, 5, 10, 11])
ENDS = np.array([10, 5, 12, 20, 13])


def _at(times, values, t):
    return int(values[np.searchsorted(times, t, side="right") - 1])


def test_lowest_free_slot_by_hand():
    assert sched_slots.lowest_free_slots(np.zeros(5), STARTS, ENDS).tolist() == [0, 1, 1, 0, 2]


def test_slots_per_group_input_order_scrambled_and_growth():
    # Interleave a second group (id 9) and shuffle: each group is solved independently.
    perm = np.array([3, 0, 4, 2, 1])
    group = np.r_[np.zeros(5), np.full(3, 9)]
    start = np.r_[STARTS[perm], [7, 7, 8]]
    end = np.r_[ENDS[perm], [9, 30, 9]]
    slots = sched_slots.lowest_free_slots(group, start, end)
    assert slots[:5].tolist() == [[0, 1, 1, 0, 2][i] for i in perm]
    assert slots[5:].tolist() == [0, 1, 2]  # 7->0, 7->1, 8: both busy -> 2
    # 20 simultaneous intervals need 20 slots (more than the initial table width).
    assert sched_slots.lowest_free_slots(np.zeros(20), np.zeros(20), np.full(20, 5)).tolist() == list(range(20))


def test_active_sweep_by_hand():
    t, n = analysis.active_sweep(STARTS, ENDS)
    assert t.tolist() == [0, 5, 10, 11, 12, 13, 20]
    assert n.tolist() == [2, 2, 2, 3, 2, 1, 0]


# SM 7 busy [0,10)+[10,20) (back to back: no idle flicker), SM 9 [5,8) and [12,15), SM 11 [2,30).
SM = np.array([7, 7, 9, 9, 11])
S = np.array([0, 10, 5, 12, 2])
E = np.array([10, 20, 8, 15, 30])


def test_busy_sm_sweep_by_hand():
    t, busy = analysis.busy_sm_sweep(SM, S, E)
    expected = {0: 1, 1: 1, 2: 2, 5: 3, 7: 3, 8: 2, 10: 2, 12: 3, 14: 3, 15: 2, 20: 1, 29: 1, 30: 0}
    assert {k: _at(t, busy, k) for k in expected} == expected
    # Integral = SM-cycles busy: 20 + 6 + 28 = 54.
    assert analysis.integrate_step(t, busy, 0, 30) == 54


def test_tail_detection_constructed():
    t, busy = analysis.busy_sm_sweep(SM, S, E)
    tail = analysis.find_tail(t, busy, n_sms=3, threshold=0.9)  # needs all 3 busy: last such interval [12,15)
    assert (tail.tail_start, tail.kernel_end, tail.reached) == (15, 30, True)
    assert tail.tail_fraction == pytest.approx(0.5)
    tail = analysis.find_tail(t, busy, n_sms=3, threshold=0.5)  # needs >= 1.5 -> 2 busy: last [15,20)
    assert tail.tail_start == 20 and tail.tail_fraction == pytest.approx(10 / 30)
    tail = analysis.find_tail(t, busy, n_sms=4, threshold=1.0)  # never 4 busy: whole kernel is tail
    assert tail.tail_start == 0 and not tail.reached


def test_last_wave_tail_by_hand():
    # Last ends: SM 7 -> 20, SM 9 -> 15, SM 11 -> 30. First SM done at 15; tail 15 of 30 cycles.
    # Remaining busy time after 15: 5 + 0 + 15 = 20 of 3 x 15 -> idle 25/45.
    wave = analysis.last_wave_tail(SM, S, E)
    assert (wave.start, wave.end) == (15, 30)
    assert wave.fraction == pytest.approx(0.5) and wave.idle_sm_fraction == pytest.approx(25 / 45)


def test_clock_alignment_per_sm_and_global():
    lstart = np.array([10**12 + 100, 10**12 + 150, 10**12 + 1000, 10**12 + 1010], dtype=np.uint64)
    smid = np.array([1, 1, 2, 2])
    assert analysis.align_clocks(lstart, smid, "sm").tolist() == [0, 50, 0, 10]
    assert analysis.align_clocks(lstart, smid, "global").tolist() == [0, 50, 900, 910]


def _warp_trace(path):
    """grid 3, block 64 (2 warps). Block 0 and 2 on SM 4, block 1 on SM 6."""
    arr = np.zeros((3, 2, 1), dtype=WARP_SCHED)
    base = 5 * 10**11
    arr[0, :, 0] = [(base + 0, 100, 4), (base + 0, 40, 4)]
    arr[1, :, 0] = [(base + 10, 50, 6), (base + 10, 50, 6)]
    arr[2, :, 0] = [(base + 40, 30, 4), (base + 45, 30, 4)]
    write_trace(path, TraceHeader((3, 1, 1), (64, 1, 1)), [("warp", arr)])
    return path


def test_timeline_slots_from_trace(tmp_path):
    rec = inputs.load_warp_records(_warp_trace(tmp_path / "w.bin"))
    # Default alignment is per SM: SM 6's only block starts at its own origin.
    assert rec.lstart.tolist() == [0, 0, 0, 0, 40, 45] and rec.block.tolist() == [0, 0, 1, 1, 2, 2]
    tab = analysis.timeline_table(rec, [4]).sort_values(["block", "warp"])
    # SM 4: b0w0 [0,100)->0, b0w1 [0,40)->1, b2w0 [40,70): slot1 free at 40 -> 1, b2w1 [45,75) -> 2
    assert tab["slot"].tolist() == [0, 1, 1, 2]
    assert tab["start"].tolist() == [0, 0, 40, 45]


def test_fig13a_cli(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NEUTRINO_AE_NO_FORK", "1")  # drawn here, not in a fork that imports matplotlib anew
    out = tmp_path / "out"
    assert fig13a.main([str(_warp_trace(tmp_path / "w.bin")), "--out", str(out)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    # A raster timeline is saved as PNG only (an SVG would embed the same pixels).
    assert last == str(out / "fig13a.png") and (out / "fig13a.png").is_file() and not (out / "fig13a.svg").exists()
    doc = json.loads((out / "fig13a.json").read_text())
    assert doc["sms"][0] == 4  # SM 4 hosted the most blocks


def test_fig13cd_from_csv_and_npz(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NEUTRINO_AE_NO_FORK", "1")  # drawn here, not in a fork that imports matplotlib anew
    df = pd.DataFrame({"lstart": S + 1000, "elapse": E - S, "smid": SM})
    csv = tmp_path / "tail.csv"
    df.to_csv(csv, index=False)
    out = tmp_path / "out"
    assert fig13cd.main([str(csv), "--out", str(out), "--clock-align", "global"]) == 0
    capsys.readouterr()
    doc = json.loads((out / "fig13cd.json").read_text())
    assert doc["tail_start_cycle"] == 15 and doc["kernel_cycles"] == 30
    assert doc["tail_fraction"] == pytest.approx(0.5)
    assert doc["sm_idle_fraction"] == pytest.approx(1 - 54 / 90)
    assert doc["last_wave_tail_start_cycle"] == 15 and doc["last_wave_tail_fraction"] == pytest.approx(0.5)
    for stem in ("fig13c", "fig13d", "fig13d-sub"):
        assert (out / f"{stem}.png").is_file()

    leave_figures_undrawn(monkeypatch)  # from here on the numbers and errors are read, not the figures
    npz = tmp_path / "tail.npz"
    np.savez(npz, lstart=S, elapse=E - S, smid=SM)
    res = driver.analyze_paths(SECTION, [npz], tmp_path / "out2",
                               {"figure": "fig13cd", "tail_threshold": 0.5, "clock_align": "global"})
    assert res.data["tail_start_cycle"] == 20

    bad = tmp_path / "bad.npz"
    np.savez(bad, lstart=np.array([object()], dtype=object), elapse=[1], smid=[0])
    with pytest.raises(InputError, match="object arrays"):
        driver.analyze_paths(SECTION, [bad], tmp_path / "out3", {"figure": "fig13cd"})
    missing = tmp_path / "missing.csv"
    pd.DataFrame({"lstart": [1], "smid": [0]}).to_csv(missing, index=False)
    with pytest.raises(InputError, match="missing column"):
        driver.analyze_paths(SECTION, [missing], tmp_path / "out3", {"figure": "fig13cd"})


class _Trap:
    """Unpickling this creates a marker file: proof that the loader ran pickle."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_pickle_refused_without_loading(tmp_path, capsys):
    marker = tmp_path / "was_unpickled"
    pkl = tmp_path / "tmp.pkl"
    pkl.write_bytes(pickle.dumps(_Trap(marker)))
    assert fig13cd.main([str(pkl), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {pkl}: refusing to load a pickle")
    assert "arbitrary code" in err[0] and ".npz" in err[0] and "lstart, elapse, smid" in err[0]
    assert not marker.exists()


def test_peak_resident_blocks_by_hand():
    # SM 1: block 0 spans [0,12) (two warps), block 1 starts exactly at 12 -> never 2 at once.
    # SM 2: blocks 2 [5,8) and 3 [6,9) overlap -> 2.
    smid = np.array([1, 1, 1, 2, 2])
    block = np.array([0, 0, 1, 2, 3])
    start = np.array([0, 0, 12, 5, 6])
    end = np.array([10, 12, 20, 8, 9])
    assert analysis.peak_resident_blocks(smid, block, start, end) == 2
    assert analysis.peak_resident_blocks(smid[:3], block[:3], start[:3], end[:3]) == 1


def test_paper_bundle_layout_draws_13ab_and_reports_refused_pickle(tmp_path):
    # The paper's bundle: exclusive_sched/result/*.bin, shared_sched/result/*.bin and a tmp.pkl for 13c/d.
    from neutrino_ae.run import runner

    root = tmp_path / "bundle"
    for name, t in (("exclusive_sched", "2.756086"), ("shared_sched", "3.201079")):
        (root / "warp_sched" / name / "result").mkdir(parents=True)
        _warp_trace(root / "warp_sched" / name / "result" / f"{t}.bin")
    marker = tmp_path / "was_unpickled"
    (root / "warp_sched" / "tmp.pkl").write_bytes(pickle.dumps(_Trap(marker)))
    res = runner.run_section("warp_sched", root, tmp_path / "out")
    assert {"fig13a.png", "fig13b.png"} <= set(res.files) and "fig13c.png" not in res.files
    skipped = res.data["skipped"]["fig13cd"]
    assert skipped.startswith(f"{root / 'warp_sched' / 'tmp.pkl'}: refusing to load a pickle")
    assert "Fig. 13c/d skipped" in res.text and not marker.exists()
    doc = json.loads((tmp_path / "out" / "warp_sched" / "warp_sched.json").read_text())
    assert doc["fig13cd"] == {"skipped": skipped}
    # Both traces are identical here, so shared/exclusive makespan is exactly 1.
    assert {r["key"]: r["value"] for r in res.summary}["shared_vs_exclusive_makespan"] == 1.0


def test_missing_tail_folder_is_reported_not_fatal(tmp_path, monkeypatch):
    leave_figures_undrawn(monkeypatch)  # what is skipped is read, not the figures
    for name in ("exclusive_sched", "shared_sched"):
        (tmp_path / "warp_sched" / name / "result").mkdir(parents=True)
        _warp_trace(tmp_path / "warp_sched" / name / "result" / "1.0.bin")
    res = driver.analyze_paths(SECTION, [tmp_path], tmp_path / "out")
    tail = tmp_path / "warp_sched" / "tail"
    assert res.data["skipped"]["fig13cd"] == f"{tail}: missing, no tail-effect trace for Fig. 13c/d"


def test_step_envelope_holds_each_columns_min_and_max():
    rng = np.random.default_rng(4)
    t = np.cumsum(rng.integers(1, 5, 5000))
    v = rng.integers(0, 100, t.size)
    for lo, hi, cols in ((int(t[10]) + 1, int(t[-20]), 37), (int(t[0]), int(t[-1]), 1000)):
        _check_envelope(t, v, lo, hi, cols)


def test_a_step_curve_drawn_as_an_envelope_is_raster_and_saved_as_png_only():
    from neutrino_ae.report.figures import style
    from warp_sched.figures import STEP_COLUMNS, draw_step

    for steps, raster in ((STEP_COLUMNS, False), (STEP_COLUMNS + 1, True)):
        t = np.arange(steps, dtype=np.int64) * 3
        v = np.arange(steps, dtype=np.int64) % 7
        with style.style_context():
            fig = style.tight_figure(6.0, 3.0)
            draw_step(fig.subplots(), t, v, 0, int(t[-1]) + 1, "C0", 1, "curve", fill_alpha=0.2)
        assert style.has_raster_content(fig) is raster, steps


def _check_envelope(t, v, lo, hi, cols):
    from warp_sched.figures import step_envelope

    edges, vmin, vmax = step_envelope(t, v, lo, hi, cols)
    assert edges[0] == lo and edges[-1] == hi and len(vmin) == len(vmax) == cols
    for c in range(cols):  # brute force: the value at every cycle of the column
        cycles = np.arange(edges[c], max(edges[c + 1], edges[c] + 1))
        vals = v[np.searchsorted(t, cycles, side="right") - 1]
        assert (vmin[c], vmax[c]) == (vals.min(), vals.max()), c


def test_fig13a_and_13b_share_one_x_range(tiny_bundle, tmp_path, monkeypatch):
    from warp_sched import figures

    drawn = {}
    real = figures.timeline_figure

    def spy(arrays, params):
        fig = real(arrays, params)
        drawn[params["title"][:8]] = ({ax.get_xlim() for ax in fig.axes}, int(arrays["end"].max()))
        return fig

    monkeypatch.setattr(figures, "timeline_figure", spy)
    # Only the timelines are drawn (the spy reads them); Fig. 13c/d are left undrawn.
    real_draw = driver.draw
    monkeypatch.setattr(driver, "draw", lambda job: real_draw(job) if job.builder.endswith(":timeline_figure")
                        else undrawn(job))
    driver.analyze_paths(SECTION, [tiny_bundle], tmp_path / "out")
    (lims_a, end_a), (lims_b, end_b) = drawn["Fig. 13a"], drawn["Fig. 13b"]
    assert len(lims_a) == 1 and lims_a == lims_b  # every panel of both figures: one range
    assert end_a != end_b and max(lims_a)[1] >= max(end_a, end_b)  # the longer trace decides it
