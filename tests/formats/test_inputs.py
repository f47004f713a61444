"""Every reader of a bundle file refuses, with one line naming the file and before reading a byte,
what would hang it or eat the machine's memory: a FIFO, a device such as /dev/zero, and a text file
larger than its format can be (a huge sparse file costs no disk, but reading it whole would)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from exposed_latency.inputs import MAX_CSV_BYTES, read_workload_csv
from max_mem.inputs import read_max_memory
from neutrino_ae.bundle.manifest import read_manifest
from neutrino_ae.errors import InputError
from neutrino_ae.formats.bintrace import open_trace
from neutrino_ae.formats.dmat import read_dmat
from neutrino_ae.formats.eventlog import MAX_EVENT_LOG_BYTES, parse_event_log
from neutrino_ae.formats.inputs import MiB
from neutrino_ae.formats.kernelinfo import read_kernel_info, read_register_usage
from neutrino_ae.formats.probe import read_probe_toml
from neutrino_ae.formats.tensortrace import read_tensor_trace

# (file name, reader, the largest size the format accepts; None: binary, no text bound)
READERS = [
    ("event.log", parse_event_log, MAX_EVENT_LOG_BYTES),
    ("kernel.info", read_kernel_info, 64 * MiB),
    ("process.log", read_register_usage, 64 * MiB),
    ("probe.toml", read_probe_toml, 4 * MiB),
    ("tensor.trace", read_tensor_trace, 1024 * MiB),
    ("stdout.log", read_max_memory, 256 * MiB),
    ("attn.csv", read_workload_csv, MAX_CSV_BYTES),
    ("bundle.json", lambda p: read_manifest(p.parent), 256 * MiB),
    ("0.1.bin", open_trace, None),
    ("fig1.dmat", read_dmat, None),
]
IDS = [r[0] for r in READERS]


def _refused(reader, path: Path) -> str:
    """The reader's one-line refusal; a reader that blocks (on a FIFO) fails the test after 10 s."""
    def hung(*_):
        raise AssertionError(f"reader blocked on {path}")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        with pytest.raises(InputError) as info:
            reader(path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    text = str(info.value)
    assert text.startswith(str(path)) and "\n" not in text, text
    return text


@pytest.mark.parametrize("name, reader, limit", READERS, ids=IDS)
def test_a_fifo_is_refused_without_blocking(tmp_path, name, reader, limit):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    assert "not a regular file" in _refused(reader, fifo)


@pytest.mark.parametrize("name, reader, limit", [r for r in READERS if r[2] is not None],
                         ids=[r[0] for r in READERS if r[2] is not None])
def test_a_huge_sparse_text_file_is_refused_before_reading(tmp_path, name, reader, limit):
    big = tmp_path / name
    with open(big, "wb") as fh:
        fh.truncate(limit + 1)  # sparse: no disk used, and no reader may read it whole
    assert f"is {limit + 1:,} bytes, more than" in _refused(reader, big)


def test_a_device_is_refused(tmp_path):
    for reader in (parse_event_log, read_workload_csv, read_max_memory):
        assert "not a regular file" in _refused(reader, Path("/dev/zero"))
