"""The end-to-end cases (:mod:`benchmarks.e2e`): per case, the command line of ours, the artifact's script
it is compared with, and its input, made (and cached) by the benchmark cases' generators in a child process.
"""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.cases import Case, e2egen, find_case, gen, select_cases
from benchmarks.measure import generate_in_child
from neutrino_ae.atomic import write_json

MB = 1_000_000
#: Part of the input cache keys: bump when an e2e input changes.
E2E_INPUT_VERSION = 1
# Targets of issue 10: our peak RSS at most this share of the artifact's.
BLOCK_SCHED_RSS_SHARE = 1.0
DMAT_RSS_SHARE = 1.0 / 3.0


@dataclass(frozen=True)
class E2ECase:
    name: str
    group: str
    title: str
    input_name: str  # cases with the same input share it (fig13a, fig13cd)
    base_blocks: int  # 1x
    smoke_blocks: int
    make: Callable[[Path, int, int], dict[str, Any]]  # (out, blocks, seed) -> meta
    files: Callable[[Path], list[Path]]  # the input files (page cache warmed; bytes reported)
    ours: Callable[[Path, Path], list[str]]  # (input dir, out dir) -> argv after the interpreter
    artifact: str | None = None  # "block_sched" | "dmat"
    rss_share: float | None = None  # target: our peak RSS <= share x artifact's
    count_word: str = "blocks"

    def blocks(self, mult: float, smoke: bool) -> int:
        return max(1, round((self.smoke_blocks if smoke else self.base_blocks) * mult))


def _make_block_sched(out: Path, blocks: int, seed: int) -> dict[str, Any]:
    # 4 warps x 16 bytes per block: the generator sizes its grid from MB
    return gen.make_block_sched(out, blocks * 64 / MB, seed, False)


def _make_warp_sched(out: Path, blocks: int, seed: int) -> dict[str, Any]:
    # 32 warps x 16 bytes per block
    return gen.make_warp_sched(out, blocks * 512 / MB, seed, False)


E2E_CASES: list[E2ECase] = [
    E2ECase("block_sched", "block_sched", "block_sched CLI (metric, per-SM table, timeline + per-SM figures)",
            "block_sched", 32768, 1024, _make_block_sched, gen.bin_files,
            lambda inp, out: ["block_sched/block_sched.py", str(inp / "trace.bin"), "--out", str(out)],
            artifact="block_sched", rss_share=BLOCK_SCHED_RSS_SHARE),
    E2ECase("dmat", "dmat", "DMAT CLI: raw .bin -> .dmat -> tensor naming -> PNG",
            "dmat_random", 64, 2, e2egen.make_dmat_random, e2egen.dmat_random_files,
            lambda inp, out: ["dmat/dmat.py", str(e2egen.dmat_random_result(inp)), "--out", str(out)],
            artifact="dmat", rss_share=DMAT_RSS_SHARE, count_word="blocks of 1 MiB"),
    E2ECase("fig13a", "warp_sched", "Fig. 13a warp timeline CLI", "warp_sched", 668, 236, _make_warp_sched,
            gen.bin_files, lambda inp, out: ["warp_sched/fig13a.py", str(inp / "trace.bin"), "--out", str(out)]),
    E2ECase("fig13cd", "warp_sched", "Fig. 13c/d active warps, busy SMs and tail CLI", "warp_sched", 668, 236,
            _make_warp_sched, gen.bin_files,
            lambda inp, out: ["warp_sched/fig13cd.py", str(inp / "trace.bin"), "--out", str(out)]),
]


def expand_only(only: str | None) -> list[E2ECase]:
    return select_cases(E2E_CASES, only)


def input_case(case: E2ECase) -> Case:
    """The kernel benchmarks' cached-input machinery (``Case.ensure_input``) for an e2e input; its
    ``size_mb`` argument carries the block count here."""
    def unused(*_: Any) -> Any:
        raise NotImplementedError

    return Case(f"e2e{E2E_INPUT_VERSION}_{case.input_name}", case.title,
                lambda out, blocks, seed, smoke: case.make(out, int(blocks), seed), unused, case.files,
                lambda smoke, meta: [], lambda blocks, smoke: f"{int(blocks)}blocks")


def generate_main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks.e2e --generate")
    ap.add_argument("--case", required=True)
    ap.add_argument("--cache", type=Path, required=True)
    ap.add_argument("--blocks", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--result", type=Path, required=True)
    args = ap.parse_args(argv)
    inp, meta = input_case(find_case(E2E_CASES, args.case)).ensure_input(args.cache, args.blocks, args.seed, False)
    write_json(args.result, {"input": str(inp), "meta": meta})
    return 0


GEN_LOCK = threading.Lock()


def ensure_input(case: E2ECase, blocks: int, args: argparse.Namespace) -> tuple[Path, dict[str, Any]]:
    """Make (or reuse) the input in a separate process, so the parent stays small (a child's
    ``ru_maxrss`` starts at the spawning parent's peak). ``--smoke`` inputs are tiny and their RSS
    figures are not results: they are made in this process (an interpreter start less per input)."""
    if args.smoke:
        with GEN_LOCK:
            return input_case(case).ensure_input(args.cache, blocks, args.seed, False)
    result = args.cache / f".e2e-generate-{case.name}-{blocks}-{os.getpid()}-{threading.get_ident()}.json"
    gen_args = ["--case", case.name, "--cache", str(args.cache), "--blocks", str(blocks), "--seed", str(args.seed)]
    # fig13a and fig13cd share an input: one generator at a time
    return generate_in_child("benchmarks.e2e", case.name, gen_args, result, GEN_LOCK)
