"""``probe.toml``: the probe a trace was collected with (a copy sits in every trace directory).

Shape of a Neutrino probe file::

    analyze_hook = "block_sched.py"      # optional, top level
    [block_sched]                         # one table per probe, in file order
    position = "kernel"
    datamodel = "warp:16"                 # only probes that save records have one
    before = \"\"\"<PTX snippet>\"\"\"
    after = \"\"\"<PTX snippet>\"\"\"

``datamodel`` is ``<level>:<bytes>`` or ``<level>:<bytes>:count`` (a counting pass sizes the
buffer; unfilled slots keep the hook driver's zero fill). The saving probes, in file order, are the
sections of every ``result/*.bin`` of the trace, so :attr:`ProbeSpec.levels` is what ``open_trace``
needs. That is the artifact branch's form, written by its CLI as ``toml.dumps`` of the tool file.

Today's Neutrino (main branch) compiles its Python DSL tools and writes the compiled form::

    regs = 5
    CALLBACK = "block_sched_callback.py"  # optional; dynamic = true for count-sized maps
    [probe.<name>]                        # level, pos, before/after: where PTX is inserted
    [map.<name>]                          # one per saved record buffer = one trace section
    level = "warp"                        # thread | warp
    size = 16                             # bytes per record
    cap = 1                               # records per unit, or "dynamic" (count-sized)
    [map.<name>.regs]                     # field -> [type, ...], in record order

Both read into the same :class:`ProbeSpec`: a map is a saving probe whose datamodel is
``<level>:<size>`` (``:count`` when ``cap = "dynamic"``).
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from neutrino_ae.atomic import write_text
from neutrino_ae.errors import TraceFormatError
from neutrino_ae.formats.inputs import MiB, check_input
from neutrino_ae.formats.level import Level

_DATAMODEL_RE = re.compile(r"\s*(thread|warp)\s*:\s*(\d+)\s*(?::\s*(count)\s*)?", re.IGNORECASE)


@dataclass(frozen=True)
class Datamodel:
    level: Level
    bytes: int  # bytes per unit (per record slot for a count datamodel)
    count: bool = False

    def __str__(self) -> str:
        return f"{self.level.name.lower()}:{self.bytes}" + (":count" if self.count else "")


def parse_datamodel(text: str) -> Datamodel:
    """``"warp:16"`` / ``"thread:16"`` / ``"thread:16:count"`` → :class:`Datamodel` (ValueError if not)."""
    if not isinstance(text, str):
        raise ValueError(f"datamodel must be a string like 'warp:16', got {text!r}")
    m = _DATAMODEL_RE.fullmatch(text)
    if not m:
        raise ValueError(f"bad datamodel {text!r} (expected 'thread:<bytes>', 'warp:<bytes>' or "
                         "'thread:<bytes>:count')")
    nbytes = int(m.group(2))
    if nbytes == 0:
        raise ValueError(f"bad datamodel {text!r}: a saving probe saves at least one byte")
    return Datamodel(Level.parse(m.group(1)), nbytes, m.group(3) is not None)


@dataclass(frozen=True)
class ProbeSpec:
    names: list[str]  # every probe table, file order
    saving: list[str]  # probes with a datamodel, file order (= trace sections)
    datamodels: list[Datamodel]  # aligned with ``saving``
    analyze_hook: str | None  # artifact: analyze_hook; main: CALLBACK
    raw: dict[str, Any] = field(repr=False)
    compiled: bool = False  # main branch's compiled form ([probe.*] and [map.*] tables)

    @property
    def levels(self) -> list[Level]:
        return [d.level for d in self.datamodels]

    def datamodel(self, name: str) -> Datamodel:
        return self.datamodels[self.saving.index(name)]


def read_probe_toml(path: str | os.PathLike[str]) -> ProbeSpec:
    p = check_input(path, "probe.toml", 4 * MiB)
    raw_bytes = p.read_bytes()
    try:
        raw = tomllib.loads(raw_bytes.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise TraceFormatError(p, f"not UTF-8 text (byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise TraceFormatError(p, f"invalid TOML: {e}") from None
    if isinstance(raw.get("probe"), dict) and isinstance(raw.get("map"), dict):
        return _compiled_spec(p, raw)
    hook = raw.get("analyze_hook")
    if hook is not None and not isinstance(hook, str):
        raise TraceFormatError(p, f"analyze_hook must be a string, got {hook!r}")
    names, saving, models = [], [], []
    # tomllib keeps document order, which is the probes' section order in the traces.
    for name, body in raw.items():
        if not isinstance(body, dict):
            continue
        names.append(name)
        if "datamodel" not in body:
            continue
        try:
            models.append(parse_datamodel(body["datamodel"]))
        except ValueError as e:
            raise TraceFormatError(p, f"probe [{name}]: {e}") from None
        saving.append(name)
    if not names:
        raise TraceFormatError(p, "no probe table (expected e.g. [block_sched] with position/datamodel)")
    return ProbeSpec(names, saving, models, hook, raw)


def _compiled_spec(p: Path, raw: dict[str, Any]) -> ProbeSpec:
    """The main branch's compiled probe.toml: maps, in file order, are the trace sections."""
    hook = raw.get("CALLBACK")
    if hook is not None and not isinstance(hook, str):
        raise TraceFormatError(p, f"CALLBACK must be a string, got {hook!r}")
    names = [n for n, body in raw["probe"].items() if isinstance(body, dict)]
    saving, models = [], []
    for name, body in raw["map"].items():
        if not isinstance(body, dict):
            continue
        level, size, cap = body.get("level"), body.get("size"), body.get("cap", 1)
        if level not in ("thread", "warp") or not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise TraceFormatError(p, f"[map.{name}]: expected level = thread|warp and a positive size, got "
                                      f"level={level!r} size={size!r}")
        if cap != "dynamic" and (not isinstance(cap, int) or isinstance(cap, bool) or cap <= 0):
            raise TraceFormatError(p, f"[map.{name}]: cap must be a positive integer or \"dynamic\", got {cap!r}")
        per_unit = size if cap == "dynamic" else size * cap
        saving.append(name)
        models.append(Datamodel(Level.parse(level), per_unit, cap == "dynamic"))
    if not names and not saving:
        raise TraceFormatError(p, "no [probe.<name>] or [map.<name>] table")
    return ProbeSpec(names, saving, models, hook, raw, compiled=True)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        # One-line basic strings with escapes, as the CLI's toml.dumps writes them (JSON's string
        # escapes are valid TOML).
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to probe.toml")


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def format_probe_toml(probes: Mapping[str, Mapping[str, Any]], analyze_hook: str | None = None,
                      comment: str | None = None, header: Mapping[str, Any] | None = None) -> str:
    """TOML text of a probe file, shaped like the artifact CLI's ``toml.dumps`` of a tool file:
    top-level ``header`` keys (``author``, ``description``, ``dynamic``) in order, then
    ``analyze_hook``, then one table per probe. ``probes`` maps probe name → keys (``position``,
    ``datamodel``, ``before``, ``after``, ...); order is kept, so saving probes become sections in
    that order."""
    out: list[str] = []
    if comment:
        out += [f"# {line}" for line in comment.splitlines()]
    for key, value in (header or {}).items():
        out.append(f"{_toml_key(key)} = {_toml_value(value)}")
    if analyze_hook is not None:
        out.append(f"analyze_hook = {_toml_value(analyze_hook)}")
    for name, body in probes.items():
        if "datamodel" in body:
            parse_datamodel(body["datamodel"])  # refuse to write a file we could not read back
        out.append("")
        out.append(f"[{_toml_key(name)}]")
        out += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in body.items()]
    return "\n".join(out).lstrip("\n") + "\n"


def write_probe_toml(path: str | os.PathLike[str], probes: Mapping[str, Mapping[str, Any]],
                     analyze_hook: str | None = None, comment: str | None = None,
                     header: Mapping[str, Any] | None = None) -> Path:
    return write_text(path, format_probe_toml(probes, analyze_hook, comment, header))
