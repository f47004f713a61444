"""The notebooks' parameters, checked in one place: their names, types and ranges.

``neutrino-ae run`` checks what ``-p NAME VALUE`` gave before it creates a folder, a lock or a log
(:func:`check_parameters`, a :class:`UsageError`: one ``error:`` line, exit 2), and each notebook's
set-up cell checks its values with the same rules (:func:`problem`: one ``NotebookInputError`` line),
so a Jupyter run and a batch run refuse the same values with the same words. A value of the wrong
type (``-p output_dir 5``, a float, a list, a dict, a bool) and an integer out of range (a ``seed``
numpy or ``bundle.json`` cannot hold, ``workers`` or ``repeats`` no machine has, an infinite
``timeout``) are refused by name; what the value means (a bundle word, a section name) is the
notebook's to check."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import Any

from neutrino_ae.bundle.manifest import MAX_SEED
from neutrino_ae.errors import UsageError

#: Most section workers a run starts (a machine with more cores gains nothing: six sections).
MAX_WORKERS = 64
#: Most runs per measurement (dynamic ``repeats``): a thousand GPU runs of one workload is already days.
MAX_REPEATS = 1000
#: Longest collection command (dynamic ``timeout``, seconds): a week; beyond it a run is a hang.
MAX_TIMEOUT_S = 7 * 24 * 3600.0

Rule = tuple[Callable[[Any], bool], str]


def _text(v: Any) -> bool:
    return isinstance(v, str | os.PathLike)


def _nonempty(v: Any) -> bool:
    return _text(v) and bool(os.fspath(v).strip())


def _whole(low: int, high: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


def _seconds(v: Any) -> bool:
    return (isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            and 0 < v <= MAX_TIMEOUT_S)


def _sections(v: Any) -> bool:
    return v is None or isinstance(v, str) or (isinstance(v, list | tuple) and all(isinstance(s, str) for s in v))


def _flag(v: Any) -> bool:
    return isinstance(v, bool)


def _collect_args(v: Any) -> bool:
    return v is None or (isinstance(v, dict) and all(
        isinstance(k, str) and isinstance(a, list | tuple) and all(isinstance(s, str) for s in a)
        for k, a in v.items()))


_PATH = (_nonempty, "a path (a non-empty string)")
_MAYBE_PATH = (_text, "a path or an empty string")
_STRING = (_text, "a string")
_SECTIONS = (_sections, 'a list of section names or a comma-separated string (e.g. "dmat,max_mem")')
_FLAG = (_flag, "True or False")

#: Each notebook's parameters (its ``parameters`` cell) and what each must be.
RULES: dict[str, dict[str, Rule]] = {
    "static": {
        "bundle": (_nonempty, 'a string: "auto", "paper", "sample" or the path of a trace.zip'),
        "trace_root": _MAYBE_PATH,
        "bundle_url": _STRING,
        "bundle_sha256": _STRING,
        "sections": _SECTIONS,
        "output_dir": _PATH,
        "sample_scale": (lambda v: v in ("small", "paper"), '"small" or "paper"'),
        "seed": (_whole(0, MAX_SEED), f"a whole number from 0 to {MAX_SEED} (2**63 - 1)"),
        "force": _FLAG,
        "workers": (lambda v: v is None or _whole(0, MAX_WORKERS)(v), f"a whole number from 0 to {MAX_WORKERS}"),
    },
    "dynamic": {
        "sections": _SECTIONS,
        "output_dir": _PATH,
        "trace_root": _PATH,
        "neutrino": (_nonempty, "the name or path of the Neutrino CLI (a non-empty string)"),
        "repeats": (_whole(1, MAX_REPEATS), f"a whole number from 1 to {MAX_REPEATS}"),
        "collect": _FLAG,
        "bundle": (_text, 'a string: "", "sample", "paper" or a folder'),
        "timeout": (_seconds, f"a number of seconds above 0, at most {MAX_TIMEOUT_S:.0f} (a week)"),
        "collect_args": (_collect_args,
                         'a map of section names to lists of strings, e.g. {"max_mem": ["--models", "x"]}'),
        "strict": _FLAG,
        "workloads": (lambda v: v in ("auto", "paper", "ptx"), '"auto", "paper" or "ptx"'),
    },
}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def problem(notebook: str, name: str, value: Any) -> str | None:
    """Why ``value`` cannot be parameter ``name`` of ``notebook`` (one line), or None when it can (or the
    notebook has no such rule: a notebook of the user's own, ``--notebook``)."""
    rule = RULES.get(notebook, {}).get(name)
    if rule is None:
        return None
    ok, what = rule
    try:
        good = bool(ok(value))
    except (TypeError, ValueError):
        good = False
    return None if good else f"{name} must be {what}, not {type(value).__name__} {_shown(value)}"


def check_parameters(notebook: str, params: Mapping[str, Any], known_names: bool = True) -> None:
    """Refuse the first parameter of ``params`` that ``notebook`` cannot take, or (``known_names``) a name
    it does not have (a typo would otherwise be injected and ignored): :class:`UsageError`, one line, exit 2."""
    rules = RULES.get(notebook)
    if rules is None:
        return
    for name, value in params.items():
        if name not in rules and known_names:
            raise UsageError(f"-p {name}: {notebook}.ipynb has no parameter {name!r}; its parameters: "
                             f"{', '.join(rules)}")
        why = problem(notebook, name, value)
        if why is not None:
            raise UsageError(f"-p {why}")
