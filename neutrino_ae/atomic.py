"""Atomic output: write to a temporary sibling, then rename, so no half-written file looks complete."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; it replaces ``path`` only if the block succeeds.

    The temporary name keeps the final suffix (``suffix`` overrides) so tools that pick a format
    from the extension, such as ``matplotlib.savefig``, behave as for the final name.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{final.stem}.tmp-", suffix=final.suffix if suffix is None else suffix, dir=final.parent
    )
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        # mkstemp creates 0600; give the result the permissions a plain open() would have.
        os.chmod(tmp_path, 0o666 & ~_umask())
        os.replace(tmp_path, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "wb", **kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary sibling of ``path`` for writing; rename it over ``path`` on success."""
    if not any(m in mode for m in "wax"):
        raise ValueError(f"atomic_open is for writing, got mode {mode!r}")
    with atomic_path(path) as tmp, open(tmp, mode.replace("x", "w").replace("a", "w"), **kwargs) as fh:
        yield fh
        fh.flush()
        os.fsync(fh.fileno())


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    with atomic_open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    return Path(path)


def write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    return write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(obj: Any) -> Any:
    # numpy scalars and arrays show up in results; convert without importing numpy eagerly.
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
