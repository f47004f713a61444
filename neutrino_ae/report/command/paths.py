"""Paths a user gives (a command-line option, a notebook parameter), checked before any work starts.

Each check ends in one :class:`~neutrino_ae.errors.InputError` line naming the path, the problem and
the option, never in an ``OSError``/``RuntimeError`` traceback from deep inside a run:

* :func:`user_path`: a symbolic-link loop, a name too long for the file system, a folder that cannot
  be searched or read, a file where a folder belongs on the way, a broken symbolic link, a name that
  is not UTF-8 (the notebooks, their parameters and run.log hold paths as UTF-8 text).
* :func:`output_folder`: the same, and a folder the suite must never write into: the file-system
  root, the home folder, the repository root and the repository's source folders (the package,
  a section's code folder, ``tests/``, ``tools/``, ``docs/`` ...). Folders the repository keeps for
  outputs (``results/``, ``traces/``) and new folders are fine.
* :func:`not_an_input`: an output that is one of the command's inputs (the same file by device and inode,
  so through a symbolic or a hard link too) or lies inside an input folder: writing it would replace or
  change what the command reads.
* :func:`outside_bundles`: a folder for results inside a trace bundle (at or below a folder holding
  ``bundle.json``): a file written there changes the bundle, which every run then refuses.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from neutrino_ae.errors import InputError, UsageError

#: Folders of the repository that hold code, tests or documents (besides any folder with a ``.py``).
SOURCE_FOLDERS = (".git", ".ci", ".venv", "benchmarks", "docs", "neutrino_ae", "tests", "tools")

_REASONS = {
    errno.ELOOP: "is a symbolic link loop (too many levels of symbolic links)",
    errno.ENAMETOOLONG: "is too long a name for the file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
}
_SHOWN = 160  # characters of a path shown in an error line; a longer one keeps its two ends


def shown(path: str | os.PathLike[str]) -> str:
    """``path`` for an error line: whole when short, else its start and end around ``...``."""
    text = os.fspath(path)
    return text if len(text) <= _SHOWN else f"{text[:100]}...{text[-50:]}"


def _reason(exc: OSError) -> str:
    return _REASONS.get(exc.errno or 0, exc.strerror or type(exc).__name__)


def user_path(value: str | os.PathLike[str], option: str, *, must_exist: bool = False,
              kind: str | None = None) -> Path:
    """``value`` as a :class:`Path` once the file system can use it; ``kind`` is ``"dir"`` or
    ``"file"`` for what an existing path must be. Raises InputError (exit 2) otherwise."""
    text = os.fspath(value)
    if not str(text).strip():
        raise UsageError(f"{option} must not be empty")
    if "\0" in str(text):
        raise InputError(shown(str(text).replace("\0", "\\0")), f"holds a NUL character ({option})")
    try:
        str(text).encode("utf-8")
    except UnicodeEncodeError:  # a name of bytes that are not UTF-8 (as surrogates): a notebook, a log cannot hold it
        escaped = str(text).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise InputError(shown(escaped), f"is not a UTF-8 name; rename it ({option})") from None
    path = Path(text)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.lexists(path):
            raise InputError(shown(path), f"is a broken symbolic link ({option})") from None
        if must_exist:
            raise InputError(shown(path), f"not found ({option})") from None
        _check_parent(path, option)
        return path
    except OSError as exc:
        raise InputError(shown(path), f"{_reason(exc)} ({option})") from None
    except ValueError as exc:  # an unencodable name
        raise InputError(shown(path), f"{exc} ({option})") from None
    if kind == "dir" and not stat.S_ISDIR(st.st_mode):
        raise InputError(shown(path), f"is not a folder ({option})")
    if kind == "file" and not stat.S_ISREG(st.st_mode):
        raise InputError(shown(path), f"is not a regular file ({option})")
    wanted = os.R_OK | (os.X_OK if stat.S_ISDIR(st.st_mode) else 0)
    if not os.access(path, wanted):
        raise InputError(shown(path), f"permission denied: cannot be read ({option})")
    return path


def missing_reason(path: str | os.PathLike[str], default: str) -> str:
    """Why ``path``, which ``Path.exists()`` or ``is_dir()`` called absent, cannot be used: a symbolic
    link loop, a name too long, no permission (they return False for those too), else ``default``."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return "is a broken symbolic link" if os.path.lexists(path) else default
    except OSError as exc:
        return _reason(exc)
    except ValueError:
        return default
    return default


