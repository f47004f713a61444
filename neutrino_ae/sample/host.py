"""Host-side costs of one probed launch (event.log timing lines, Fig. 12 prologue/epilogue).

prologue = ``prologue_fixed_ms`` + probe buffer allocation/memset (``probe_bytes / memset_gbps``)
           [+ the counting pass for ``count`` datamodels, added by the caller]
epilogue = ``epilogue_fixed_ms`` + device-to-host copy (``probe_bytes / pcie_gbps``)
           + writing the trace file (``probe_bytes / disk_gbps``)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class HostModel:
    prologue_fixed_ms: float = 0.040
    memset_gbps: float = 1200.0
    epilogue_fixed_ms: float = 0.025
    pcie_gbps: float = 24.0
    disk_gbps: float = 1.6

    def prologue_ms(self, probe_bytes: int) -> float:
        return self.prologue_fixed_ms + probe_bytes / (self.memset_gbps * 1e6)

    def epilogue_ms(self, probe_bytes: int, saved: bool = True) -> float:
        copy = probe_bytes / (self.pcie_gbps * 1e6)
        write = probe_bytes / (self.disk_gbps * 1e6) if saved else 0.0
        return self.epilogue_fixed_ms + copy + write

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class DeviceAllocator:
    """cuMemAlloc-like bump allocator: 2 MiB-granular segments (hence 64 KiB-aligned pointers)."""

    GRANULE = 2 << 20

    def __init__(self, base: int) -> None:
        if base % self.GRANULE:
            raise ValueError("allocator base must be 2 MiB aligned")
        self._next = base

    def alloc(self, nbytes: int) -> int:
        ptr = self._next
        self._next += -(-max(nbytes, 1) // self.GRANULE) * self.GRANULE
        return ptr
