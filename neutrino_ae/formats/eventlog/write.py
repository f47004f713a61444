"""``event.log`` writer: :class:`EventLogWriter` prints the lines the reader (:mod:`.eventlog`) parses,
as the hook driver prints them (``fprintf`` formats: the param line ends with a space, two spaces
after ``warp``, six decimals for times).

Conventions (our choice where the log does not say): ``probe`` in the grid/warp line is the
bytes saved per unit summed over saving probes and ``total = gridSize * units * probe`` (Neutrino prints
one such line per probe); ``ratio = (prologue + kernel + epilogue) / kernel``; ``impact = kernel /
original``; a failed launch prints ``[exec] failed 701`` (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, what a
probed kernel's extra registers can cause) and no save or timing lines.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from neutrino_ae.atomic import write_text


def _fmt_ms(x: float) -> str:
    return f"{float(x):.6f}"


_FAILED_RC = 701  # CUresult printed for a failed launch: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES


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
        # As Neutrino prints it: "%lld param " then "%llx " per argument, so the line ends with a space.
        self.line(f"[exec] {int(time_ns)} param " + "".join(f"{int(p):x} " for p in params))
        self.line(f"[exec] grid {gx} {gy} {gz} block {bx} {by} {bz} shared {int(shared)}")
        if probe_bytes is not None:
            grid_size, block_size = gx * gy * gz, bx * by * bz
            if probe_level == "warp":
                units, word = math.ceil(block_size / 32), "warp "  # Neutrino's "warp  %zu": two spaces
            elif probe_level == "thread":
                units, word = block_size, "block"
            else:
                raise ValueError(f"probe_level must be 'warp' or 'thread', got {probe_level!r}")
            total = grid_size * units * int(probe_bytes)
            self.line(f"[exec] grid {grid_size} {word} {units} probe {int(probe_bytes)} total {total}")
            # The hook driver always follows the probe lines with the launch's probe memory.
            probe_mem = total if probe_mem is None else probe_mem
        if probe_mem is not None:
            self.line(f"[exec] probe-mem {int(probe_mem)} (bytes)")
        if failed:
            self.line(f"[exec] failed {_FAILED_RC}")
            return self
        self.line("[exec] succeed 0")
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