def _check_parent(path: Path, option: str) -> None:
    """A path that does not exist yet: its nearest existing ancestor must be a folder."""
    for parent in path.absolute().parents:
        try:
            st = os.stat(parent)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise InputError(shown(path), f"{_reason(exc)} ({option})") from None
        if not stat.S_ISDIR(st.st_mode):
            raise InputError(shown(path), f"{parent} is a file, not a folder ({option})")
        return


def new_folder_parent(path: str | os.PathLike[str], option: str) -> None:
    """A folder the suite may create (a trace root): when it does not exist, its parent must (a typo in
    the parent, ``/nonexistent/dir``, is refused rather than created at ``/``). InputError (exit 2)."""
    path = Path(path)
    if not os.path.lexists(path) and not path.absolute().parent.is_dir():
        raise InputError(shown(path), f"its folder {shown(path.absolute().parent)} does not exist ({option}); "
                                      "create it first, or name a new folder inside an existing one")


def output_folder(value: str | os.PathLike[str], option: str) -> Path:
    """:func:`user_path` for a folder the suite writes into, refusing the places it must never write:
    the file-system root, the home folder, the repository root and its source folders."""
    path = user_path(value, option, kind="dir")
    problem = unsafe_output(path)
    if problem:
        raise InputError(shown(path), f"{problem}; {option} must name a folder for results, such as "
                                      "results/<name> or a new folder")
    if path.is_dir() and not os.access(path, os.W_OK | os.X_OK):
        raise InputError(shown(path), f"permission denied: cannot write there ({option})")
    return path


def outside_bundles(path: str | os.PathLike[str], option: str) -> None:
    """Refuse (InputError, exit 2) a folder to write results into that is a trace bundle or inside one,
    as ``neutrino-ae run`` refuses an ``output_dir`` inside its ``trace_root``."""
    from neutrino_ae.bundle.manifest import MANIFEST, find_bundle_root

    root = find_bundle_root(path)
    if root is not None:
        where = "is a trace bundle" if root == Path(path).resolve() else f"is inside the trace bundle {shown(root)}"
        raise InputError(shown(path), f"{where} (it holds {MANIFEST}): writing "
                                      f"there would change the bundle, which every run then refuses; {option} "
                                      "must name a folder outside it")


def _file_id(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def not_an_input(out: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]], option: str) -> None:
    """Refuse (InputError, exit 2) an output ``out`` (a file or a folder to write) that is one of ``inputs``
    or inside an input folder, compared on the real paths and on device and inode (so a symbolic link, a
    ``..`` detour or a hard link to an input is seen): writing there would replace or change an input."""
    out_real, out_id = Path(os.path.realpath(out)), _file_id(out)
    for given in inputs:
        real = Path(os.path.realpath(given))
        if out_id is not None and out_id == _file_id(given):
            raise InputError(shown(out), f"is the input {shown(given)} ({option}); writing it would replace the "
                                         "input: name another path")
        if not real.is_dir():
            continue
        if out_real.is_relative_to(real):
            raise InputError(shown(out), f"is inside the input folder {shown(given)} ({option}); writing there would "
                                         "change the input: name a path outside it")
        if out_id is not None and not os.path.isdir(out):
            for dirpath, _dirs, files in os.walk(real):
                if any(_file_id(os.path.join(dirpath, f)) == out_id for f in files):
                    raise InputError(shown(out), f"is a link to an input file in {shown(given)} ({option}); writing "
                                                 "it would replace the input: name another path")


def unsafe_output(path: str | os.PathLike[str]) -> str | None:
    """Why writing results into ``path`` would be wrong, or None when it is fine."""
    real = Path(os.path.realpath(path))
    if real == Path(real.anchor):
        return "is the root of the file system"
    try:
        home = Path(os.path.realpath(Path.home()))
    except (RuntimeError, KeyError):  # no home folder known
        home = None
    if real == home:
        return "is your home folder"
    root = source_root()
    if root is None or not real.is_relative_to(root):
        return None
    if real == root:
        return "is the repository root (the source tree)"
    top = root / real.relative_to(root).parts[0]
    if is_source_folder(top):
        return f"is inside {top.name}/, a source folder of the repository {root}"
    return None


def is_source_folder(folder: Path) -> bool:
    """A top-level folder of the repository that holds code, tests or documents."""
    if folder.name in SOURCE_FOLDERS:
        return True
    try:
        return folder.is_dir() and any(p.suffix == ".py" for p in folder.iterdir())
    except OSError:
        return False


def source_root() -> Path | None:
    """The source checkout holding this package (a ``pyproject.toml`` beside it), if it is one."""
    root = Path(os.path.realpath(__file__)).parents[3]
    return root if (root / "pyproject.toml").is_file() else None
