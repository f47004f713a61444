"""The frame of a benchmark run, shared by :mod:`benchmarks.bench` and :mod:`benchmarks.e2e`: arguments
(a child's entry point, or the run's options and cases), one case's failure kept from hiding the
others', targets judged PASS/MISS, and the results JSON with its closing lines.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from benchmarks.cases import Target
from benchmarks.measure import REPO_ROOT
from neutrino_ae.atomic import write_json

DEFAULT_CACHE = REPO_ROOT / "benchmarks" / "cache"

C = TypeVar("C")  # a benchmark case (benchmarks.cases.Case or benchmarks.e2e_cases.E2ECase)


def target_row(t: Target, values: dict[str, float]) -> dict[str, Any]:
    got = values.get(t.metric)
    ok = got is not None and (got >= t.value if t.op == ">=" else got <= t.value)
    # How far off, as a factor > 1 when missed: "needs 2.3x" reads the same for every metric.
    if got is None or got == 0:
        factor = None
    elif t.op == ">=":
        factor = t.value / got
    else:
        factor = got / t.value
    return {"metric": t.metric, "op": t.op, "value": t.value, "measured": got, "pass": bool(ok),
            "miss_factor": None if ok else factor, "label": t.label}


def attempt(run: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any] | Exception:
    """``run(*args)``, or the exception it raised: one broken case must not hide the others' numbers."""
    try:
        return run(*args)
    except Exception as exc:  # noqa: BLE001 - reported as the case's failure
        return exc


def parse_run_args(argv: Sequence[str], parser: argparse.ArgumentParser,
                   entry_points: dict[str, Callable[[Sequence[str]], int]],
                   select: Callable[[str | None], list[C]],
                   check: Callable[[argparse.Namespace], None] | None = None,
                   ) -> tuple[argparse.Namespace, list[C]] | int:
    """The start of a benchmark ``main``: a child's entry point (``argv[0]`` in ``entry_points``) is run
    and its exit code returned; otherwise the arguments are parsed and checked (``--repeat``, ``--only``
    through ``select``, then ``check``, which raises ValueError with the message of a bad argument), and
    the cache folder is made. Returns (arguments, selected cases), or 2 after a usage error."""
    if argv[:1] and argv[0] in entry_points:
        return entry_points[argv[0]](argv[1:])
    args = parser.parse_args(argv)
    if args.repeat < 1:
        print("error: --repeat must be at least 1", file=sys.stderr)
        return 2
    try:
        selected = select(args.only)
        if check is not None:
            check(args)
    except (KeyError, ValueError) as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2
    args.cache = args.cache.resolve()
    args.cache.mkdir(parents=True, exist_ok=True)
    return args, selected


def collect(rows: Iterable[tuple[C, dict[str, Any] | Exception]], width: int,
            show: Callable[[dict[str, Any]], None] | None = None) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Split (case, row or exception) pairs, as they come, into result rows (each ``show``n) and failures."""
    results, failures = [], []
    for case, row in rows:
        if isinstance(row, Exception):
            failures.append({"case": case.name, "error": str(row)})
            print(f"{case.name:<{width}} FAILED: {row}", file=sys.stderr)
            continue
        results.append(row)
        if show is not None:
            show(row)
    return results, failures


def finish(prog: str, argv: Sequence[str], args: argparse.Namespace, schema: int, machine: dict[str, Any],
           results: list[dict[str, Any]], failures: list[dict[str, str]], misses: Sequence[str], *,
           run: dict[str, Any] | None = None, extra: dict[str, Any]) -> int:
    """Write the results JSON (with ``--json``) and print the closing lines; the exit code.

    The document holds the keys every benchmark writes, ``run`` (more about the run, after ``seed``)
    and ``extra`` (after ``loadavg_at_end``), then ``cases`` and ``failures``.
    """
    doc = {
        "schema": schema,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join([prog, *argv]),
        "smoke": bool(args.smoke),
        "repeat": args.repeat,
        "seed": args.seed,
        **(run or {}),
        "machine": machine,
        "loadavg_at_end": list(os.getloadavg()),
        **extra,
        "cases": results,
        "failures": failures,
    }
    if args.json is not None:
        write_json(args.json, doc)
        print(f"results: {args.json}")
    print(f"{len(results)} case(s), {len(failures)} failed, {len(misses)} target(s) missed")
    return 1 if failures else 0
