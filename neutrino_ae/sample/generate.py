"""Build a whole sample bundle: every section into a temporary sibling of ``out``, then one rename.

Each section folder writes its own part (``SECTION.sample`` -> ``<folder>/sample.py:build(root,
ctx)``) from the execution model in this package; :class:`SampleConfig` holds the model's
parameters for every section, so they are documented and stored in ``bundle.json`` in one place.

Randomness: one ``numpy.random.Generator(PCG64)`` per section, from ``SeedSequence(seed).spawn``
in the registry's order (DMAT spawns one per figure from its ``ctx.seed``), so sections are
independent and the same seed gives a byte-identical bundle. Nothing time-dependent is written.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from neutrino_ae.bundle.manifest import SAMPLE, write_manifest
from neutrino_ae.errors import InputError
from neutrino_ae.sample.attention import KERNELS as DMAT_KERNELS
from neutrino_ae.sample.attention import AttnShape, DmatParams
from neutrino_ae.sample.blocksched import BlockSchedParams
from neutrino_ae.sample.catalog import table2_kernels
from neutrino_ae.sample.costs import CostModel, OverheadParams
from neutrino_ae.sample.device import Device
from neutrino_ae.sample.host import HostModel
from neutrino_ae.sample.maxmem import models as maxmem_models
from neutrino_ae.sample.warps import WarpSchedParams

GENERATOR_VERSION = "1.0.0"
SCALES = ("tiny", "small", "paper")
Bar = Callable[[Iterable[Any], int, str], Iterable[Any]]


@dataclass(frozen=True)
class SampleConfig:
    scale: str
    device: Device = field(default_factory=Device)
    host: HostModel = field(default_factory=HostModel)
    block_sched: BlockSchedParams = field(default_factory=lambda: BlockSchedParams(numel=4096 * 512))
    dmat: DmatParams = field(default_factory=lambda: DmatParams(AttnShape(1, 8, 512, 64), write_raw=True))
    warp_sched: WarpSchedParams = field(default_factory=WarpSchedParams)
    costs: CostModel = field(default_factory=CostModel)
    overhead: OverheadParams = field(default_factory=OverheadParams)

    def model_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["dmat"]["kernels"] = {fig: k.to_dict() for fig, k in DMAT_KERNELS.items()}
        d["kernel_overhead_kernels"] = [k.to_dict() for k in table2_kernels()]
        d["max_mem_models"] = {m: [{"name": s.name, "weights": s.weights, "input_bytes": s.input_bytes,
                                    "launches": [asdict(x) for x in s.launches]} for s in subs]
                               for m, subs in maxmem_models().items()}
        return d


def config_for(scale: str) -> SampleConfig:
    """Scale presets: ``small`` (default: 4096 fill blocks, attention (1, 8, 512, 64) with raw
    traces), ``tiny`` (tests), ``paper`` (32768 blocks, attention (4, 32, 4096, 64), streamed)."""
    if scale == "small":
        return SampleConfig("small")
    if scale == "tiny":
        return SampleConfig("tiny", block_sched=BlockSchedParams(numel=1024 * 512),
                            dmat=DmatParams(AttnShape(1, 2, 256, 64), write_raw=True),
                            warp_sched=WarpSchedParams(full_waves=1, tail_full_waves=2),
                            overhead=OverheadParams(launches_per_kernel=3, failed_launch=("gather", "dmat", 1)))
    if scale == "paper":
        return SampleConfig("paper", block_sched=BlockSchedParams(numel=4096 * 4096),
                            dmat=DmatParams(AttnShape(4, 32, 4096, 64), write_raw=False, blocks_per_chunk=16))
    raise ValueError(f"unknown scale {scale!r} (choose from {', '.join(SCALES)})")


@dataclass
class SampleContext:
    """What a section's sample writer gets besides the bundle root."""

    cfg: SampleConfig
    seed: np.random.SeedSequence  # the section's own seed sequence (spawn more from it if needed)
    bar: Bar  # progress wrapper: bar(iterable, total, description)
    rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        self.rng = generator(self.seed)


def generator(ss: np.random.SeedSequence) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(ss))


def section_seeds(seed: int, names: tuple[str, ...]) -> dict[str, np.random.SeedSequence]:
    """Child ``i`` of ``SeedSequence(seed)`` for the ``i``-th section: adding a section at the end
    leaves the others' data unchanged."""
    return dict(zip(names, np.random.SeedSequence(seed).spawn(len(names)), strict=True))


def _bar_factory(progress: bool):
    if not progress:
        return lambda it, total, desc: it
    from tqdm import tqdm

    def bar(it: Iterable[Any], total: int, desc: str) -> Iterable[Any]:
        return tqdm(it, total=total, desc=desc, unit="chunk", leave=False)

    return bar


def _check_out(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise InputError(out, "exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise InputError(out, "exists and is not empty (use --force to replace it)")


def build_into(root: Path, cfg: SampleConfig, seed: int, progress: bool = False) -> dict[str, Any]:
    """Write every section that has a sample writer under ``root`` (which must exist); return the ground truth."""
    from neutrino_ae.run import registry

    sections = [s for s in registry.sections() if s.sample]
    seeds = section_seeds(seed, tuple(s.name for s in registry.sections()))
    bar = _bar_factory(progress)
    truth: dict[str, Any] = {}
    for section in bar(sections, len(sections), "sections"):
        truth[section.name] = section.entry("sample")(root, SampleContext(cfg, seeds[section.name], bar))
    return truth


def generate_bundle(out: str | os.PathLike[str], scale: str = "small", seed: int = 0, progress: bool = True,
                    force: bool = False) -> Path:
    """Generate a sample bundle at ``out`` and return its path.

    The bundle is built in a temporary sibling directory and renamed into place only when complete,
    so a crash never leaves a half bundle at ``out``. An existing non-empty ``out`` is refused unless
    ``force``.
    """
    cfg = config_for(scale)
    out = Path(out)
    _check_out(out, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        truth = build_into(tmp, cfg, seed, progress)
        write_manifest(tmp, SAMPLE, generator_version=GENERATOR_VERSION, scale=scale, seed=int(seed),
                       model=cfg.model_dict(), ground_truth=truth)
        os.chmod(tmp, 0o755)
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.replace(out, old / "bundle")
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
        raise
    return out
