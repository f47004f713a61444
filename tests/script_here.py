"""A section folder's artifact-compatible script (``python <section>/<script>.py ARGS``) run in this process:
the script's own call, :func:`neutrino_ae.report.section.driver.run_script` of its file, with what it printed
and its exit code (a usage error's ``SystemExit`` included), as a finished process would give them. For the
variations of a case whose script is started as a real process once."""

from __future__ import annotations

import io
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from neutrino_ae.report.section.driver import run_script


def script_here(script: Path, args: Sequence[str | Path],
                flags: Mapping[str, Mapping[str, Any]] | None = None) -> subprocess.CompletedProcess[str]:
    """``python script args`` in this process (``flags``: the script's own options, as its file passes them)."""
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = run_script(str(script), argv, flags=flags)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    return subprocess.CompletedProcess([str(script), *argv], code, out.getvalue(), err.getvalue())
