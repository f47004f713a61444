"""Exception types whose message is one line naming the file and what is wrong with it."""

from __future__ import annotations

import os
from pathlib import Path


class NeutrinoAEError(Exception):
    """Base class: every error we raise on purpose. ``str(err)`` is a single readable line.

    ``exit_code`` is what a command line exits with when this error ends it.
    """

    exit_code = 2


class InputError(NeutrinoAEError):
    """An input file or directory is missing or unusable (not a format violation)."""

    def __init__(self, path: str | os.PathLike[str] | None, problem: str) -> None:
        self.path = None if path is None else os.fspath(path)
        self.problem = problem
        super().__init__(problem if self.path is None else f"{self.path}: {problem}")


class TraceFormatError(InputError):
    """A file exists but violates its format (truncated, impossible header, unknown layout, ...)."""


class BundleError(InputError):
    """A trace bundle cannot be fetched, verified or extracted."""


class NetworkError(BundleError):
    """The network or the server failed a download: no connection, no answer, server errors (5xx) or
    a misbehaving server, until the retries and deadlines ran out. Not bad input: the same command
    may work later (a partial download is kept and resumes)."""

    exit_code = 4


class EnvironmentProblem(NeutrinoAEError):
    """Something the GPU workloads need (PyTorch, Triton, libcuda) is missing."""


class NoGPUError(EnvironmentProblem):
    """No CUDA device is visible."""

    exit_code = 3


class ResourceError(NeutrinoAEError):
    """The machine has too little of something an input needs (memory): one line saying how much is
    needed and how much there is. Exit code 5, told apart from bad input (2)."""

    exit_code = 5

    def __init__(self, path: str | os.PathLike[str] | None, problem: str) -> None:
        self.path = None if path is None else os.fspath(path)
        self.problem = problem
        super().__init__(problem if self.path is None else f"{self.path}: {problem}")


#: The first half of every refusal: why a bundle's pickle is never loaded.
PICKLE_REFUSAL = "refusing to load a pickle: unpickling a downloaded file runs arbitrary code"


def refuse_pickle(path: str | os.PathLike[str], instead: str) -> None:
    """Raise, before anything reads it, if ``path`` is a pickle; ``instead`` says what to pass."""
    if Path(path).suffix.lower() in (".pkl", ".pickle"):
        raise InputError(path, f"{PICKLE_REFUSAL}. {instead}")


class UsageError(NeutrinoAEError, ValueError):
    """A bad argument value (a tolerance that is NaN, say); a ValueError too, for library callers."""


#: Every exit code of the command lines (``neutrino-ae``, the per-figure scripts), for ``--help``
#: and the README's section on the command line.
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (0, "success: the run's claims PASS (or are SKIPPED), compare found nothing moved"),
    (1, "a claim DIFFERS (run; --report-only exits 0), a notebook cell failed, a dynamic run "
        "collected nothing (--allow-skip exits 0), compare: a value moved or is missing on one side"),
    (2, "bad input or usage: an option, a path, a file, a parameter (one 'error:' line names it)"),
    (3, "no CUDA GPU visible (the GPU workloads' scripts)"),
    (4, "network or server failure: a download could not connect, got no answer, or kept failing "
        "(HTTP 5xx) after its retries; run again later, it resumes"),
    (5, "not enough memory for the input (one 'error:' line says how much is needed and which limit "
        "allows less: ulimit -v, the cgroup, the machine)"),
    (130, "interrupted (Ctrl-C, SIGINT)"),
    (143, "terminated (SIGTERM)"),
)


def exit_codes_text(indent: str = "  ") -> str:
    """:data:`EXIT_CODES` as the lines of a ``--help`` epilog."""
    return "exit codes:\n" + "\n".join(f"{indent}{code:<4} {what}" for code, what in EXIT_CODES)
