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
