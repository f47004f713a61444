"""The ``event.log`` lines the reader knows, on both Neutrino branches: each kind's tag (what its
lines start with), its exact grammar (a regex over newline-led lines: the reference), and its
canonical skeletons (the line with its numbers removed, as Neutrino and our earlier writer space it)
that let :func:`.scan.parse_numbers` read a whole kind without the regex.

The artifact branch tags init ``[pid]``/``[cmd]`` and the hook's subprocess ``[analyze]``; today's
Neutrino (main) prints ``[init] pid``/``[init] cmd`` and ``[callback]``. Both are read.
"""

from __future__ import annotations

import re

import numpy as np

from neutrino_ae.formats.eventlog.scan import DIGITS, skeleton_shapes

_INT = rb"(\d{1,19})"  # 20+ digits cannot be a 64-bit value: such lines are skipped as malformed
_NUM = rb"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf))"
_EOL = rb"[ \t\r]*(?=\n)"

P_PARAM = b"[exec] "  # followed by a digit
P_GRID = b"[exec] grid "
P_PROBE_MEM = b"[exec] probe-mem "
P_SAVE = b"[exec] save "
P_TIMING = b"[exec] prologue "
P_FAILED = b"[exec] failed"
P_BENCH = b"[benchmark] prologue "

RE_PARAM = re.compile(rb"\n\[exec\] " + _INT + rb" param((?: +[0-9a-fA-F]{1,16})*)" + _EOL)
RE_GRID = re.compile(
    rb"\n\[exec\] grid (?:" + rb" ".join([_INT] * 3) + rb" block " + rb" ".join([_INT] * 3) + rb" shared " + _INT
    + rb"|" + _INT + rb" +(warp|block) +" + _INT + rb" +probe +" + _INT + rb" +total +" + _INT + rb")" + _EOL
)
RE_PROBE_MEM = re.compile(rb"\n\[exec\] probe-mem " + _INT + rb"(?: \(bytes\))?" + _EOL)
RE_SAVE = re.compile(rb"\n\[exec\] save (\S(?:[^\n]*\S)?) size " + _INT + _EOL)
RE_TIMING = re.compile(rb"\n\[exec\] prologue " + _NUM + rb" kernel " + _NUM + rb" epilogue " + _NUM
                       + rb" ratio " + _NUM + _EOL)
RE_BENCH = re.compile(rb"\n\[benchmark\] prologue " + _NUM + rb" kernel " + _NUM + rb" epilogue " + _NUM
                      + rb" original " + _NUM + rb" impact " + _NUM + rb"(?: (-?\d{1,9}))?" + _EOL)
RE_MEM = re.compile(rb"\n\[mem\] (\S+) (-?\d{1,9}) dptr (?:0x)?([0-9a-fA-F]{1,16})(?: bytesize " + _INT
                    + rb")?" + _EOL)
# "[pid] N" / "[cmd] len argv" (artifact branch); "[init] pid N" / "[init] cmd len argv" (main).
RE_PID = re.compile(rb"\n\[(?:pid\]|init\] pid) " + _INT + _EOL)
RE_CMD = re.compile(rb"\n\[(?:cmd\]|init\] cmd) \d+ ?([^\n]*)(?=\n)")
RE_L2 = re.compile(rb"\n\[benchmark\] ENABLED L2 Flush Size " + _INT + _EOL)
# The analyze hook's subprocess: "[analyze] subproc .." (artifact branch), "[callback] subproc .." (main).
RE_ANALYZE = re.compile(rb"\n\[(?:analyze|callback)\] ([^\n]*)(?=\n)")

# The rare kinds: their regexes run over just the lines with these tags.
P_MEM = b"[mem] "
P_PID = b"[pid] "  # artifact branch
P_CMD = b"[cmd] "  # artifact branch
P_INIT = b"[init] "  # main: "[init] pid", "[init] cmd"
P_L2 = b"[benchmark] ENABLED L2 Flush Size "
P_ANALYZE = b"[analyze] "  # artifact branch
P_CALLBACK = b"[callback] "  # main


# Canonical skeletons per kind, and the number of values each shape carries alongside. Grid lines:
# the launch's dims, then the probe line at warp level (Neutrino's "warp  %zu", and with one space),
# and at thread level.
GRID_SHAPES = skeleton_shapes([b"[exec] grid 1 1 1 block 1 1 1 shared 1", b"[exec] grid 1 warp  1 probe 1 total 1",
                               b"[exec] grid 1 warp 1 probe 1 total 1", b"[exec] grid 1 block 1 probe 1 total 1"],
                              DIGITS)
GRID_COUNTS = (7, 4, 4, 4)
GRID_LEVELS = np.array([None, "warp", "warp", "thread"], dtype=object)
PROBE_MEM_SHAPES = skeleton_shapes([b"[exec] probe-mem 1 (bytes)", b"[exec] probe-mem 1"], DIGITS)
TIMING_SHAPES = skeleton_shapes([b"[exec] prologue 1 kernel 1 epilogue 1 ratio 1"], DIGITS + b".")
BENCH_SHAPES = skeleton_shapes([b"[benchmark] prologue 1 kernel 1 epilogue 1 original 1 impact 1 1",
                                b"[benchmark] prologue 1 kernel 1 epilogue 1 original 1 impact 1"], DIGITS + b".")
