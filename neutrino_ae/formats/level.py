"""A trace section's level: how many threads share one unit of its buffer. One fact that the trace
files (v2 ``warpDiv``), ``probe.toml`` (``datamodel = "warp:16"``, ``level = "warp"``) and
``kernel.info`` (0/1) each spell their own way; their readers all parse it into :class:`Level`.
"""

from __future__ import annotations

import enum


class Level(enum.IntEnum):
    """Granularity of a section, valued by threads per unit (the v2 ``warpDiv``)."""

    THREAD = 1
    WARP = 32
    WAVE64 = 64

    @classmethod
    def parse(cls, value: Level | str | int) -> Level:
        if isinstance(value, Level):
            return value
        if isinstance(value, int):
            return cls(value)
        key = value.strip().lower()
        aliases = {"thread": cls.THREAD, "warp": cls.WARP, "wave64": cls.WAVE64, "wave": cls.WAVE64}
        if key not in aliases:
            raise ValueError(f"unknown section level {value!r} (expected thread or warp)")
        return aliases[key]
