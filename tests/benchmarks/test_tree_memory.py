"""benchmarks/tree_memory.py: the whole tree's memory, where wait4's ru_maxrss sees one process."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.tree_memory import TreeMemory

# A parent and a forked child each touch 60 MB of their own, then wait for stdin to close.
_TWO = """
import os, sys
pid = os.fork()
block = bytearray(60_000_000)
for i in range(0, len(block), 4096):
    block[i] = 1
os.write(1, b"r")
sys.stdin.read()
if pid:
    os.waitpid(pid, 0)
"""


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="needs Linux /proc smaps_rollup")
def test_the_tree_sums_a_parent_and_its_forked_child_each_counted_once():
    proc = subprocess.Popen([sys.executable, "-c", _TWO], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    with TreeMemory(proc.pid, interval=0.01) as mem:
        assert proc.stdout.read(2) == b"rr"  # both have touched their 60 MB
        time.sleep(0.1)  # a few samples with both alive
        proc.stdin.close()
        proc.wait(10)
    assert mem.peak_bytes >= 120_000_000
    assert mem.peak_bytes < 200_000_000  # PSS: the interpreter's shared pages are not counted twice
