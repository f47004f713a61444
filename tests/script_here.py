"""``python <script> ARGS`` run in this process: the script file as ``__main__`` (``runpy``), ``sys.argv`` as the
interpreter sets it, stdout and stderr captured, and the exit status a process would have (``SystemExit``'s
code: none 0, an int itself, anything else printed to stderr and 1, as Python does). For the variations of a
case whose script is also started as a real process once, and for commands run many times over."""

from __future__ import annotations

import contextlib
import io
import runpy
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def script_here(script: str | Path, args: Sequence[str | Path] = (),
                cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python script args`` (in ``cwd`` when given) in this process, as a finished process would report it."""
    argv = [str(script), *(str(a) for a in args)]
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    with contextlib.chdir(cwd or Path.cwd()), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        sys.argv = argv
        try:
            runpy.run_path(str(script), run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
        finally:
            sys.argv = saved
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())
