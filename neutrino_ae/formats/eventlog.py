"""``event.log``: the hooked driver's text log. Parser (:func:`parse_event_log`) and writer.

Lines the analyses read (anything else, e.g. ``[info]``, ``[mod]``, ``[jit]``, is skipped)::

    [pid] 1860576
    [cmd] 26 python block_sched/raw.py          number = bytes of /proc/<pid>/cmdline (NUL-terminated args)
    [benchmark] ENABLED L2 Flush Size <bytes>
    [mem] cuMemAlloc_v2 0 dptr 7fdf78000000 bytesize 33554432      op, return code, pointer (hex), bytes
    [exec] <launch-ns> param 7fdf78000000 7fdf7a000000 ...          starts a launch
    [exec] grid 32768 1 1 block 128 1 1 shared 0
    [exec] grid <gridSize> warp <warps> probe <bytes> total <bytes>  ("block <blockSize>" for thread level)
    [exec] probe-mem <bytes> (bytes)
    [exec] save <path>.bin size <bytes>
    [exec] prologue <ms> kernel <ms> epilogue <ms> ratio <r>
    [benchmark] prologue <ms> kernel <ms> epilogue <ms> original <ms> impact <r> <rc>
    [exec] failed ...                                               the probed launch failed
    [analyze] subproc <python> <hook.py> <trace.bin>

Grouping rule: a launch starts at a ``param`` line, or at a ``grid .. block .. shared`` line when the
current launch already has one (or none is open). Every other launch line belongs to the latest
launch before it; lines before the first launch are ignored. If a launch holds the same kind of
line twice, the first one wins.

Robustness: bytes are decoded as UTF-8 with replacement; lines with unknown tags or malformed
numbers are skipped; a final line without its newline is treated as truncated and dropped (its text
is kept in :attr:`EventLog.truncated_tail`, so the loss is visible).

Writer conventions (our choice where the log does not say): ``probe`` in the grid/warp line is the
bytes saved per unit summed over saving probes and ``total = gridSize * units * probe``;
``ratio = (prologue + kernel + epilogue) / kernel``; ``impact = kernel / original``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from neutrino_ae.atomic import write_text

LAUNCH_COLUMNS = [
    "launch", "time_ns", "params", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared",
    "probe_level", "probe_units", "probe_bytes", "total_bytes", "probe_mem", "save_path", "save_size",
    "prologue_ms", "kernel_ms", "epilogue_ms", "ratio", "original_ms", "impact", "rc", "failed",
]
MEM_COLUMNS = ["op", "rc", "dptr", "bytesize"]


def _fmt_ms(x: float) -> str:
    return f"{float(x):.6f}"


class EventLogWriter:
    """Build an ``event.log`` line by line, in the format the parser reads."""

    def __init__(self) -> None:
        self._lines: list[str] = []

    def line(self, raw: str) -> EventLogWriter:
        if "\n" in raw:
            raise ValueError("EventLogWriter.line takes one line without newline")
        self._lines.append(raw)
        return self

    def pid(self, n: int) -> EventLogWriter:
        return self.line(f"[pid] {int(n)}")

    def cmd(self, argv: Sequence[str]) -> EventLogWriter:
        # Neutrino prints the byte length of /proc/self/cmdline (each arg NUL-terminated).
        n = sum(len(a.encode()) + 1 for a in argv)
        return self.line(f"[cmd] {n} {' '.join(argv)}")

    def l2_flush(self, nbytes: int) -> EventLogWriter:
        return self.line(f"[benchmark] ENABLED L2 Flush Size {int(nbytes)}")

    def mem_alloc(self, dptr: int, bytesize: int, rc: int = 0) -> EventLogWriter:
        return self.line(f"[mem] cuMemAlloc_v2 {int(rc)} dptr {int(dptr):x} bytesize {int(bytesize)}")

    def launch(
        self,
        time_ns: int,
        params: Sequence[int],
        grid: Sequence[int],
        block: Sequence[int],
        shared: int = 0,
        probe_bytes: int | None = None,
        probe_mem: int | None = None,
        save: tuple[str, int] | None = None,
        timing: tuple[float, float, float] | None = None,
        benchmark: tuple[float, float, float, float] | None = None,
        failed: bool = False,
        probe_level: str = "warp",
    ) -> EventLogWriter:
        """Lines of one probed launch. ``probe_bytes`` = bytes per unit (``probe_level`` unit)."""
        gx, gy, gz = (int(v) for v in grid)
        bx, by, bz = (int(v) for v in block)
        self.line(f"[exec] {int(time_ns)} param" + "".join(f" {int(p):x}" for p in params))
        self.line(f"[exec] grid {gx} {gy} {gz} block {bx} {by} {bz} shared {int(shared)}")
        if probe_bytes is not None:
            grid_size, block_size = gx * gy * gz, bx * by * bz
            if probe_level == "warp":
                units, word = math.ceil(block_size / 32), "warp"
            elif probe_level == "thread":
                units, word = block_size, "block"
            else:
                raise ValueError(f"probe_level must be 'warp' or 'thread', got {probe_level!r}")
            total = grid_size * units * int(probe_bytes)
            self.line(f"[exec] grid {grid_size} {word} {units} probe {int(probe_bytes)} total {total}")
        if probe_mem is not None:
            self.line(f"[exec] probe-mem {int(probe_mem)} (bytes)")
        if failed:
            self.line("[exec] failed to launch probed kernel")
            return self
        if save is not None:
            self.line(f"[exec] save {save[0]} size {int(save[1])}")
        if timing is not None:
            pro, ker, epi = (float(v) for v in timing)
            ratio = (pro + ker + epi) / ker if ker else float("nan")
            self.line(f"[exec] prologue {_fmt_ms(pro)} kernel {_fmt_ms(ker)} epilogue {_fmt_ms(epi)} "
                      f"ratio {ratio:.6f}")
        if benchmark is not None:
            pro, ker, epi, orig = (float(v) for v in benchmark)
            impact = ker / orig if orig else float("nan")
            self.line(f"[benchmark] prologue {_fmt_ms(pro)} kernel {_fmt_ms(ker)} epilogue {_fmt_ms(epi)} "
                      f"original {_fmt_ms(orig)} impact {impact:.6f} 0")
        return self

    def text(self) -> str:
        return "".join(line + "\n" for line in self._lines)

    def write(self, path: str | os.PathLike[str]) -> Path:
        return write_text(path, self.text())
