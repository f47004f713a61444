"""The benchmark cases: how each input is made (and cached), what is timed, and the targets.

A case's input lives in ``<cache>/<name>-<size>-s<seed>-g<GEN_VERSION>/``; ``meta.json`` is written
last, so a directory without it is an interrupted generation and is made again.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from neutrino_ae.atomic import write_json

C = TypeVar("C")  # a benchmark case: has .name and .group

#: Bump when a generator changes what it writes: old cache entries are then ignored.
GEN_VERSION = 2
MB = 1_000_000


@dataclass(frozen=True)
class Target:
    metric: str  # "ratio" | "mb_per_s" | "seconds" | "peak_rss_mb"
    op: str  # ">=" | "<="
    value: float
    label: str


@dataclass(frozen=True)
class Case:
    name: str
    title: str
    #: writes the input into a fresh directory; returns metadata (counts, model parameters)
    make: Callable[[Path, float | None, int, bool], dict[str, Any]]
    #: the timed work: (input dir, scratch dir, smoke) -> small info dict
    run: Callable[[Path, Path, bool], dict[str, Any] | None]
    #: files whose bytes are "the trace": the baseline reads them, MB/s divides by them
    raw_files: Callable[[Path], list[Path]]
    targets_for: Callable[[bool, dict[str, Any]], list[Target]]
    size_key: Callable[[float | None, bool], str]
    group: str = ""
    max_repeat: int | None = None  # long end-to-end cases may cap the repeats
    aliases: tuple[str, ...] = field(default_factory=tuple)
    #: cache directory prefix (default: the case name); cases with the same input share it
    cache_name: str | None = None

    def repeat(self, requested: int, smoke: bool) -> int:
        if smoke or self.max_repeat is None:
            return requested
        return min(requested, self.max_repeat)

    def targets(self, smoke: bool, meta: dict[str, Any]) -> list[Target]:
        return self.targets_for(smoke, meta)

    def ensure_input(self, cache: Path, size_mb: float | None, seed: int, smoke: bool) -> tuple[Path, dict[str, Any]]:
        """The cached input directory for (case, size, seed), generated on first use."""
        from benchmarks.cases import gen

        key = f"{self.cache_name or self.name}-{self.size_key(size_mb, smoke)}-s{seed}-g{GEN_VERSION}.{gen.MODEL_TAG}"
        final = cache / key
        meta_path = final / "meta.json"
        if meta_path.exists():
            meta = json.loads(meta_path.read_text())
            meta["cached"] = True
            return final, meta
        tmp = cache / f".{key}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        t0 = time.perf_counter()
        try:
            meta = self.make(tmp, size_mb, seed, smoke)
            meta = {"cache_key": key, "seed": seed, "generator_seconds": round(time.perf_counter() - t0, 3), **meta}
            write_json(tmp / "meta.json", meta)
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        meta["cached"] = False
        return final, meta


def _cases() -> list[Case]:
    from benchmarks.cases import gen, work

    def mb_key(default_mb: float, smoke_mb: float) -> Callable[[float | None, bool], str]:
        def key(size_mb: float | None, smoke: bool) -> str:
            mb = smoke_mb if smoke and size_mb is None else default_mb if size_mb is None else size_mb
            return f"{mb:g}MB"
        return key

    def ratio(value: float, what: str) -> Callable[[bool, dict[str, Any]], list[Target]]:
        return lambda smoke, meta: [Target("ratio", ">=", value, f"{what} >= {value:g}x raw-read throughput")]

    def dmat_targets(smoke: bool, meta: dict[str, Any]) -> list[Target]:
        return [Target("ratio", ">=", 0.05, "dmat .bin->.dmat->PNG >= 0.05x raw-read throughput"),
                Target("peak_rss_mb", "<=", 1500.0, "dmat peak RSS <= 1500 MB (target set for a 512 MB trace)")]

    def static_targets(limit: float) -> Callable[[bool, dict[str, Any]], list[Target]]:
        return lambda smoke, meta: [Target("seconds", "<=", limit, f"static.ipynb Run All < {limit:g} s")]

    return [
        Case("block_sched", "block_sched metric (artifact FIFO + slot reuse) on a warp-level trace",
             gen.make_block_sched, work.run_block_sched, gen.bin_files, ratio(0.25, "block_sched metric"),
             mb_key(gen.BLOCK_SCHED_DEFAULT_MB, gen.BLOCK_SCHED_SMOKE_MB)),
        Case("warp_sched", "warp_sched per-SM warp timelines on a warp-level trace",
             gen.make_warp_sched, work.run_warp_sched, gen.bin_files, ratio(0.25, "warp_sched timelines"),
             mb_key(gen.WARP_SCHED_DEFAULT_MB, gen.WARP_SCHED_SMOKE_MB)),
        Case("dmat", "DMAT raw .bin -> .dmat -> PNG", gen.make_dmat, work.run_dmat, gen.bin_files, dmat_targets,
             mb_key(gen.DMAT_DEFAULT_MB, gen.DMAT_SMOKE_MB)),
        Case("eventlog", "event.log parsing", gen.make_eventlog, work.run_eventlog, gen.eventlog_files,
             lambda smoke, meta: [Target("mb_per_s", ">=", 100.0, "event.log parsing >= 100 MB/s")],
             mb_key(gen.EVENTLOG_DEFAULT_MB, gen.EVENTLOG_SMOKE_MB)),
        Case("static_small", "static.ipynb Run All, small sample bundle", gen.make_bundle_small, work.run_static,
             gen.bundle_files, static_targets(60.0), lambda size_mb, smoke: "small", group="static",
             cache_name="sample_bundle"),
        Case("static_paper", "static.ipynb Run All, paper-scale sample bundle", gen.make_bundle_paper,
             work.run_static, gen.bundle_files, static_targets(15.0),  # issue 10's target
             lambda size_mb, smoke: "small" if smoke else "paper", group="static", max_repeat=1,
             cache_name="sample_bundle"),
    ]


CASES: list[Case] = _cases()


def find_case(cases: Sequence[C], name: str) -> C:
    """The case called ``name`` in ``cases`` (this module's or the end-to-end ones)."""
    for case in cases:
        if case.name == name:
            return case
    raise KeyError(f"unknown benchmark case {name!r}")


def select_cases(cases: Sequence[C], only: str | None) -> list[C]:
    """``--only a,b`` → the cases in list order; a group name (``static``) selects its members."""
    if not only:
        return list(cases)
    wanted = {w.strip() for w in only.split(",") if w.strip()}
    known = {c.name for c in cases} | {c.group for c in cases if c.group}
    unknown = sorted(wanted - known)
    if unknown:
        raise KeyError(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return [c for c in cases if c.name in wanted or (c.group and c.group in wanted)]


def case_by_name(name: str) -> Case:
    return find_case(CASES, name)


def expand_only(only: str | None) -> list[Case]:
    return select_cases(CASES, only)
