"""Where a test run's CPU goes, per test, module and folder, and two runs compared allowing for the machine.

    .venv/bin/python tools/test_cpu.py run cpu.jsonl [pytest args]   # make test's pytest line + the recorder
    .venv/bin/python tools/test_cpu.py show cpu.jsonl                # folders, the costliest modules and tests
    .venv/bin/python tools/test_cpu.py compare before.jsonl after.jsonl

A test's CPU is its pytest worker's own plus that of the processes it started and waited for
(``getrusage(RUSAGE_CHILDREN)``; a process left running is not counted), one JSON line per test. On a shared
2-core VM the same code takes 10-20 % more or less CPU from one run to the next, more than most changes
save. ``compare`` therefore also gives the **speed index**: the CPU of the tests that start no process
and are in both runs, whose code a change to the processes leaves alone, and the totals divided by it. It
is an estimate: two pairs of the same two commits gave x0.972 and x1.045, so only a change larger than
about 5 % shows (issue 38).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
OUT_ENV = "NEUTRINO_AE_TEST_CPU_OUT"


def _cpu() -> tuple[float, float]:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """The recorder (``-p test_cpu`` with this folder on PYTHONPATH): setup, call and teardown of one test."""
    own, kids, start = *_cpu(), time.perf_counter()
    yield
    own2, kids2 = _cpu()
    with open(os.environ[OUT_ENV], "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": item.nodeid, "self": own2 - own, "children": kids2 - kids,
                             "wall": time.perf_counter() - start,
                             "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}) + "\n")


def load(path: Path) -> dict[str, dict[str, Any]]:
    """A run's records by test id."""
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows[row["id"]] = row
    return rows


def cpu(row: dict[str, Any]) -> float:
    return row["self"] + row["children"]


def by(rows: dict[str, dict[str, Any]], key) -> collections.Counter:
    total: collections.Counter = collections.Counter()
    for row in rows.values():
        total[key(row["id"])] += cpu(row)
    return total


def module(test_id: str) -> str:
    return test_id.split("::", 1)[0]


def folder(test_id: str) -> str:
    return str(Path(module(test_id)).parent)


def speed_index(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> tuple[int, float, float]:
    """(tests, CPU before, CPU after) of the tests in both runs that started no process in either and took
    at least 0.1 CPU-s (shorter ones are mostly timer noise)."""
    same = [t for t in before.keys() & after.keys()
            if before[t]["children"] == 0 == after[t]["children"] and min(before[t]["self"], after[t]["self"]) >= 0.1]
    return len(same), sum(before[t]["self"] for t in same), sum(after[t]["self"] for t in same)


def show(rows: dict[str, dict[str, Any]], top: int = 25) -> str:
    workers: collections.Counter = collections.Counter()
    for row in rows.values():
        workers[row["worker"]] += row["wall"]
    lines = [f"{len(rows)} tests, {sum(map(cpu, rows.values())):.0f} CPU-s "
             f"({sum(r['self'] for r in rows.values()):.0f} in pytest, the rest in the processes tests started); "
             "wall inside tests per worker: " + ", ".join(f"{w} {s:.0f} s" for w, s in sorted(workers.items())),
             "", "CPU-s  folder"]
    lines += [f"{s:6.1f}  {name}" for name, s in by(rows, folder).most_common()]
    lines += ["", "CPU-s  module"] + [f"{s:6.1f}  {name}" for name, s in by(rows, module).most_common(top)]
    lines += ["", "CPU-s  test (setup included: a shared fixture counts where it is first built)"]
    lines += [f"{cpu(r):6.1f}  {r['id']}" for r in sorted(rows.values(), key=cpu, reverse=True)[:top]]
    return "\n".join(lines)


def compare(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]], top: int = 20) -> str:
    n, b_ref, a_ref = speed_index(before, after)
    speed = a_ref / b_ref if b_ref else 1.0
    b_all, a_all = sum(map(cpu, before.values())), sum(map(cpu, after.values()))
    lines = [f"speed index: {n} tests that start no process took {b_ref:.1f} -> {a_ref:.1f} CPU-s (x{speed:.3f}: "
             "the machine's speed, not the change)",
             f"all tests: {b_all:.0f} -> {a_all:.0f} CPU-s (x{a_all / b_all:.3f}); allowing for the speed index "
             f"x{a_all / b_all / speed:.3f}", "", "before   after  after/speed  module"]
    b_mod, a_mod = by(before, module), by(after, module)
    for name in sorted(b_mod.keys() | a_mod.keys(), key=lambda m: -abs(a_mod[m] / speed - b_mod[m]))[:top]:
        lines.append(f"{b_mod[name]:6.1f}  {a_mod[name]:6.1f}  {a_mod[name] / speed:11.1f}  {name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run pytest (make test's arguments unless given) recording each test's CPU")
    run.add_argument("out", type=Path, help="the JSON-lines file to write (replaced)")
    run.add_argument("pytest_args", nargs=argparse.REMAINDER)
    sub.add_parser("show", help="the tables of one run").add_argument("run", type=Path)
    cmp = sub.add_parser("compare", help="two runs, allowing for the machine's speed")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "run":
        from readme_timings import TEST  # make test's pytest line (tests/run/test_readme.py holds it to the Makefile)

        args.out.unlink(missing_ok=True)
        args.out.touch()
        env = {**os.environ, OUT_ENV: str(args.out.resolve()),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))}
        code = subprocess.call([sys.executable, "-m", "pytest", "-p", "test_cpu", *(args.pytest_args or TEST[2:])],
                               cwd=REPO, env=env)
        print(show(load(args.out)))
        return code
    if args.cmd == "show":
        print(show(load(args.run)))
    else:
        print(compare(load(args.before), load(args.after)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
