"""Build a whole sample bundle: every section into a temporary sibling of ``out``, then one rename.

Each section folder writes its own part (``SECTION.sample`` -> ``<folder>/sample.py:build(root,
ctx)``) from its own sample model (``<folder>/sample_model.py``) and the shared one in this package.
:class:`SampleConfig` holds only what sections share (device, host, probe costs) at one scale; a
section derives its own parameters from ``ctx.scale`` and puts them in ``ctx.model``, so every
parameter still ends up in ``bundle.json``'s ``model`` without this package naming a section.

Randomness: one ``numpy.random.Generator(PCG64)`` per section, from ``SeedSequence(seed).spawn``
in the registry's order (DMAT spawns one per figure from its ``ctx.seed``), so sections are
independent and the same seed gives a byte-identical bundle. Nothing time-dependent is written.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from neutrino_ae.bundle.manifest import SAMPLE, write_manifest
from neutrino_ae.errors import InputError, NeutrinoAEError
from neutrino_ae.logs import progress as progress_bar
from neutrino_ae.sample.costs import CostModel
from neutrino_ae.sample.device import Device
from neutrino_ae.sample.host import HostModel

GENERATOR_VERSION = "1.0.0"
SCALES = ("tiny", "small", "paper")
Bar = Callable[[Iterable[Any], int, str], Iterable[Any]]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SampleConfig:
    """The model parameters several sections share, at one scale: the device, the host-side costs
    and the probe cost model. A section's own parameters belong to its ``sample.py``."""

    scale: str
    device: Device = field(default_factory=Device)
    host: HostModel = field(default_factory=HostModel)
    costs: CostModel = field(default_factory=CostModel)

    def model_dict(self) -> dict[str, Any]:
        return asdict(self)


def config_for(scale: str) -> SampleConfig:
    """The shared parameters at ``scale``: ``tiny`` (tests), ``small`` (default) or ``paper``
    (paper launch sizes). What a scale changes is each section's business (its ``sample.py``)."""
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r} (choose from {', '.join(SCALES)})")
    return SampleConfig(scale)


@dataclass
class SampleContext:
    """What a section's sample writer gets besides the bundle root."""

    cfg: SampleConfig
    seed: np.random.SeedSequence  # the section's own seed sequence (spawn more from it if needed)
    bar: Bar  # progress wrapper: bar(iterable, total, description)
    rng: np.random.Generator = field(init=False)
    #: The section's own model parameters, as JSON-able data (e.g. ``dataclasses.asdict`` of its
    #: parameters): merged into ``bundle.json``'s ``model``; keys must not clash with another's.
    model: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = generator(self.seed)

    @property
    def scale(self) -> str:
        return self.cfg.scale


class BuiltSample(NamedTuple):
    """What :func:`build_into` wrote: the model parameters (shared, then each section's) and the
    ground truth by section (``bundle.json``'s ``model`` and ``ground_truth``)."""

    model: dict[str, Any]
    ground_truth: dict[str, Any]


def generator(ss: np.random.SeedSequence) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(ss))


def section_seeds(seed: int, names: tuple[str, ...]) -> dict[str, np.random.SeedSequence]:
    """Child ``i`` of ``SeedSequence(seed)`` for the ``i``-th section: adding a section at the end
    leaves the others' data unchanged."""
    return dict(zip(names, np.random.SeedSequence(seed).spawn(len(names)), strict=True))


def _bar_factory(progress: bool) -> Bar:
    """A progress bar per long step (neutrino_ae.logs.progress: hidden by -q, off the terminal)."""
    if not progress:
        return lambda it, total, desc: it

    def bar(it: Iterable[Any], total: int, desc: str) -> Iterable[Any]:
        return progress_bar(it, total=total, desc=desc, unit="chunk")

    return bar


def _check_out(out: Path, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise InputError(out, "exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise InputError(out, "exists and is not empty (use --force to replace it)")


def build_into(root: Path, cfg: SampleConfig, seed: int, progress: bool = False) -> BuiltSample:
    """Write every section that has a sample writer under ``root`` (which must exist); return the
    model parameters and the ground truth."""
    from neutrino_ae.report.section import registry

    sections = [s for s in registry.sections() if s.sample]
    seeds = section_seeds(seed, tuple(s.name for s in registry.sections()))
    bar = _bar_factory(progress)
    model = cfg.model_dict()
    truth: dict[str, Any] = {}
    for section in bar(sections, len(sections), "sections"):
        start = time.perf_counter()
        ctx = SampleContext(cfg, seeds[section.name], bar)
        truth[section.name] = section.entry("sample")(root, ctx)
        log.debug("sample: %s written in %.2f s", section.name, time.perf_counter() - start)
        clash = sorted(model.keys() & ctx.model.keys())
        if clash:
            raise NeutrinoAEError(f"section {section.name}: sample model key(s) {', '.join(clash)} already taken")
        model.update(ctx.model)
    return BuiltSample(model, truth)


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
    start = time.perf_counter()
    log.info("generating the synthetic sample bundle (scale=%s, seed=%s)", scale, seed)
    try:
        built = build_into(tmp, cfg, seed, progress)
        write_manifest(tmp, SAMPLE, generator_version=GENERATOR_VERSION, scale=scale, seed=int(seed),
                       model=built.model, ground_truth=built.ground_truth)
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
    log.info("sample bundle built in %.1f s", time.perf_counter() - start)
    return out


def ensure_sample_bundle(trace_root: str | os.PathLike[str], scale: str = "small", seed: int = 0,
                         force: bool = False, progress: bool = True) -> Path:
    """The sample bundle at ``trace_root``, made by :func:`generate_bundle` unless one of this scale and
    seed is there (the reuse and replace rules are ``neutrino_ae.bundle.fetch.ensure_sample_bundle``'s)."""
    from neutrino_ae.bundle.fetch import ensure_sample_bundle as ensure

    return ensure(trace_root, scale=scale, seed=seed, force=force, progress=progress, generator=generate_bundle)
