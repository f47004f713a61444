"""The numba switch: optional compiled kernels, imported only when an input is large enough to pay for them.

numba is an optional extra (``pip install neutrino-ae[fast]``). Kernels are plain Python functions
decorated with :func:`jit`; they compile on their first call (numba is imported then, not when the
module defining them is imported) and are cached on disk. Every caller keeps a numpy path and asks
:func:`use_numba` with the size of its input which one to take; ``NEUTRINO_AE_PURE_NUMPY=1`` forces
numpy everywhere. Both paths give identical results (tests/sched/test_sched_kernels.py).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from collections.abc import Callable
from typing import Any

#: Environment switch that forces the pure-numpy path even where numba is installed.
PURE_NUMPY_ENV = "NEUTRINO_AE_PURE_NUMPY"


def _numba_cache_dir() -> str:
    """Where compiled kernels are cached: the user's cache, not the package's __pycache__ (which may
    be read-only, and would otherwise put build products into a source checkout)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "neutrino-ae", "numba")


def _numba_installed() -> bool:
    """Whether numba can be used: installed and not switched off. Finds the package without importing
    it (importing numba costs about 0.45 s and 100 MB; only the first compiled call pays it)."""
    if os.environ.get(PURE_NUMPY_ENV, "").strip() not in ("", "0"):
        return False
    return importlib.util.find_spec("numba") is not None


HAVE_NUMBA: bool = _numba_installed()

#: Inputs with fewer records than this take the numpy path even where numba is installed, unless numba
#: is already loaded: importing it and loading the cached kernels (~0.5 s, ~100 MB) costs a one-shot
#: command line more than numpy spends below this size (block_sched's metric, estimator and timeline
#: slots together: ~1 s per million blocks in numpy, ~0.1 s compiled).
NUMBA_MIN_ITEMS = 1 << 19


def use_numba(items: int) -> bool:
    """Whether to dispatch to the compiled kernels for an input of ``items`` records (read at call time,
    so tests can patch ``HAVE_NUMBA`` and ``NUMBA_MIN_ITEMS``)."""
    if not HAVE_NUMBA:
        return False
    return items >= NUMBA_MIN_ITEMS or "numba" in sys.modules


class _LazyKernel:
    """A kernel compiled by numba on its first call (numba is imported then, not at module import).

    ``py_func`` is the plain Python function either way, as on a numba dispatcher."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.py_func = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__
        self._dispatcher: Any = None

    def dispatcher(self) -> Any:
        if self._dispatcher is None:
            # numba reads NUMBA_CACHE_DIR once, when it is first imported; a value the user set wins.
            os.environ.setdefault("NUMBA_CACHE_DIR", _numba_cache_dir())
            import numba

            self._dispatcher = numba.njit(cache=True, nogil=True)(self._with_compiled_callees())
        return self._dispatcher

    def _with_compiled_callees(self) -> Callable[..., Any]:
        """``py_func``, but seeing the kernels it calls as numba dispatchers (numba compiles a call only
        to a dispatcher, and ours are made on first use)."""
        fn = self.py_func
        callees = {name: g.dispatcher() for name in fn.__code__.co_names
                   if isinstance(g := fn.__globals__.get(name), _LazyKernel)}
        if not callees:
            return fn
        bound = types.FunctionType(fn.__code__, {**fn.__globals__, **callees}, fn.__name__, fn.__defaults__,
                                   fn.__closure__)
        bound.__qualname__, bound.__module__, bound.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
        return bound

    def __call__(self, *args: Any) -> Any:
        return self.dispatcher()(*args)


def jit(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Compile ``fn`` with numba on its first call where numba is installed; else ``fn`` itself."""
    return _LazyKernel(fn) if HAVE_NUMBA else fn
