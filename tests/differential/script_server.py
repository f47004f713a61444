"""The artifact's Python scripts run many times in ONE interpreter, instead of one interpreter each.

A differential test runs the artifact's script on every trace hypothesis draws; a fresh ``python`` per
case spends most of its CPU starting Python and importing numpy, not in the script. :class:`ScriptServer`
starts one child interpreter (with the environment the scripts need, e.g. ``PYTHONPATH`` = the
artifact tree) and runs each script in it as ``python <script> <args>`` / ``python -c <code>`` would:
``__name__ == "__main__"``, ``sys.argv`` and ``sys.path[0]`` set as the interpreter sets them, in the
given working folder, stdout and stderr captured; an uncaught exception prints its traceback to stderr
and gives exit status 1, ``SystemExit`` its code. What comes back is a
:class:`subprocess.CompletedProcess`, as ``subprocess.run(..., capture_output=True, text=True)`` gives.

Only the artifact's scripts run here (the reference the tests compare against), never ours; the tests
that are about a real process (exit status, stderr of our command) still start one. Modules a script
imports stay imported between runs (the artifact's ``neutrino`` package, numpy): the scripts only read
them.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

SERVER = r'''
import contextlib, io, json, os, runpy, sys, traceback
channel = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)  # anything written to fd 1 below Python's sys.stdout goes to stderr, not into the replies
sys.stdin = open(os.devnull)
request_stream = os.fdopen(0, "r")
for request in request_stream:
    req = json.loads(request)
    out, err = io.StringIO(), io.StringIO()
    code = 0
    os.chdir(req["cwd"])
    saved_argv, saved_path0 = sys.argv, sys.path[0]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            if req["script"] is not None:
                sys.argv = [req["script"], *req["args"]]
                sys.path[0] = os.path.dirname(os.path.abspath(req["script"]))
                runpy.run_path(req["script"], run_name="__main__")
            else:
                sys.argv = ["-c", *req["args"]]
                sys.path[0] = ""
                exec(compile(req["code"], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            sys.argv = saved_argv
            sys.path[0] = saved_path0
    channel.write(json.dumps({"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}) + "\n")
    channel.flush()
'''


class ScriptServer:
    """One child interpreter that runs scripts on request; :meth:`close` ends it."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, env=self.env)
        return self.proc

    def run(self, script: Path | None = None, args: list[str] | tuple[str, ...] = (), *, code: str | None = None,
            cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``python <script> <args>`` (or ``python -c <code> <args>``) in ``cwd``, in the one interpreter."""
        assert (script is None) != (code is None)
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        request = {"script": None if script is None else str(script), "code": code, "args": [str(a) for a in args],
                   "cwd": str(cwd or Path.cwd())}
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        if not ready:
            self.close()
            raise subprocess.TimeoutExpired(["<script server>", request["script"] or "-c"], timeout)
        line = proc.stdout.readline()
        if not line:
            self.close()
            raise RuntimeError("the script server died (a script ended the interpreter?)")
        reply = json.loads(line)
        argv = [sys.executable, request["script"] or "-c", *request["args"]]
        return subprocess.CompletedProcess(argv, reply["returncode"], reply["stdout"], reply["stderr"])

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.stdin:
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            if self.proc.stdout:
                self.proc.stdout.close()
            self.proc = None
