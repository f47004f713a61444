"""Fig. 11 on the sample bundle is physically possible (issue 25): no probe buffer plus the workload's own
peak exceeds the modelled GPU's memory (it used to give the dmat probe 509 GiB on a 40 GB A100). The
dmat buffer of a launch with more records than fit is sized to what the workload leaves free."""

from __future__ import annotations

import pytest
from undrawn_analysis import leave_figures_undrawn

from neutrino_ae.bundle.context import open_bundle
from neutrino_ae.formats.eventlog import parse_event_log
from neutrino_ae.run import runner

GIB = 2**30
A100_40GB = 40 * GIB  # the device the sample models (neutrino_ae/sample/device.py: A100-SXM4-40GB)


@pytest.fixture(scope="module")
def bundle(tiny_bundle):
    return open_bundle(tiny_bundle)


def test_every_probe_buffer_and_its_workload_fit_in_the_gpu(bundle):
    truth = bundle.ground_truth("max_mem")
    assert len(truth) == 8
    for model, probes in truth.items():
        for probe, t in probes.items():
            for sub, s in t["subs"].items():
                assert s["max_probe_mem"] + s["max_memory"] <= A100_40GB, (model, probe, sub)


def test_the_largest_dmat_buffers_are_sized_to_the_free_memory_not_dropped(bundle):
    truth = bundle.ground_truth("max_mem")
    # The launches that need more than the device are still probed, with the free memory's worth of records.
    lm_head = truth["llama8b-bs256"]["dmat"]["subs"]["lm_head"]
    assert 0.75 * A100_40GB < lm_head["max_probe_mem"] + lm_head["max_memory"] <= A100_40GB
    assert truth["resnet-bs32"]["dmat"]["max_probe_mem"] < GIB  # small launches keep every record


def test_event_logs_agree_with_the_capped_buffers(bundle):
    folder = bundle.path("max_mem") / "llama8b-bs256" / "dmat" / "lm_head"
    (trace_dir,) = [p for p in folder.iterdir() if p.is_dir()]
    launches = parse_event_log(trace_dir / "event.log").launches
    assert len(launches) >= 2
    units = launches["grid_x"] * launches["grid_y"] * launches["grid_z"] * \
        launches["block_x"] * launches["block_y"] * launches["block_z"]
    assert (launches["probe_bytes"] * units == launches["probe_mem"]).all()
    assert (launches["probe_bytes"] % 16 == 0).all() and (launches["probe_mem"] < A100_40GB).all()


def test_fig11_reads_physically_possible_numbers(bundle, tmp_path, monkeypatch):
    leave_figures_undrawn(monkeypatch)  # the summary's numbers are read, not the figure
    res = runner.run_section("max_mem", bundle, tmp_path, force=True)
    values = {r["key"]: r["value"] for r in res.summary}
    for key, value in values.items():
        if key.endswith(".probe_mem_max"):
            assert value <= A100_40GB, key
