"""``tensor.trace``: tensors seen by the TensorTrace helper, used to name DMAT tensors.

Lines, fields separated by exactly **two** spaces (single spaces occur inside shapes)::

    [call]  <ns>  <shape>  <nbytes>  <data_ptr>  <arg-name>  <func>  <file>:<line>
    [ret]  <ns>  <shape>  <nbytes>  <data_ptr>  <func>  <file>:<line>

Pointers are decimal here (hex in ``event.log``). Shapes are written ``(4, 32, 4096, 64)``; the
reader accepts any bracket style (``torch.Size([4, 32])``, ``[4, 32]``) and keeps the integers.
Unknown lines are skipped; a ``[call]``/``[ret]`` line with the wrong fields is an error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from neutrino_ae.atomic import write_text
from neutrino_ae.errors import TraceFormatError
from neutrino_ae.formats.inputs import MiB, read_text_input

SEP = "  "
COLUMNS = ["kind", "time_ns", "shape", "nbytes", "data_ptr", "arg_name", "func", "file", "line"]


@dataclass(frozen=True)
class TensorEvent:
    kind: str  # "call" or "ret"
    time_ns: int
    shape: tuple[int, ...]
    nbytes: int
    data_ptr: int
    func: str
    file: str
    line: int
    arg_name: str | None = None  # only for "call"


def _format_row(row: TensorEvent | Mapping[str, Any]) -> str:
    r = row if isinstance(row, Mapping) else row.__dict__
    kind = r["kind"]
    if kind not in ("call", "ret"):
        raise ValueError(f"tensor.trace row kind must be 'call' or 'ret', got {kind!r}")
    shape = "(" + ", ".join(str(int(d)) for d in r["shape"]) + ("," if len(r["shape"]) == 1 else "") + ")"
    fields = [f"[{kind}]", str(int(r["time_ns"])), shape, str(int(r["nbytes"])), str(int(r["data_ptr"]))]
    if kind == "call":
        name = r.get("arg_name")
        if not name:
            raise ValueError("a [call] row needs an arg_name")
        fields.append(str(name))
    fields += [str(r["func"]), f"{r['file']}:{int(r['line'])}"]
    for f in fields[1:]:
        if SEP in f or "\n" in f:
            raise ValueError(f"tensor.trace field {f!r} contains two spaces or a newline")
    return SEP.join(fields)


def format_tensor_trace(rows: Iterable[TensorEvent | Mapping[str, Any]]) -> str:
    return "".join(_format_row(r) + "\n" for r in rows)


def write_tensor_trace(path: str | os.PathLike[str], rows: Iterable[TensorEvent | Mapping[str, Any]]) -> Path:
    """Write rows (``TensorEvent`` or mappings with its field names) atomically."""
    return write_text(path, format_tensor_trace(rows))


_LINE_RE = re.compile(
    r"^\[(call|ret)\]  (\d+)  ([^\n]*?)  (\d+)  (\d+)  (?:([^\n]*?)  )?(\S[^\n]*?)  ([^\n]*):(\d+)[ \t\r]*$",
    re.MULTILINE,
)
_TAG_RE = re.compile(r"^\[(?:call|ret)\]", re.MULTILINE)


def read_tensor_trace(path: str | os.PathLike[str]) -> pd.DataFrame:
    """One row per ``[call]``/``[ret]`` line; columns :data:`COLUMNS` (``arg_name`` None for ret)."""
    p = Path(path)
    text = read_text_input(p, "tensor.trace", 1024 * MiB)
    matches = _LINE_RE.findall(text)
    tagged = len(_TAG_RE.findall(text))
    rows = [m for m in matches if (m[0] == "call") == (m[5] != "")]
    if len(rows) != tagged:
        bad = _first_bad_line(text)
        raise TraceFormatError(p, f"malformed tensor.trace line {bad[0]}: {bad[1][:100]!r}")
    df = pd.DataFrame(rows, columns=["kind", "time_ns", "shape", "nbytes", "data_ptr", "arg_name",
                                     "func", "file", "line"])
    for col in ("time_ns", "nbytes", "data_ptr", "line"):
        # data_ptr can exceed int64 in theory; keep Python ints via object only when needed.
        df[col] = pd.to_numeric(df[col], downcast=None) if len(df) else df[col].astype("int64")
    df["shape"] = [tuple(int(x) for x in re.findall(r"\d+", s)) for s in df["shape"]]
    df["arg_name"] = pd.Series([a or None for a in df["arg_name"]], index=df.index, dtype=object)
    return df[COLUMNS]


def _first_bad_line(text: str) -> tuple[int, str]:
    for i, line in enumerate(text.splitlines(), 1):
        if _TAG_RE.match(line):
            m = _LINE_RE.fullmatch(line)
            if not m or (m.group(1) == "call") != bool(m.group(6)):
                return i, line
    return 0, ""
