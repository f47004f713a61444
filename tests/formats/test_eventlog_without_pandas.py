"""event.log is read with numpy alone (issue 24: a per-figure script's first line comes before pandas);
the DataFrames are built on first use and hold what they held before."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from line_first import REPO

from neutrino_ae.formats.eventlog import parse_text

LOG = ("[pid] 77\n"
       "[mem] cuMemAlloc_v2 0 dptr 7fdf78000000 bytesize 33554432\n"
       "[exec] 1000 param 7f0000000000 \n[exec] grid 8 1 1 block 64 1 1 shared 0\n[exec] probe-mem 4096 (bytes)\n"
       "[exec] 2000 param 7f0000000000 \n[exec] grid 8 1 1 block 64 1 1 shared 0\n"
       "[exec] 3000 param 7f0000000000 \n[exec] probe-mem 8192 (bytes)\n[exec] save /x.bin size 1")  # cut short


def test_reading_an_event_log_and_its_probe_memory_imports_no_pandas(tmp_path):
    (tmp_path / "event.log").write_text(LOG)
    code = ("import sys; from neutrino_ae.formats.tracedir import TraceDir; log = TraceDir(sys.argv[1]).event_log(); "
            "print(log.probe_mem().tolist(), len(log), 'pandas' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    # The third launch is cut (no newline at the end): left out of the complete launches.
    assert proc.stdout.split() == ["[4096.0,", "nan]", "3", "False"]


def test_probe_memory_is_the_complete_launches_column():
    log = parse_text(LOG)
    assert log.cut_launch == 2
    want = log.complete_launches()["probe_mem"].to_numpy(dtype=float, na_value=np.nan)
    np.testing.assert_array_equal(log.probe_mem(), want)
    np.testing.assert_array_equal(log.probe_mem(complete=False), [4096, np.nan, 8192])
    assert log.launches["probe_mem"].dtype == "Int64" and log.launches["save_path"].dtype == object
    assert log.mem["bytesize"].tolist() == [33554432] and log.mem["op"].tolist() == ["cuMemAlloc_v2"]
